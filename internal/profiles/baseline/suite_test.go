package baseline_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/baseline"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var ctx = context.Background()

func TestBaseline(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "platform-baseline profile")
}

const profileName = string(advisorv1alpha1.ProfilePlatformBaseline)

// upstreamCRDFiles are the real upstream CRDs of every kind the profile reads or writes,
// as <group>/<plural>.yaml under the upstream CRD directory.
var upstreamCRDFiles = []string{
	"machineconfiguration.openshift.io/machineconfigs.yaml",
	"machineconfiguration.openshift.io/machineconfigpools.yaml",
	"machineconfiguration.openshift.io/kubeletconfigs.yaml",
	"hco.kubevirt.io/hyperconvergeds.yaml",
	"remediation.medik8s.io/nodehealthchecks.yaml",
	"self-node-remediation.medik8s.io/selfnoderemediationtemplates.yaml",
	"forklift.konveyor.io/forkliftcontrollers.yaml",
	"metallb.io/metallbs.yaml",
}

// controlPlane is one real kube-apiserver and etcd (envtest) with the upstream CRDs.
type controlPlane struct {
	c client.Client
}

// hcoVersions chooses the HyperConverged versions a control plane serves.
type hcoVersions int

// onlyV1beta1 is the upstream CRD of a release that predates v1; without it, a control
// plane runs the upstream CRD as it is (v1 stored, v1beta1 served).
const onlyV1beta1 hcoVersions = 1

// onCluster starts the control plane once for the enclosing Ordered container, with the
// namespaces the components' operators use on OpenShift.
func onCluster(versions ...hcoVersions) *controlPlane {
	cl := &controlPlane{}
	BeforeAll(func() {
		env, err := testenv.New(testenv.OwnCRDs)
		Expect(err).NotTo(HaveOccurred())
		for _, f := range upstreamCRDFiles {
			crd, err := testenv.ReadCRD(filepath.Join(testenv.UpstreamCRDs(), f))
			Expect(err).NotTo(HaveOccurred())
			if len(versions) > 0 && versions[0] == onlyV1beta1 && crd.Name == "hyperconvergeds.hco.kubevirt.io" {
				var kept []apiextensionsv1.CustomResourceDefinitionVersion
				for _, v := range crd.Spec.Versions {
					if v.Name == "v1beta1" {
						v.Served, v.Storage = true, true
						kept = append(kept, v)
					}
				}
				Expect(kept).To(HaveLen(1), "the upstream CRD has a v1beta1 version")
				crd.Spec.Versions = kept
			}
			env.CRDs = append(env.CRDs, crd)
		}
		cl.c = testenv.StartForContainer(ctx, env, "openshift-cnv", "openshift-mtv", "metallb-system", "openshift-workload-availability")
	})
	return cl
}

// create creates obj (YAML) and deletes it again when the current spec ends.
func (cl *controlPlane) create(doc string) *unstructured.Unstructured {
	return testenv.CreateForSpec(ctx, cl.c, doc)
}

// engine drafts and applies against the cluster.
func (cl *controlPlane) engine() *plan.Engine { return &plan.Engine{Reader: cl.c, Writer: cl.c} }

// draftAs renders a profile's items with render and drafts them with the real API
// server's server-side-apply dry-run, as that profile.
func (cl *controlPlane) draftAs(profile string, rendered []plan.Item) plan.Plan {
	p, err := cl.engine().Draft(ctx, plan.Request{Profile: profile, Items: rendered})
	Expect(err).NotTo(HaveOccurred())
	return p
}

// draft renders platform-baseline with o against the cluster and drafts its plan.
func (cl *controlPlane) draft(o *advisorv1alpha1.PlatformBaselineOptions) ([]plan.Item, plan.Plan) {
	rendered, err := baseline.New().Render(ctx, cl.c, &advisorv1alpha1.ProfileOptions{PlatformBaseline: o})
	Expect(err).NotTo(HaveOccurred())
	return rendered, cl.draftAs(profileName, rendered)
}

// applyAll applies every planned item of a drafted plan as profile, as an approved
// execution does, and returns the items as applied.
func (cl *controlPlane) applyAll(profile string, rendered []plan.Item, p plan.Plan) []advisorv1alpha1.PlanItem {
	merged, err := plan.MergeFragments(rendered)
	Expect(err).NotTo(HaveOccurred())
	byName := map[string]*plan.Item{}
	for i := range merged {
		byName[merged[i].Name] = &merged[i]
	}
	var out []advisorv1alpha1.PlanItem
	for _, it := range p.Items {
		if it.State == advisorv1alpha1.ItemSkipped {
			continue
		}
		o, err := cl.engine().ApplyItem(ctx, it, plan.ApplyOptions{Profile: profile, CheckSnapshot: true, Rendered: byName[it.Name]})
		Expect(err).NotTo(HaveOccurred(), "apply %s", it.Name)
		Expect(o.Applied || o.AlreadyApplied).To(BeTrue(), "item %s applied: %+v", it.Name, o)
		it.Applied = o.Record
		out = append(out, it)
	}
	return out
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

// setServed turns the served flag of every version of a CRD off or on; etcd keeps its
// objects, and the profile sees the kind as not installed while it is off.
func (cl *controlPlane) setServed(crdName string, served bool) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Expect(cl.c.Get(ctx, client.ObjectKey{Name: crdName}, crd)).To(Succeed())
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Served = served
	}
	Expect(cl.c.Update(ctx, crd)).To(Succeed())
}

// managers lists the field managers of obj.
func managers(obj *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		out = append(out, mf.Manager)
	}
	return out
}

// read reads an object back.
func (cl *controlPlane) read(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	Expect(cl.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)).To(Succeed())
	return obj
}

// cut splits a "key=value" label.
func cut(l string) (string, string, bool) { return strings.Cut(l, "=") }

// yamlInto decodes a YAML document into obj.
func yamlInto(doc string, obj *unstructured.Unstructured) error {
	return yaml.Unmarshal([]byte(doc), &obj.Object)
}
