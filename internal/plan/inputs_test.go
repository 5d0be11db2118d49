package plan_test

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// pagingReader serves lists of Nodes (metadata only) and of SelfNodeRemediationTemplates
// (unstructured) a page at a time, as the API server does for requests with a limit, and
// counts the requests.
type pagingReader struct {
	client.Reader
	nodes     []metav1.PartialObjectMetadata
	templates []unstructured.Unstructured
	requests  int
	// limits are the limits the requests asked for.
	limits []int64
	// expireAfter answers the request after that many with 410 Expired (0: never).
	expireAfter int
}

func (p *pagingReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	p.requests++
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	p.limits = append(p.limits, lo.Limit)
	if p.expireAfter > 0 && p.requests > p.expireAfter && lo.Continue != "" {
		return apierrors.NewResourceExpired("the continue token is too old")
	}
	start := 0
	if lo.Continue != "" {
		_, _ = fmt.Sscanf(lo.Continue, "from-%d", &start)
	}
	page := func(n int) (end int, next string) {
		end = n
		if lo.Limit > 0 && start+int(lo.Limit) < n {
			end = start + int(lo.Limit)
			next = fmt.Sprintf("from-%d", end)
		}
		return end, next
	}
	switch l := list.(type) {
	case *metav1.PartialObjectMetadataList:
		end, next := page(len(p.nodes))
		for _, n := range p.nodes[start:end] {
			l.Items = append(l.Items, *n.DeepCopy())
		}
		l.ResourceVersion, l.Continue = "100", next
	case *unstructured.UnstructuredList:
		end, next := page(len(p.templates))
		for _, t := range p.templates[start:end] {
			l.Items = append(l.Items, *t.DeepCopy())
		}
		l.SetResourceVersion("100")
		l.SetContinue(next)
	}
	return nil
}

// cluster holds 1,201 worker Nodes with their Node Feature Discovery labels, annotations
// and managedFields, and two remediation templates.
func newPagingReader() *pagingReader {
	p := &pagingReader{}
	for i := range 1201 {
		n := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("worker-%04d", i), UID: "uid", ResourceVersion: fmt.Sprint(10 + i),
			Labels: map[string]string{
				"node-role.kubernetes.io/worker":                   "",
				"feature.node.kubernetes.io/cpu-model.vendor_id":   "Intel",
				"feature.node.kubernetes.io/memory-numa":           fmt.Sprint(i%2 == 0),
				"feature.node.kubernetes.io/pci-0302_10de.present": "true",
				"kubernetes.io/hostname":                           fmt.Sprintf("worker-%04d", i),
				"example.com/<&>":                                  "a&b",
			},
			Annotations: map[string]string{"k8s.ovn.org/node-subnets": `{"default":["10.128.0.0/23"]}`},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{}}}`),
			}},
		}}
		if i == 7 {
			n.Labels = nil
		}
		p.nodes = append(p.nodes, n)
	}
	for _, name := range []string{"self-node-remediation-automatic-strategy-template", "other"} {
		t := unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "self-node-remediation.medik8s.io/v1alpha1", "kind": "SelfNodeRemediationTemplate",
			"metadata": map[string]any{"name": name, "namespace": "openshift-workload-availability",
				"labels": map[string]any{"team": "infra"}},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"remediationStrategy": "Automatic", "timeoutSeconds": int64(300), "ratio": 0.5}}},
		}}
		p.templates = append(p.templates, t)
	}
	return p
}

func listNodes(t *testing.T, rec *plan.Recorder) *metav1.PartialObjectMetadataList {
	t.Helper()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "NodeList"})
	if err := rec.List(context.Background(), list, client.HasLabels{"node-role.kubernetes.io/worker"}); err != nil {
		t.Fatal(err)
	}
	return list
}

func listTemplates(t *testing.T, rec *plan.Recorder) *unstructured.UnstructuredList {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("self-node-remediation.medik8s.io/v1alpha1")
	list.SetKind("SelfNodeRemediationTemplateList")
	if err := rec.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return list
}

// The inputs hash of listed Nodes and templates is the one earlier versions of the
// operator computed and stored in status.inputsHash, so that an upgrade sees no input
// change where there is none.
func TestInputsHashOfListsIsUnchangedAcrossVersions(t *testing.T) {
	rec := plan.NewRecorder(newPagingReader())
	listNodes(t, rec)
	listTemplates(t, rec)
	refs, hash := rec.Inputs(nil)
	if len(refs) != 2 {
		t.Fatalf("inputs %v, want the two lists", refs)
	}
	const want = "60b491b0ec7b2e669c0d9c6e9e242be4f5f2292c4cb6d283b887fd5f221f9fc7"
	if hash != want {
		t.Errorf("inputs hash %s, want %s", hash, want)
	}
}

// A list is read a page at a time and handed to every reader whole, as one snapshot: the
// resourceVersion of its first page, no continue token.
func TestRecorderReadsAListInPagesAndHandsItOutWhole(t *testing.T) {
	reader := newPagingReader()
	rec := plan.NewRecorder(reader)
	first, second := listNodes(t, rec), listNodes(t, rec)
	limit := reader.limits[0]
	if limit <= 0 || limit >= 1201 {
		t.Fatalf("the first request asked for %d Nodes, want a page of them", limit)
	}
	if pages := (1201 + int(limit) - 1) / int(limit); reader.requests != pages {
		t.Errorf("%d list requests for 1,201 Nodes in pages of %d, want %d: one per page, and none for the second reader",
			reader.requests, limit, pages)
	}
	for _, list := range []*metav1.PartialObjectMetadataList{first, second} {
		if len(list.Items) != 1201 || list.Items[1200].Name != "worker-1200" {
			t.Fatalf("a reader got %d Nodes, want all 1,201 in order", len(list.Items))
		}
		if list.ResourceVersion != "100" || list.Continue != "" {
			t.Errorf("the list has resourceVersion %q and continue %q, want 100 and none", list.ResourceVersion, list.Continue)
		}
	}
}

// What a plan may depend on of a listed object is kept: never its managedFields, and of a
// Node only its labels, as the inputs hash counts it.
func TestRecorderKeepsOfListedNodesTheirLabelsOnly(t *testing.T) {
	rec := plan.NewRecorder(newPagingReader())
	n := listNodes(t, rec).Items[2]
	if len(n.ManagedFields) != 0 || len(n.Annotations) != 0 {
		t.Errorf("a listed Node kept managedFields %v and annotations %v", n.ManagedFields, n.Annotations)
	}
	if n.Labels["feature.node.kubernetes.io/cpu-model.vendor_id"] != "Intel" || len(n.Labels) != 6 {
		t.Errorf("a listed Node has the labels %v, want its 6 labels", n.Labels)
	}
	tpl := listTemplates(t, rec).Items[0]
	if tpl.GetManagedFields() != nil || tpl.GetLabels()["team"] != "infra" {
		t.Errorf("a listed template has managedFields %v and labels %v, want none and its labels", tpl.GetManagedFields(), tpl.GetLabels())
	}
	// Readers get copies: changing one changes nothing the recorder hands out next.
	n.Labels["feature.node.kubernetes.io/cpu-model.vendor_id"] = "AMD"
	if again := listNodes(t, rec).Items[2]; again.Labels["feature.node.kubernetes.io/cpu-model.vendor_id"] != "Intel" {
		t.Error("a reader's change of a listed Node's labels reached the recorder")
	}
}

// When the snapshot the pages come from expires between two pages, the list is read
// again whole.
func TestRecorderReadsAListWholeWhenItsPagesExpire(t *testing.T) {
	reader := newPagingReader()
	reader.expireAfter = 1
	rec := plan.NewRecorder(reader)
	if n := len(listNodes(t, rec).Items); n != 1201 {
		t.Errorf("%d Nodes after the continue token expired, want all 1,201", n)
	}
	if reader.requests != 3 {
		t.Errorf("%d list requests, want 3: a page, the expired one, then the whole list", reader.requests)
	}
}

// A reader that pages itself gets the page it asked for.
func TestRecorderLeavesPagingToAReaderThatAsksForAPage(t *testing.T) {
	reader := newPagingReader()
	rec := plan.NewRecorder(reader)
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "NodeList"})
	if err := rec.List(context.Background(), list, client.Limit(10)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 10 || list.Continue != "from-10" || reader.requests != 1 {
		t.Errorf("got %d Nodes, continue %q in %d requests; want the page of 10 with its continue token", len(list.Items), list.Continue, reader.requests)
	}
}
