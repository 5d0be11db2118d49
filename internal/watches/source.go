package watches

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// source feeds the events of one kind of a cache to the controller: each event enqueues
// the configs whose plans name its object (keyOf maps it), its updates as events says.
// The creations of a cache's initial list wake them all, while initialListWakes (nil:
// always) says so: an object may have changed between the read a plan was rendered from
// and the list.
func (w *Watches) source(c cache.Cache, obj client.Object, keyOf func(named) plan.TargetKey,
	events eventKind, initialListWakes func() bool) *informerSource {
	return &informerSource{cache: c, obj: obj, synced: make(chan struct{}),
		handler: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) toolscache.ResourceEventHandler {
			enqueue := func(reqs []reconcile.Request) {
				for _, req := range reqs {
					q.Add(req)
				}
			}
			return toolscache.ResourceEventHandlerDetailedFuncs{
				AddFunc: func(o any, initial bool) {
					if initial && initialListWakes != nil && !initialListWakes() {
						return
					}
					switch created := o.(type) {
					case client.Object:
						enqueue(w.created(keyOf(created), created, !initial))
					case named:
						enqueue(w.configsOf(keyOf(created), nil))
					}
				},
				UpdateFunc: func(o, n any) {
					switch old := o.(type) {
					case client.Object:
						if updated, ok := n.(client.Object); ok {
							enqueue(w.woken(keyOf(updated), old, updated, events))
						}
					case *labelledObject:
						if updated, ok := n.(*labelledObject); ok && updated.LabelsDigest != old.LabelsDigest {
							enqueue(w.configsOf(keyOf(updated), nil))
						}
					}
				},
				DeleteFunc: func(o any) {
					if tombstone, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
						o = tombstone.Obj // a deletion seen only by a relist
					}
					if deleted, ok := o.(named); ok {
						enqueue(w.configsOf(keyOf(deleted), nil))
					}
				},
			}
		}}
}

// informerSource is the source of one cache's informer of obj: it hands the informer's
// events to handler, and closes synced once the informer has listed and handed the list
// to handler (without the polling of the sources controller-runtime offers, so a read
// that waits for it waits only as long as the list takes).
type informerSource struct {
	cache   cache.Cache
	obj     client.Object
	handler func(workqueue.TypedRateLimitingInterface[reconcile.Request]) toolscache.ResourceEventHandler
	synced  chan struct{}
	// stopped is closed when the cache stops (nil: with the controller).
	stopped <-chan struct{}
}

var _ source.SyncingSource = (*informerSource)(nil)

// Start implements source.Source.
func (s *informerSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	inf, err := s.cache.GetInformer(ctx, s.obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(s.handler(q))
	if err != nil {
		return err
	}
	go func() {
		select {
		case <-reg.HasSyncedChecker().Done():
			close(s.synced)
		case <-ctx.Done():
		case <-s.stopped:
		}
	}()
	return nil
}

// WaitForSync implements source.SyncingSource.
func (s *informerSource) WaitForSync(ctx context.Context) error {
	select {
	case <-s.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
