package targets_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// crd is a CRD of group example.com with versions, each "name" (served) or "-name" (not
// served).
func crd(name string, versions ...string) string {
	doc := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: " + name + "}\n" +
		"spec:\n  group: example.com\n  versions:\n"
	for _, v := range versions {
		served := "true"
		if v[0] == '-' {
			v, served = v[1:], "false"
		}
		doc += "  - {name: " + v + ", served: " + served + ", storage: false}\n"
	}
	return doc
}

func TestServedVersion(t *testing.T) {
	hco, descheduler := targets.HyperConverged, targets.KubeDescheduler
	cases := []struct {
		name string
		kind targets.Kind
		// crd is the kind's CRD; "" when it is not installed.
		crd  string
		want string
	}{
		{name: "when the HyperConverged CRD serves v1 and v1beta1, it should use v1",
			kind: hco, crd: crd(hco.CRD, "v1beta1", "v1"), want: "v1"},
		{name: "when the HyperConverged CRD serves only v1beta1, it should use v1beta1",
			kind: hco, crd: crd(hco.CRD, "-v1", "v1beta1"), want: "v1beta1"},
		{name: "when the HyperConverged CRD serves no version the operator knows, it should use none",
			kind: hco, crd: crd(hco.CRD, "-v1", "-v1beta1", "v2"), want: ""},
		{name: "when the KubeDescheduler CRD serves v1, it should use v1",
			kind: descheduler, crd: crd(descheduler.CRD, "v1beta1", "v1"), want: "v1"},
		{name: "when the KubeDescheduler CRD serves only another version, it should use none",
			kind: descheduler, crd: crd(descheduler.CRD, "-v1", "v1beta1"), want: ""},
		{name: "when the CRD is not installed, it should use none",
			kind: hco, want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := clusterOf()
			if tc.crd != "" {
				c = clusterOf(tc.crd)
			}
			got, err := tc.kind.ReadServedVersion(context.Background(), c)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestServesVersion(t *testing.T) {
	g := NewWithT(t)
	c := clusterOf(crd("things.example.com", "v1", "-v1beta1"))
	read, err := targets.Kind{CRD: "things.example.com"}.ReadCRD(context.Background(), c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(targets.ServesVersion(read, "v1")).To(BeTrue(), "served")
	g.Expect(targets.ServesVersion(read, "v1beta1")).To(BeFalse(), "defined but not served")
	g.Expect(targets.ServesVersion(read, "v2")).To(BeFalse(), "not defined")
}

func TestDeschedulerSchemaOfRefusesACRDThatDoesNotServeV1(t *testing.T) {
	g := NewWithT(t)
	c := clusterOf(crd(targets.KubeDescheduler.CRD, "-v1", "v1beta1"))
	_, err := targets.ReadDeschedulerSchema(context.Background(), c)
	g.Expect(targets.IsPrerequisiteError(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("does not serve v1"))
	g.Expect(err.Error()).To(ContainSubstring("upgrade the Kube Descheduler Operator"))

	_, err = targets.ReadDeschedulerSchema(context.Background(), clusterOf())
	g.Expect(targets.IsPrerequisiteError(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(Equal("the KubeDescheduler CRD is missing: install the Kube Descheduler Operator"))
}

func TestServesOnlyAVersionTheInstalledCRDServesWhileItIsNotBeingDeleted(t *testing.T) {
	things := targets.Kind{CRD: "things.example.com"}
	cases := []struct {
		name string
		// installed tells whether the CRD, serving v1 and defining v1beta1 unserved, is
		// installed; deleting whether it carries a deletionTimestamp.
		installed, deleting bool
		version             string
		want                bool
	}{
		{name: "when the CRD serves the version, it should be true", installed: true, version: "v1", want: true},
		{name: "when the CRD defines the version but does not serve it, it should be false", installed: true, version: "v1beta1"},
		{name: "when the CRD does not define the version, it should be false", installed: true, version: "v2"},
		{name: "when the CRD serves the version but is being deleted, it should be false", installed: true, deleting: true, version: "v1"},
		{name: "when the CRD is not installed, it should be false", version: "v1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := clusterOf()
			if tc.installed {
				c = clusterOf(crd(things.CRD, "v1", "-v1beta1"))
			}
			if tc.deleting {
				c.objects[0].SetDeletionTimestamp(&metav1.Time{Time: time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC)})
				c.objects[0].SetFinalizers([]string{"customresourcecleanup.apiextensions.k8s.io"})
			}
			got, err := things.Serves(context.Background(), c, tc.version)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestServesAndReadServedVersionReturnAReadErrorOtherThanNotFound(t *testing.T) {
	g := NewWithT(t)
	hco := targets.HyperConverged
	c := clusterOf(crd(hco.CRD, "v1beta1", "v1"))
	c.failing["CustomResourceDefinition"] = apierrors.NewForbidden(
		schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, hco.CRD, errors.New("RBAC denies get"))

	served, err := hco.Serves(context.Background(), c, "v1")
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(HavePrefix("read CRD " + hco.CRD + ": "))
	g.Expect(served).To(BeFalse())

	version, err := hco.ReadServedVersion(context.Background(), c)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(HavePrefix("read CRD " + hco.CRD + ": "))
	g.Expect(version).To(BeEmpty())
}
