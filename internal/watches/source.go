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

// source feeds the events of one kind of a cache to the controller: each creation, update
// and deletion enqueues the configs whose plans name its object (keyOf maps it). changed,
// when set, tells an update that changed nothing the cache keeps (nil: every update counts).
func (w *Watches) source(c cache.Cache, obj client.Object, keyOf func(named) []plan.TargetKey,
	changed func(old, updated any) bool) *informerSource {
	return &informerSource{cache: c, obj: obj, synced: make(chan struct{}),
		handler: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) toolscache.ResourceEventHandler {
			enqueue := func(o any) {
				if tombstone, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
					o = tombstone.Obj // a deletion seen only by a relist
				}
				n, ok := o.(named)
				if !ok {
					return
				}
				for _, k := range keyOf(n) {
					for _, req := range w.configsOf(k) {
						q.Add(req)
					}
				}
			}
			return toolscache.ResourceEventHandlerFuncs{
				AddFunc: func(o any) { enqueue(o) },
				UpdateFunc: func(o, n any) {
					if changed == nil || changed(o, n) {
						enqueue(n)
					}
				},
				DeleteFunc: enqueue,
			}
		}}
}

// informerSource is the source of one cache's informer of obj: it hands the informer's
// events to handler.
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
