package targets_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

func hyperConverged(namespace string) string {
	return "apiVersion: hco.kubevirt.io/v1\nkind: HyperConverged\nmetadata: {name: kubevirt-hyperconverged, namespace: " + namespace + "}\n"
}

func TestFindingTheHyperConverged(t *testing.T) {
	hcoCRD := crd(targets.HyperConverged.CRD, "v1beta1", "v1")
	cases := []struct {
		name string
		docs []string
		// found are the namespaces ListHyperConverged returns, in order.
		found []string
		// version is the API version they are read at.
		version string
		// findErr is the error FindHyperConverged returns ("" for none).
		findErr string
	}{
		{name: "when the CRD is not installed, it should find none",
			docs: nil},
		{name: "when there is none, it should find none",
			docs: []string{hcoCRD}},
		{name: "when there is one, it should find it at the best version served",
			docs: []string{hcoCRD, hyperConverged("openshift-cnv")}, found: []string{"openshift-cnv"}, version: "v1"},
		{name: "when the cluster serves only v1beta1, it should read it at v1beta1",
			docs:  []string{crd(targets.HyperConverged.CRD, "-v1", "v1beta1"), hyperConverged("openshift-cnv")},
			found: []string{"openshift-cnv"}, version: "v1beta1"},
		{name: "when there are two, it should list both by namespace, and finding the one should fail naming them",
			docs:  []string{hcoCRD, hyperConverged("openshift-cnv"), hyperConverged("kubevirt-hyperconverged")},
			found: []string{"kubevirt-hyperconverged", "openshift-cnv"}, version: "v1",
			findErr: "the cluster has 2 HyperConverged objects (kubevirt-hyperconverged/kubevirt-hyperconverged, " +
				"openshift-cnv/kubevirt-hyperconverged); OpenShift Virtualization supports exactly one: delete the extra ones"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := clusterOf(tc.docs...)
			list, err := targets.ListHyperConverged(context.Background(), c)
			g.Expect(err).NotTo(HaveOccurred())
			var namespaces []string
			for _, h := range list {
				namespaces = append(namespaces, h.Namespace())
				g.Expect(h.Fields.Version).To(Equal(tc.version))
			}
			g.Expect(namespaces).To(Equal(tc.found))

			one, err := targets.FindHyperConverged(context.Background(), c)
			switch {
			case tc.findErr != "":
				g.Expect(targets.IsPrerequisiteError(err)).To(BeTrue(), "got %v", err)
				g.Expect(err.Error()).To(Equal(tc.findErr))
			case len(tc.found) == 1:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(one.Describe()).To(Equal("HyperConverged " + tc.found[0] + "/kubevirt-hyperconverged"))
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(one).To(BeNil())
			}
		})
	}
}
