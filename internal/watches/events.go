package watches

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// eventKind is what the updates of a cache's objects are judged by.
type eventKind int

const (
	// targetEvents: a target's update wakes every config watching it, except the one
	// whose own profile made it (see ownWrite).
	targetEvents eventKind = iota
	// inputEvents: an input's update wakes its configs as a target's does, and only when
	// what a plan is rendered from changed: its spec (as its generation counts it), labels,
	// annotations or deletion; for a MachineConfigPool, any change, since profiles and
	// rollouts read its status (the configuration it runs, its machines). A profile's own
	// write changes nothing it is rendered from: a target's values never count among its
	// inputs. An input watched for its labels only (a Node, kept as a labelledObject)
	// wakes its configs when they change.
	inputEvents
)

// named is what a cache's events are mapped to configs by.
type named interface {
	GetName() string
	GetNamespace() string
}

// woken are the configs an update of object k concerns.
func (w *Watches) woken(k plan.TargetKey, old, updated client.Object, events eventKind) []reconcile.Request {
	return w.configsOf(k, func(manager string) bool {
		return ownWrite(old, updated, manager) ||
			events == inputEvents && k.GroupKind() != targets.MachineConfigPool.GVK.GroupKind() && statusOnly(old, updated)
	})
}

// created are the configs a creation of object k concerns: all of them, but with
// byWrite (the object came into the cache by a write, not with its initial list) the
// config whose own write brought it in (see writtenLast).
func (w *Watches) created(k plan.TargetKey, obj client.Object, byWrite bool) []reconcile.Request {
	return w.configsOf(k, func(manager string) bool { return byWrite && writtenLast(obj, manager) })
}

// writtenLast tells whether manager made the last write the object's managedFields show:
// its entry is newer than every other one. A target comes into a cache selected by the
// managed-by label with the profile's first write, which sets the label; another writer
// that wrote in the same second, or later, wakes its configs.
func writtenLast(obj client.Object, manager string) bool {
	entries := obj.GetManagedFields()
	i := slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == manager })
	if manager == "" || i < 0 || entries[i].Time == nil || !obj.GetDeletionTimestamp().IsZero() {
		return false
	}
	for j, e := range entries {
		if j != i && (e.Time == nil || !e.Time.Before(entries[i].Time)) {
			return false
		}
	}
	return true
}

// ownWrite tells whether an update records only a write by manager: every managedFields
// entry it adds, changes or drops is manager's. Any other writer's change, a status
// written by the target's own controller, or a deletion, shows in an entry of theirs or
// in the deletion timestamp.
func ownWrite(old, updated client.Object, manager string) bool {
	if manager == "" || !old.GetDeletionTimestamp().Equal(updated.GetDeletionTimestamp()) {
		return false
	}
	before, after := old.GetManagedFields(), updated.GetManagedFields()
	changed := false
	for _, pair := range [][2][]metav1.ManagedFieldsEntry{{after, before}, {before, after}} {
		for _, e := range pair[0] {
			if slices.ContainsFunc(pair[1], func(o metav1.ManagedFieldsEntry) bool { return equality.Semantic.DeepEqual(e, o) }) {
				continue
			}
			if e.Manager != manager {
				return false
			}
			changed = true
		}
	}
	return changed
}

// statusOnly tells whether an update leaves everything a plan is rendered from of the
// object as it was: its generation (the API server counts a change of the spec there),
// labels, annotations and deletion.
func statusOnly(old, updated client.Object) bool {
	return old.GetGeneration() == updated.GetGeneration() &&
		maps.Equal(old.GetLabels(), updated.GetLabels()) &&
		maps.Equal(old.GetAnnotations(), updated.GetAnnotations()) &&
		old.GetDeletionTimestamp().Equal(updated.GetDeletionTimestamp())
}

// configsOf are the configs whose plans name object k, but those skip tells apart by the
// field manager of their profile (nil: none).
func (w *Watches) configsOf(k plan.TargetKey, skip func(manager string) bool) []reconcile.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]reconcile.Request, 0, len(w.configs[k]))
	for name := range w.configs[k] {
		if skip != nil && skip(w.managers[name]) {
			continue
		}
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	return out
}
