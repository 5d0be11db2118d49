package plan

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listPageSize is how many objects one list request asks for: a list of thousands of
// Nodes is read a page at a time, each page reduced (keepOfItems, or to a nodeList) before
// the next arrives, so the full responses never sit in memory together. A page of Nodes
// with their Node Feature Discovery labels, annotations and managedFields is the largest
// thing a draft holds: small pages keep the operator's memory nearly flat as Nodes grow,
// for a request per 10 Nodes.
const listPageSize = 10

var nodeGroupKind = schema.GroupKind{Kind: "Node"}

// record reads the list into e, page by page when paged (else in one request): a
// metadata-only list of Nodes as a nodeList, any other as a list of what keepOfItems keeps
// of its items.
func (r *Recorder) record(ctx context.Context, e *readEntry, list client.ObjectList, gvk schema.GroupVersionKind,
	opts []client.ListOption, paged bool) error {
	item := gvk.GroupVersion().WithKind(trimListSuffix(gvk.Kind))
	_, metadataOnly := list.(*metav1.PartialObjectMetadataList)
	var nodes *nodeList
	if metadataOnly && item.GroupKind() == nodeGroupKind {
		nodes = newNodeList()
	}
	intern := newInterner()
	var items []runtime.Object
	// The record carries the resourceVersion of the first page, and a continue token only
	// when the caller asked for one page.
	var resourceVersion, cont string
	for next := ""; ; {
		page := list.DeepCopyObject().(client.ObjectList)
		pageOpts := opts
		if paged {
			pageOpts = append(opts[:len(opts):len(opts)], client.Limit(listPageSize), client.Continue(next))
		}
		err := r.reader.List(ctx, page, pageOpts...)
		if err != nil && next != "" && apierrors.IsResourceExpired(err) {
			// The snapshot the pages come from is gone: read it whole instead.
			return r.record(ctx, e, list, gvk, opts, false)
		}
		if err != nil {
			return err
		}
		if nodes != nil {
			if err := nodes.add(page); err != nil {
				return err
			}
		} else {
			if err := keepOfItems(page, item, intern); err != nil {
				return err
			}
			if err := apimeta.EachListItem(page, func(o runtime.Object) error {
				items = append(items, o)
				return nil
			}); err != nil {
				return err
			}
		}
		if next == "" {
			resourceVersion = page.GetResourceVersion()
		}
		if !paged {
			cont = page.GetContinue()
			break
		}
		if next = page.GetContinue(); next == "" {
			break
		}
	}
	if nodes != nil {
		nodes.resourceVersion, nodes.cont = resourceVersion, cont
		e.nodes = nodes
		return nil
	}
	fresh := list.DeepCopyObject().(client.ObjectList)
	if err := apimeta.SetList(fresh, items); err != nil {
		return err
	}
	fresh.SetResourceVersion(resourceVersion)
	fresh.SetContinue(cont)
	e.obj = fresh
	return nil
}

// keepOfItems reduces the items of a list read to what a plan may depend on: no item's
// managedFields (the engine judges ownership from the targets it gets, never from a
// list), and of a Node only its labels, as inputFingerprint counts it. Label keys and
// values are shared between items: thousands of Nodes carry the same few hundred
// Node Feature Discovery labels.
func keepOfItems(list client.ObjectList, item schema.GroupVersionKind, intern *interner) error {
	node := item.GroupKind() == schema.GroupKind{Kind: "Node"}
	return apimeta.EachListItem(list, func(o runtime.Object) error {
		m, err := apimeta.Accessor(o)
		if err != nil {
			return err
		}
		m.SetManagedFields(nil)
		if node {
			m.SetAnnotations(nil)
		}
		if labels := m.GetLabels(); len(labels) > 0 {
			m.SetLabels(intern.labels(labels))
		}
		return nil
	})
}

// interner shares equal strings.
type interner struct{ strings map[string]string }

func newInterner() *interner { return &interner{strings: map[string]string{}} }

func (in *interner) string(s string) string {
	if kept, ok := in.strings[s]; ok {
		return kept
	}
	in.strings[s] = s
	return s
}

// labels is a copy of labels whose keys and values are the interner's.
func (in *interner) labels(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[in.string(k)] = in.string(v)
	}
	return out
}

func trimListSuffix(kind string) string {
	if len(kind) > 4 && kind[len(kind)-4:] == "List" {
		return kind[:len(kind)-4]
	}
	return kind
}
