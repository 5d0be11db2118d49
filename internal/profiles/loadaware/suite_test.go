package loadaware_test

import (
	"context"
	"regexp"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

var ctx = context.Background()

func TestLoadAware(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "load-aware-rebalancing profile")
}

const (
	profileName          = string(advisorv1alpha1.ProfileLoadAwareRebalancing)
	hcoNamespace         = "openshift-cnv"
	upstreamHCONamespace = "kubevirt-hyperconverged"
	hcoName              = "kubevirt-hyperconverged"
)

// cluster is one real kube-apiserver and etcd (envtest) with this project's CRD, the base
// third-party CRDs and the KubeDescheduler CRD of one operator generation.
type cluster struct {
	c client.Client
}

// onCluster starts the control plane for the KubeDescheduler CRD generation gen once for
// the enclosing Ordered container, and stops it when the container is done. The
// returned cluster is usable from the container's setup and specs.
func onCluster(gen string) *cluster {
	cl := &cluster{}
	BeforeAll(func() {
		env, err := testenv.New(testenv.OwnCRDs, testenv.BaseCRDs, testenv.DeschedulerCRDs(gen))
		Expect(err).NotTo(HaveOccurred())
		cl.c = testenv.StartForContainer(ctx, env, loadaware.DeschedulerNamespace, hcoNamespace, upstreamHCONamespace)
	})
	return cl
}

// create creates obj (YAML) and deletes it again when the current spec ends.
func (cl *cluster) create(doc string) *unstructured.Unstructured {
	return testenv.CreateForSpec(ctx, cl.c, doc)
}

// liveDescheduler creates the KubeDescheduler singleton as an administrator might have
// configured it (Predictive, hourly) with the given profiles, for the current spec.
func (cl *cluster) liveDescheduler(profiles ...string) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.openshift.io/v1",
		"kind":       "KubeDescheduler",
		"metadata":   map[string]any{"name": loadaware.DeschedulerName, "namespace": loadaware.DeschedulerNamespace},
		"spec": map[string]any{
			"managementState":             "Managed",
			"mode":                        "Predictive",
			"deschedulingIntervalSeconds": int64(3600),
			"profiles":                    toAny(profiles),
		},
	}}
	Expect(cl.c.Create(ctx, obj)).To(Succeed(), "create the live KubeDescheduler with profiles %v", profiles)
	DeferCleanup(func() { Expect(client.IgnoreNotFound(cl.c.Delete(ctx, obj))).To(Succeed()) })
}

// hyperConverged creates the v1 HyperConverged in openshift-cnv with the given
// live-migration limits, for the current spec.
func (cl *cluster) hyperConverged(perCluster, perNode int) {
	cl.hyperConvergedIn(hcoNamespace, perCluster, perNode)
}

// hyperConvergedIn creates the v1 HyperConverged in namespace with the given
// live-migration limits, for the current spec.
func (cl *cluster) hyperConvergedIn(namespace string, perCluster, perNode int) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hco.kubevirt.io/v1",
		"kind":       "HyperConverged",
		"metadata":   map[string]any{"name": hcoName, "namespace": namespace},
		"spec": map[string]any{"virtualization": map[string]any{"liveMigrationConfig": map[string]any{
			"parallelMigrationsPerCluster":      int64(perCluster),
			"parallelOutboundMigrationsPerNode": int64(perNode),
		}}},
	}}
	Expect(cl.c.Create(ctx, obj)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(cl.c.Delete(ctx, obj))).To(Succeed()) })
}

// drafted is what the profile rendered and what the plan engine drafted from it.
type drafted struct {
	rendered []plan.Item
	items    []advisorv1alpha1.PlanItem
}

// draft renders the profile against the cluster and drafts the plan with the real API
// server's server-side-apply dry-run.
func (cl *cluster) draft(opts *advisorv1alpha1.ProfileOptions) drafted {
	return cl.draftWith(cl.c, opts)
}

func (cl *cluster) draftWith(reader client.Reader, opts *advisorv1alpha1.ProfileOptions) drafted {
	rendered, err := loadaware.New().Render(ctx, reader, opts)
	Expect(err).NotTo(HaveOccurred())
	p, err := (&plan.Engine{Reader: cl.c, Writer: cl.c}).Draft(ctx, plan.Request{Profile: profileName, Items: rendered})
	Expect(err).NotTo(HaveOccurred())
	Expect(p.Items).To(HaveLen(len(rendered)))
	return drafted{rendered: rendered, items: p.Items}
}

// item is the drafted item of that name.
func (d drafted) item(name string) advisorv1alpha1.PlanItem {
	for _, it := range d.items {
		if it.Name == name {
			return it
		}
	}
	Fail("the plan has no item " + name)
	return advisorv1alpha1.PlanItem{}
}

// descheduler is the drafted KubeDescheduler item.
func (d drafted) descheduler() advisorv1alpha1.PlanItem { return d.item(loadaware.ItemDescheduler) }

// desired decodes the desired state a drafted item records in status.
func desired(it advisorv1alpha1.PlanItem) *unstructured.Unstructured {
	obj, err := plan.DesiredObject(it)
	Expect(err).NotTo(HaveOccurred())
	return obj
}

// desiredSpec is the spec of a drafted item's desired state.
func desiredSpec(it advisorv1alpha1.PlanItem) map[string]any {
	spec, found, err := unstructured.NestedMap(desired(it).Object, "spec")
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue(), "item %s has no desired spec", it.Name)
	return spec
}

// desiredProfiles is spec.profiles of the drafted KubeDescheduler.
func desiredProfiles(it advisorv1alpha1.PlanItem) []string {
	ps, found, err := unstructured.NestedStringSlice(desired(it).Object, "spec", "profiles")
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue(), "the desired KubeDescheduler has no spec.profiles")
	return ps
}

// diffLine matches a line of a YAML unified diff that adds (sign "+") or removes (sign
// "-") the list entry value.
func diffLine(sign, value string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sign) + `\s*- ` + regexp.QuoteMeta(value) + `$`)
}

// crdOverride reads through the real client, except that the KubeDescheduler CRD it
// serves is crd (not found when nil): it substitutes the schema the profile inspects,
// nothing else.
type crdOverride struct {
	client.Reader
	crd *apiextensionsv1.CustomResourceDefinition
}

func (r crdOverride) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if out, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok && key.Name == loadaware.DeschedulerCRD {
		if r.crd == nil {
			return apierrors.NewNotFound(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, key.Name)
		}
		r.crd.DeepCopyInto(out)
		return nil
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// deschedulerCRD reads the installed KubeDescheduler CRD.
func (cl *cluster) deschedulerCRD() *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Expect(cl.c.Get(ctx, types.NamespacedName{Name: loadaware.DeschedulerCRD}, crd)).To(Succeed())
	return crd
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
