package poolsim

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldOwner is the field manager of the simulator's writes.
const fieldOwner = "poolsim"

// expectationTimeout bounds the wait for the cache to show a write: past it, the simulator
// goes on with what the cache holds.
const expectationTimeout = 10 * time.Second

// expectation is a write of the simulator the cache has not shown yet. The simulator judges
// nothing before its cache holds its own writes, so that, for example, a node it has just
// targeted is not taken for an idle one and maxUnavailable is never exceeded.
type expectation struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	// resourceVersion is the one the write returned; "" waits for the object to be gone.
	resourceVersion string
	// created: the write created the object, so that it is awaited even while the cache
	// does not hold it; an updated object that is gone is awaited no more.
	created  bool
	deadline time.Time
}

// pass is one sync of the simulator: the snapshot it judges and what it wrote so far.
type pass struct {
	now  time.Time
	snap *snapshot
	// resourceVersions are those of the objects this pass wrote, by kind/name: a second
	// write of the same object takes the first one's as its precondition.
	resourceVersions map[string]string
	// nodesWritten are the nodes a step of this pass wrote, which later steps leave alone.
	nodesWritten map[string]bool
	// renderConditions are the RenderDegraded conditions the render step decided, by pool,
	// which the pool's status write of this pass carries.
	renderConditions map[string]condition
	// failures are the writes of this pass that failed, conflicts included.
	failures []error
	// vmMemory is the memory VMs take on each node, with those placed in this pass (VMs only).
	vmMemory map[string]int64
	// migrated are the VMs whose migration this pass ended: the snapshot still shows them
	// on the node they left.
	migrated map[string]bool
}

func objectKey(gvk schema.GroupVersionKind, namespace, name string) string {
	if namespace == "" {
		return gvk.Kind + "/" + name
	}
	return gvk.Kind + "/" + namespace + "/" + name
}

// newObject is an empty object of the kind: a typed Node, anything else unstructured.
func newObject(gvk schema.GroupVersionKind, name string) client.Object {
	var obj client.Object
	if gvk == nodeGVK {
		obj = &corev1.Node{}
	} else {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		obj = u
	}
	obj.SetName(name)
	return obj
}

func (s *Simulator) expect(gvk schema.GroupVersionKind, name, resourceVersion string, created bool) {
	s.expectIn(gvk, "", name, resourceVersion, created)
}

// expectIn is expect for an object of a namespace.
func (s *Simulator) expectIn(gvk schema.GroupVersionKind, namespace, name, resourceVersion string, created bool) {
	s.expectations[objectKey(gvk, namespace, name)] = expectation{
		gvk: gvk, namespace: namespace, name: name, resourceVersion: resourceVersion, created: created,
		deadline: time.Now().Add(expectationTimeout),
	}
}

// awaitingCache tells whether a write of the simulator is not in its cache yet, and until
// when to wait for it at most.
func (s *Simulator) awaitingCache(ctx context.Context) (bool, time.Time) {
	var until time.Time
	now := time.Now()
	for key, e := range s.expectations {
		if now.After(e.deadline) {
			s.logf("the cache did not show the write of %s within %s; going on without it", key, expectationTimeout)
			delete(s.expectations, key)
			continue
		}
		obj := newObject(e.gvk, e.name)
		err := s.cache.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: e.name}, obj)
		switch {
		case apierrors.IsNotFound(err) && !e.created:
			delete(s.expectations, key)
			continue
		case err == nil && e.resourceVersion != "" && atLeast(obj.GetResourceVersion(), e.resourceVersion):
			delete(s.expectations, key)
			continue
		}
		if until.IsZero() || e.deadline.Before(until) {
			until = e.deadline
		}
	}
	return len(s.expectations) > 0, until
}

// atLeast tells whether resourceVersion have is want or a later one. The API server's
// resourceVersions are etcd revisions, integers that only grow; anything else is compared
// as an opaque string.
func atLeast(have, want string) bool {
	h, errH := strconv.ParseUint(have, 10, 64)
	w, errW := strconv.ParseUint(want, 10, 64)
	if errH != nil || errW != nil {
		return have == want
	}
	return h >= w
}

// patch merge-patches the object (its status subresource when status is set) with body,
// the resourceVersion the pass knows of it as a precondition: a write judged on an object
// that changed since fails with a conflict, and the change that caused it brings a new pass.
func (s *Simulator) patch(ctx context.Context, p *pass, gvk schema.GroupVersionKind, name, resourceVersion string,
	body map[string]any, status bool) error {
	return s.patchIn(ctx, p, gvk, "", name, resourceVersion, body, status)
}

// patchIn is patch for an object of a namespace.
func (s *Simulator) patchIn(ctx context.Context, p *pass, gvk schema.GroupVersionKind, namespace, name, resourceVersion string,
	body map[string]any, status bool) error {
	key := objectKey(gvk, namespace, name)
	if latest, ok := p.resourceVersions[key]; ok {
		resourceVersion = latest
	}
	metadata, _ := body["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
		body["metadata"] = metadata
	}
	metadata["resourceVersion"] = resourceVersion
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	obj := newObject(gvk, name)
	obj.SetNamespace(namespace)
	patch := client.RawPatch(types.MergePatchType, data)
	if status {
		err = s.client.Status().Patch(ctx, obj, patch, client.FieldOwner(fieldOwner))
	} else {
		err = s.client.Patch(ctx, obj, patch, client.FieldOwner(fieldOwner))
	}
	if err != nil {
		what := gvk.Kind
		if status {
			what += " status"
		}
		if namespace != "" {
			name = namespace + "/" + name
		}
		return fmt.Errorf("patch %s %s: %w", what, name, err)
	}
	p.resourceVersions[key] = obj.GetResourceVersion()
	s.expectIn(gvk, namespace, name, obj.GetResourceVersion(), false)
	return nil
}

// create creates obj; an object of that name that exists already is left as it is.
func (s *Simulator) create(ctx context.Context, obj *unstructured.Unstructured) error {
	err := s.client.Create(ctx, obj, client.FieldOwner(fieldOwner))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	s.expectIn(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion(), true)
	return nil
}

// remove deletes the object of the kind and name, if it exists.
func (s *Simulator) remove(ctx context.Context, gvk schema.GroupVersionKind, name string) error {
	return s.removeIn(ctx, gvk, "", name)
}

// removeIn is remove for an object of a namespace.
func (s *Simulator) removeIn(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) error {
	obj := newObject(gvk, name)
	obj.SetNamespace(namespace)
	err := s.client.Delete(ctx, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		if namespace != "" {
			name = namespace + "/" + name
		}
		return fmt.Errorf("delete %s %s: %w", gvk.Kind, name, err)
	}
	s.expectIn(gvk, namespace, name, "", false)
	return nil
}

// report logs a failed write and, unless it was a conflict (whose cause brings a new pass),
// asks for a retry.
func (s *Simulator) report(p *pass, err error) {
	if err == nil {
		return
	}
	p.failures = append(p.failures, err)
	if apierrors.IsConflict(err) {
		return
	}
	s.logf("error: %v (retrying)", err)
	s.wakeAt(p.now.Add(retryInterval))
}
