package plan_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
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
}

func (p *pagingReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	p.requests++
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	p.limits = append(p.limits, lo.Limit)
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

// The inputs hash of listed Nodes and templates is pinned: the encoding of a fingerprint
// must not change between versions of the operator, or an upgrade would see an input
// change where there is none.
func TestInputsHashOfListsIsPinned(t *testing.T) {
	rec := plan.NewRecorder(newPagingReader())
	listNodes(t, rec)
	listTemplates(t, rec)
	refs, hash := rec.Inputs(nil)
	if len(refs) != 2 {
		t.Fatalf("inputs %v, want the two lists", refs)
	}
	const want = "b3c1a177fef1f05b26b3609fd35a6617b289e243c25333842e24e796d1bef27d"
	if hash != want {
		t.Errorf("inputs hash %s, want %s", hash, want)
	}
}

// What counts of a Node is the facts the profiles decide from: a change of another of its
// labels changes no inputs hash; a change of a fact does.
func TestInputsHashOfNodesCountsTheirFactLabelsOnly(t *testing.T) {
	hashOf := func(change func(set map[string]string)) string {
		reader := newPagingReader()
		change(reader.nodes[3].Labels)
		rec := plan.NewRecorder(reader)
		listNodes(t, rec)
		_, hash := rec.Inputs(nil)
		return hash
	}
	before := hashOf(func(map[string]string) {})
	if other := hashOf(func(l map[string]string) { l["kubernetes.io/hostname"] = "renamed" }); other != before {
		t.Error("a change of a Node's hostname label, which no profile decides from, changed the inputs hash")
	}
	if fact := hashOf(func(l map[string]string) { l["feature.node.kubernetes.io/cpu-model.vendor_id"] = "AMD" }); fact == before {
		t.Error("a change of a Node's CPU vendor label left the inputs hash as it was")
	}
}

// A list is read in one request and handed to every reader, without its items'
// managedFields; readers get copies.
func TestRecorderReadsAListOnceAndKeepsNoManagedFields(t *testing.T) {
	reader := newPagingReader()
	rec := plan.NewRecorder(reader)
	n := listNodes(t, rec).Items[2]
	if len(n.ManagedFields) != 0 {
		t.Errorf("a listed Node kept managedFields %v", n.ManagedFields)
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
	if reader.requests != 2 || reader.limits[0] != 0 {
		t.Errorf("%d list requests (limits %v), want one for the Nodes and one for the templates, unpaged", reader.requests, reader.limits)
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

// wholeNodesReader serves the Nodes of a pagingReader as whole objects, in one list.
type wholeNodesReader struct {
	client.Reader
	nodes []metav1.PartialObjectMetadata
}

func (w wholeNodesReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l := list.(*unstructured.UnstructuredList)
	for _, n := range w.nodes {
		u := unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Node")
		u.SetName(n.Name)
		u.SetLabels(n.Labels)
		u.Object["status"] = map[string]any{"capacity": map[string]any{"cpu": "64"}}
		l.Items = append(l.Items, u)
	}
	return nil
}

// Nodes count the same for the inputs hash whether they are read metadata-only or whole,
// a plan's own target Node by its existence only.
func TestInputsHashOfNodesIsTheSameReadMetadataOnlyOrWhole(t *testing.T) {
	nodes := newPagingReader().nodes
	targets := []advisorv1alpha1.TargetReference{{APIVersion: "v1", Kind: "Node", Name: "worker-0003"}}

	metadataOnly := plan.NewRecorder(&pagingReader{nodes: nodes})
	listNodes(t, metadataOnly)
	_, metadataHash := metadataOnly.Inputs(targets)

	whole := plan.NewRecorder(wholeNodesReader{nodes: nodes})
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("v1")
	list.SetKind("NodeList")
	if err := whole.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	_, wholeHash := whole.Inputs(targets)
	if metadataHash != wholeHash {
		t.Errorf("inputs hash %s of the Nodes read metadata-only, %s of the same Nodes read whole", metadataHash, wholeHash)
	}
	_, untargeted := metadataOnly.Inputs(nil)
	if untargeted == metadataHash {
		t.Error("the inputs hash is the same whether a Node is a target or not: its labels should not count as a target")
	}
}

// ListEach hands every listed Node, with its labels, to the caller one at a time, in the
// order of the list; a second reader gets the same Nodes without a second read.
func TestRecorderHandsOutListedNodesOneAtATime(t *testing.T) {
	reader := newPagingReader()
	rec := plan.NewRecorder(reader)
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "NodeList"})
	var names []string
	intel := 0
	each := func(o client.Object) error {
		names = append(names, o.GetName())
		if o.GetLabels()["feature.node.kubernetes.io/cpu-model.vendor_id"] == "Intel" {
			intel++
		}
		return nil
	}
	if err := plan.ListEach(context.Background(), rec, list, each, client.HasLabels{"node-role.kubernetes.io/worker"}); err != nil {
		t.Fatal(err)
	}
	requests := reader.requests
	if len(names) != 1201 || names[0] != "worker-0000" || names[1200] != "worker-1200" || intel != 1200 {
		t.Fatalf("ListEach handed out %d Nodes (first %q), %d of them Intel; want the 1,201 in order, 1,200 Intel", len(names), names[0], intel)
	}
	if len(list.Items) != 0 {
		t.Errorf("ListEach filled the caller's list with %d Nodes, want none", len(list.Items))
	}
	whole := listNodes(t, rec)
	if reader.requests != requests || len(whole.Items) != 1201 || whole.Items[5].Labels["kubernetes.io/hostname"] != "worker-0005" {
		t.Errorf("List after ListEach: %d more requests, %d Nodes; want none and the same 1,201 with their labels",
			reader.requests-requests, len(whole.Items))
	}
	stop := errors.New("stop")
	if err := rec.ListEach(context.Background(), list, func(client.Object) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("ListEach returned %v, want the error of the caller's function", err)
	}
}

// sharedReader serves the Nodes of a pagingReader from a "cache": ListShared hands out its
// own objects, uncopied, and counts the lists.
type sharedReader struct {
	*pagingReader
	cached []*metav1.PartialObjectMetadata
	shared int
}

func (s *sharedReader) ListShared(_ context.Context, list client.ObjectList, each func(client.Object), opts ...client.ListOption) (bool, error) {
	if _, ok := list.(*metav1.PartialObjectMetadataList); !ok {
		return false, nil
	}
	s.shared++
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	for _, n := range s.cached {
		if lo.LabelSelector == nil || lo.LabelSelector.Matches(labels.Set(n.Labels)) {
			each(n)
		}
	}
	return true, nil
}

// A list a cache serves is recorded as the cache's own items, never copied whole and never
// changed: readers get copies, one at a time with ListEach, and the inputs hash is the one
// the same Nodes read from the API server give.
func TestRecorderKeepsTheItemsACacheSharesAndHandsOutCopies(t *testing.T) {
	workers := func() *pagingReader {
		p := newPagingReader()
		p.nodes = append(p.nodes[:7], p.nodes[8:]...) // the one that is no worker
		return p
	}
	paging := workers()
	reader := &sharedReader{pagingReader: paging}
	for i := len(paging.nodes) - 1; i >= 0; i-- { // a cache lists in no particular order
		n := paging.nodes[i].DeepCopy()
		n.ManagedFields = nil
		reader.cached = append(reader.cached, n)
	}
	rec := plan.NewRecorder(reader)
	whole := listNodes(t, rec)
	if reader.shared != 1 || paging.requests != 0 {
		t.Fatalf("%d shared lists and %d requests, want the Nodes from the cache once", reader.shared, paging.requests)
	}
	if len(whole.Items) != 1200 || whole.Items[0].Name != "worker-0000" {
		t.Fatalf("List handed out %d Nodes starting with %q, want the 1,200 workers in order", len(whole.Items), whole.Items[0].Name)
	}
	whole.Items[0].Labels["feature.node.kubernetes.io/cpu-model.vendor_id"] = "AMD"
	var seen int
	err := plan.ListEach(context.Background(), rec, &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NodeList"}},
		func(o client.Object) error {
			seen++
			o.GetLabels()["feature.node.kubernetes.io/cpu-model.vendor_id"] = "AMD"
			return nil
		}, client.HasLabels{"node-role.kubernetes.io/worker"})
	if err != nil || seen != 1200 {
		t.Fatalf("ListEach handed out %d Nodes (%v), want 1,200", seen, err)
	}
	for _, n := range reader.cached {
		if v, ok := n.Labels["feature.node.kubernetes.io/cpu-model.vendor_id"]; ok && v != "Intel" {
			t.Fatalf("a reader's change of a Node reached the cache's object %s", n.Name)
		}
	}
	_, sharedHash := rec.Inputs(nil)
	requested := plan.NewRecorder(workers())
	listNodes(t, requested)
	if _, hash := requested.Inputs(nil); hash != sharedHash {
		t.Errorf("inputs hash %s of the Nodes a cache served, %s of the same Nodes read from the API server", sharedHash, hash)
	}
}
