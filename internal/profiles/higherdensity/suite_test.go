package higherdensity_test

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/higherdensity"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var ctx = context.Background()

func TestHigherDensity(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "virt-higher-density profile")
}

const profileName = string(advisorv1alpha1.ProfileVirtHigherDensity)

// The HyperConverged CRD a cluster runs.
type hcoCRD int

const (
	// projectCRD is test/crds/base/hyperconvergeds.yaml: v1 (storage) and v1beta1.
	projectCRD hcoCRD = iota
	// upstreamCRD is the upstream CRD as it is: v1 (storage) and v1beta1, both served.
	upstreamCRD
	// upstreamV1beta1Only is the upstream CRD of a release that predates v1: only
	// v1beta1, served and stored.
	upstreamV1beta1Only
)

// cluster is one real kube-apiserver and etcd (envtest) with this project's CRD, the
// MachineConfig CRDs and one HyperConverged CRD.
type cluster struct {
	c client.Client
	// version is the HyperConverged API version the cluster serves best.
	version string
}

func upstreamHyperConverged() *apiextensionsv1.CustomResourceDefinition {
	crd, err := testenv.ReadCRD(filepath.Join(testenv.UpstreamCRDs(), "hco.kubevirt.io", "hyperconvergeds.yaml"))
	Expect(err).NotTo(HaveOccurred())
	return crd
}

// onlyV1beta1 is crd without its v1 version, v1beta1 stored.
func onlyV1beta1(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	var kept []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1beta1" {
			v.Served, v.Storage = true, true
			kept = append(kept, v)
		}
	}
	Expect(kept).To(HaveLen(1), "the upstream CRD has a v1beta1 version")
	crd.Spec.Versions = kept
	return crd
}

// onCluster starts the control plane once for the enclosing Ordered container.
func onCluster(kind hcoCRD) *cluster {
	cl := &cluster{version: "v1"}
	BeforeAll(func() {
		base := func(name string) string { return filepath.Join(testenv.BaseCRDs, name) }
		dirs := []string{testenv.OwnCRDs, base("machineconfigs.yaml"), base("machineconfigpools.yaml")}
		var crds []*apiextensionsv1.CustomResourceDefinition
		switch kind {
		case projectCRD:
			dirs = append(dirs, base("hyperconvergeds.yaml"))
		case upstreamCRD:
			crds = append(crds, upstreamHyperConverged())
		case upstreamV1beta1Only:
			crds = append(crds, onlyV1beta1(upstreamHyperConverged()))
			cl.version = "v1beta1"
		}
		env, err := testenv.New(dirs...)
		Expect(err).NotTo(HaveOccurred())
		env.CRDs = crds
		cl.c = testenv.StartForContainer(ctx, env, "openshift-cnv", "kubevirt-hyperconverged")
	})
	return cl
}

// create creates obj (YAML) and deletes it again when the current spec ends.
func (cl *cluster) create(doc string) *unstructured.Unstructured {
	return testenv.CreateForSpec(ctx, cl.c, doc)
}

// hyperConverged creates a HyperConverged named kubevirt-hyperconverged in namespace, at
// the cluster's version, with spec (YAML, at that version's paths), as its operator would.
func (cl *cluster) hyperConverged(namespace, spec string) *unstructured.Unstructured {
	return cl.create(`
apiVersion: hco.kubevirt.io/` + cl.version + `
kind: HyperConverged
metadata: {name: kubevirt-hyperconverged, namespace: ` + namespace + `}
spec: ` + spec)
}

// engine drafts and applies against the cluster.
func (cl *cluster) engine() *plan.Engine { return &plan.Engine{Reader: cl.c, Writer: cl.c} }

// draft renders the profile against the cluster and drafts the plan with the real API
// server's server-side-apply dry-run.
func (cl *cluster) draft(opts *advisorv1alpha1.VirtHigherDensityOptions) ([]plan.Item, plan.Plan) {
	rendered, err := higherdensity.New().Render(ctx, cl.c, &advisorv1alpha1.ProfileOptions{VirtHigherDensity: opts})
	Expect(err).NotTo(HaveOccurred())
	p, err := cl.engine().Draft(ctx, plan.Request{Profile: profileName, Items: rendered})
	Expect(err).NotTo(HaveOccurred())
	Expect(p.Items).To(HaveLen(len(rendered)))
	return rendered, p
}

// applyAll applies every item of a drafted plan, as an approved execution does.
func (cl *cluster) applyAll(rendered []plan.Item, p plan.Plan) {
	for i := range p.Items {
		out, err := cl.engine().ApplyItem(ctx, p.Items[i], plan.ApplyOptions{Profile: profileName, CheckSnapshot: true, Rendered: &rendered[i]})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Applied).To(BeTrue(), "item %s applied", p.Items[i].Name)
	}
}

// item is the drafted item of that name.
func item(p plan.Plan, name string) advisorv1alpha1.PlanItem {
	for _, it := range p.Items {
		if it.Name == name {
			return it
		}
	}
	Fail("the plan has no item " + name)
	return advisorv1alpha1.PlanItem{}
}

// readHyperConverged reads the HyperConverged back at the cluster's version.
func (cl *cluster) readHyperConverged(namespace string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("hco.kubevirt.io/" + cl.version)
	obj.SetKind("HyperConverged")
	Expect(cl.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "kubevirt-hyperconverged"}, obj)).To(Succeed())
	return obj
}
