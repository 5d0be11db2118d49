package watches

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// How long a read waits for the watch of what it reads to list it first: a list of a whole
// kind for as long as thousands of Nodes may take to stream, one object for a round trip
// (an API server that is starting may keep it waiting for a second; reading it again
// costs little).
const (
	listSyncWait   = 10 * time.Second
	objectSyncWait = 100 * time.Millisecond
)

// Reader is reader, through which config's profile reads what its plan is rendered from,
// made to watch each input before it reads it: the input's cache is started (when no plan
// watches it yet) and has listed it before the read is sent. A change after the read then
// comes as an event of that cache, so the cache's initial list, which the read has seen,
// wakes no config. A read whose cache has not listed in time (listSyncWait, objectSyncWait),
// or failed to, goes ahead, and that cache's initial list wakes the input's configs instead;
// so do the later reads of the input, at once.
func (w *Watches) Reader(config string, reader client.Reader) client.Reader {
	if w == nil {
		return reader
	}
	return &watchingReader{w: w, config: config, reader: reader}
}

type watchingReader struct {
	w      *Watches
	config string
	reader client.Reader
}

var (
	_ client.Reader   = (*watchingReader)(nil)
	_ plan.ItemLister = (*watchingReader)(nil)
)

func (r *watchingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.watchBefore(ctx, obj, key.Namespace, key.Name)
	return r.reader.Get(ctx, key, obj, opts...)
}

func (r *watchingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.watchBefore(ctx, list, namespaceOf(opts), "")
	return r.reader.List(ctx, list, opts...)
}

func (r *watchingReader) ListEach(ctx context.Context, list client.ObjectList, each func(client.Object) error,
	opts ...client.ListOption) error {
	r.watchBefore(ctx, list, namespaceOf(opts), "")
	return plan.ListEach(ctx, r.reader, list, each, opts...)
}

func namespaceOf(opts []client.ListOption) string {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	return lo.Namespace
}

// watchBefore watches the input obj (an object, or a list when name is empty) for the
// reader's config, and waits for its cache to list it.
func (r *watchingReader) watchBefore(ctx context.Context, obj runtime.Object, namespace, name string) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		var err error
		if gvk, err = apiutil.GVKForObject(obj, r.w.scheme); err != nil {
			return // the read itself says what is wrong
		}
	}
	if name == "" {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	k := plan.TargetKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: namespace, Name: name}
	if !watchedInput(k) {
		return
	}
	r.w.mu.Lock()
	r.w.addConfigLocked(k, r.config)
	in := r.w.watchInputLocked(k, r.config, false)
	r.w.mu.Unlock()
	if in == nil || in.initialListWakes.Load() {
		return // not watched, or its list wakes the configs anyway: nothing to wait for
	}
	limit := listSyncWait
	if name != "" {
		limit = objectSyncWait
	}
	wait := time.NewTimer(limit)
	defer wait.Stop()
	select {
	case <-in.synced:
		return
	case <-in.failed:
	case <-ctx.Done():
	case <-wait.C:
	}
	in.initialListWakes.Store(true)
	r.w.log.V(1).Info("reading an input its watch has not listed yet", "input", k.String(), "config", r.config)
}
