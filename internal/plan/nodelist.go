package plan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeList is what the recorder keeps of a metadata-only list of Nodes: what a plan may
// depend on of a Node is its name and its labels (see inputFingerprint), and thousands of
// Nodes carry the same few hundred Node Feature Discovery labels. So each distinct label
// (key and value) is kept once, and a Node is its name and the numbers of its labels: the
// labels of a page of Nodes never outlive the page.
type nodeList struct {
	resourceVersion, cont string
	// labels are the distinct labels, by number; numbers finds a label's number.
	labels  []label
	numbers map[label]uint32
	items   []nodeItem
}

type label struct{ key, value string }

// nodeItem is one Node: its name, and the numbers of its labels in the order of their
// keys, as varints: how many, then each one's difference from the one before. Labels are
// numbered as they are first seen, so the Nodes after the first mostly repeat its
// numbers, a byte each.
type nodeItem struct {
	name   string
	labels []byte
}

func newNodeList() *nodeList { return &nodeList{numbers: map[label]uint32{}} }

// add records the Nodes of a page.
func (l *nodeList) add(page client.ObjectList) error {
	metadata, ok := page.(*metav1.PartialObjectMetadataList)
	if !ok {
		return fmt.Errorf("a page of Nodes is a %T, not metadata", page)
	}
	keys := make([]string, 0, 256)
	var buf []byte
	for i := range metadata.Items {
		m := &metadata.Items[i].ObjectMeta
		keys = keys[:0]
		for k := range m.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf = binary.AppendUvarint(buf[:0], uint64(len(keys)))
		previous := int64(0)
		for _, k := range keys {
			n := int64(l.number(label{key: k, value: m.Labels[k]}))
			buf = binary.AppendVarint(buf, n-previous)
			previous = n
		}
		l.items = append(l.items, nodeItem{name: strings.Clone(m.Name), labels: bytes.Clone(buf)})
	}
	return nil
}

// number is the label's number, given on first sight; the strings kept are copies, so no
// part of a page's response stays behind.
func (l *nodeList) number(lb label) uint32 {
	if n, ok := l.numbers[lb]; ok {
		return n
	}
	lb = label{key: strings.Clone(lb.key), value: strings.Clone(lb.value)}
	n := uint32(len(l.labels))
	l.labels = append(l.labels, lb)
	l.numbers[lb] = n
	return n
}

// labelCount is how many labels the Node has.
func (it nodeItem) labelCount() int {
	count, _ := binary.Uvarint(it.labels)
	return int(count)
}

// eachLabel calls fn with the number of each of the Node's labels, in the order of their
// keys.
func (it nodeItem) eachLabel(fn func(number uint32)) {
	_, read := binary.Uvarint(it.labels)
	n := int64(0)
	for rest := it.labels[read:]; len(rest) > 0; rest = rest[read:] {
		var delta int64
		delta, read = binary.Varint(rest)
		n += delta
		fn(uint32(n))
	}
}

// node is Node i as a reader gets it: its name and its labels.
func (l *nodeList) node(i int, gvk schema.GroupVersionKind) metav1.PartialObjectMetadata {
	it := l.items[i]
	n := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: it.name}}
	n.SetGroupVersionKind(gvk)
	if count := it.labelCount(); count > 0 {
		n.Labels = make(map[string]string, count)
		it.eachLabel(func(number uint32) {
			lb := l.labels[number]
			n.Labels[lb.key] = lb.value
		})
	}
	return n
}

// list is the whole list, of kind listGVK.
func (l *nodeList) list(listGVK schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
	out := &metav1.PartialObjectMetadataList{Items: make([]metav1.PartialObjectMetadata, len(l.items))}
	out.SetGroupVersionKind(listGVK)
	out.ResourceVersion, out.Continue = l.resourceVersion, l.cont
	item := listGVK.GroupVersion().WithKind(trimListSuffix(listGVK.Kind))
	for i := range l.items {
		out.Items[i] = l.node(i, item)
	}
	return out
}

// each hands the Nodes to each, one at a time.
func (l *nodeList) each(listGVK schema.GroupVersionKind, each func(client.Object) error) error {
	item := listGVK.GroupVersion().WithKind(trimListSuffix(listGVK.Kind))
	for i := range l.items {
		n := l.node(i, item)
		if err := each(&n); err != nil {
			return err
		}
	}
	return nil
}

// fingerprint is listFingerprint of the Nodes: an entry per Node, sorted by key, whose
// value is its labels (nil without any), or nil for a plan's own target.
func (l *nodeList) fingerprint(listGVK schema.GroupVersionKind, isTarget map[readKey]bool) nodeEntries {
	item := listGVK.GroupVersion().WithKind(trimListSuffix(listGVK.Kind))
	order := make([]int, len(l.items))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return l.items[order[i]].name < l.items[order[j]].name })
	return nodeEntries{list: l, order: order, item: item, isTarget: isTarget}
}

// nodeEntries are the entries of a nodeList's fingerprint, encoded as listEntries of the
// same Nodes would be.
type nodeEntries struct {
	list     *nodeList
	order    []int
	item     schema.GroupVersionKind
	isTarget map[readKey]bool
}

func (n nodeEntries) encodeEntries(write func([]byte)) {
	// Each label as a member of a JSON object, encoded once.
	members := make([][]byte, len(n.list.labels))
	for i, lb := range n.list.labels {
		members[i] = append(append(mustJSON(lb.key), ':'), mustJSON(lb.value)...)
	}
	var buf []byte
	for j, i := range n.order {
		it := n.list.items[i]
		// The key of listEntry: "<namespace>/<name>", and a Node has no namespace.
		key := mustJSON("/" + it.name)
		buf = buf[:0]
		if j > 0 {
			buf = append(buf, ',')
		}
		buf = append(append(append(buf, `{"key":`...), key...), `,"value":`...)
		switch {
		case n.isTarget[readKey{GVK: n.item, Name: it.name}], it.labelCount() == 0:
			buf = append(buf, "null"...)
		default:
			buf = append(buf, '{')
			first := true
			it.eachLabel(func(number uint32) {
				if !first {
					buf = append(buf, ',')
				}
				first = false
				buf = append(buf, members[number]...)
			})
			buf = append(buf, '}')
		}
		write(append(buf, '}'))
	}
}
