package watches

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"
	"unique"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
	"github.com/kubevirt/virt-advisor-operator/internal/vmforecast"
)

// The VirtualMachineInstances the VM forecast reads come from one informer of their own,
// which keeps of each only the few fields the forecast decides from (vmiFacts). It is not
// one of the manager's cache's ByObject entries: those are resolved when the manager
// starts, and a cluster without KubeVirt would then fail to start the operator. It starts
// with the first plan whose rollout drains nodes, once the CRD is served and the
// instances are readable, and stops when the CRD changes (CRDChanged).

// vmiSyncTimeout bounds the wait for the informer's first list: a forecast that cannot
// read the VMs says so rather than holding the plan.
const vmiSyncTimeout = 30 * time.Second

// VMIsKey is the key the configs whose status carries a VM forecast are tracked under:
// every change of a VirtualMachineInstance the forecast reads wakes them, to refresh it.
var VMIsKey = plan.TargetKey{Group: targets.VirtualMachineInstance.GVK.Group, Kind: targets.VirtualMachineInstance.GVK.Kind}

// VMsUnknownError says why the VMs cannot be read: the forecast shows it instead of
// counts, and the plan goes on. NotInstalled: the cluster serves no
// VirtualMachineInstances at all, so it runs no VMs.
type VMsUnknownError struct {
	Reason       string
	NotInstalled bool
}

func (e *VMsUnknownError) Error() string { return e.Reason }

// vmiWatch is the informer of the VirtualMachineInstances.
type vmiWatch struct {
	cache cache.Cache
	stop  context.CancelFunc
	// ctx ends when the informer stops.
	ctx context.Context
	// watched: its events reach the controller.
	watched bool
}

func vmiObject() *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(targets.VirtualMachineInstance.GVK)
	return o
}

func vmiList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(targets.VirtualMachineInstance.ListGVK(targets.VirtualMachineInstance.GVK.Version))
	return l
}

// VMIs lists the VirtualMachineInstances, as vmiFacts keeps them, from the informer,
// which it starts when it has not yet. reader reads uncached: once, before the informer
// starts, it checks that they are readable. A *VMsUnknownError says why they cannot be
// read. Without a manager (no cache), they are listed through reader. The instances are
// the informer's own: nothing changes them.
func (w *Watches) VMIs(ctx context.Context, reader client.Reader) ([]*vmforecast.Instance, error) {
	if w == nil || w.nodes == nil {
		list := vmiList()
		if err := reader.List(ctx, list); err != nil {
			return nil, vmisUnreadable(err)
		}
		out := make([]*vmforecast.Instance, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, vmforecast.InstanceOf(&list.Items[i]))
		}
		return out, nil
	}
	vw, err := w.vmiCache(ctx, reader)
	if err != nil {
		return nil, err
	}
	c := vw.cache
	ctx, cancel := context.WithTimeout(ctx, vmiSyncTimeout)
	defer cancel()
	// An informer dropped while it starts (its kind went away) ends the wait at once.
	defer context.AfterFunc(vw.ctx, cancel)()
	var inf cache.Informer
	if c.WaitForCacheSync(ctx) {
		// The informer's first list: GetInformer returns once it synced.
		inf, err = c.GetInformer(ctx, vmiObject())
	} else if err = ctx.Err(); err == nil {
		err = errors.New("its cache stopped")
	}
	switch {
	case err != nil && vw.ctx.Err() != nil:
		return nil, fmt.Errorf("the VirtualMachineInstance informer stopped before its first list (the kind is served no more, or changed): %w", err)
	case err != nil:
		w.dropVMIs(vw)
		return nil, fmt.Errorf("the VirtualMachineInstance informer did not start: %w", err)
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("read VirtualMachineInstances from their informer: %T has no store", inf)
	}
	stored := shared.GetStore().List()
	out := make([]*vmforecast.Instance, 0, len(stored))
	for _, o := range stored {
		if in, ok := o.(*vmforecast.Instance); ok {
			out = append(out, in)
		}
	}
	return out, nil
}

// vmiCache is the informer, started when the CRD is served and the instances are
// readable.
func (w *Watches) vmiCache(ctx context.Context, reader client.Reader) (*vmiWatch, error) {
	w.mu.Lock()
	vw := w.vmis
	w.mu.Unlock()
	if vw != nil {
		return vw, nil
	}
	crd := CRDMetadata()
	if err := w.nodes.Get(ctx, client.ObjectKey{Name: targets.VirtualMachineInstance.CRD}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &VMsUnknownError{Reason: "the cluster serves no VirtualMachineInstances: install " + targets.VirtualMachineInstance.Operator,
				NotInstalled: true}
		}
		return nil, fmt.Errorf("read CRD %s: %w", targets.VirtualMachineInstance.CRD, err)
	}
	probe := &metav1.PartialObjectMetadataList{}
	probe.SetGroupVersionKind(vmiList().GroupVersionKind())
	if err := reader.List(ctx, probe, client.Limit(1)); err != nil {
		return nil, vmisUnreadable(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.vmis != nil {
		return w.vmis, nil
	}
	if w.ctx == nil {
		return nil, fmt.Errorf("the VirtualMachineInstance informer cannot start before the manager")
	}
	cctx, stop := context.WithCancel(w.ctx)
	vw = &vmiWatch{stop: stop, ctx: cctx}
	c, err := cache.New(w.cfg, cache.Options{HTTPClient: w.httpClient, Scheme: w.scheme, Mapper: w.mapper,
		DefaultTransform: vmiFacts,
		DefaultWatchErrorHandler: func(ctx context.Context, r *toolscache.Reflector, err error) {
			toolscache.DefaultWatchErrorHandler(ctx, r, err)
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				// The CRD was deleted after the informer started (the API server may serve
				// a kind a moment after its CRD is gone): it would list in vain forever.
				w.dropVMIs(vw)
			}
		}})
	if err != nil {
		stop()
		return nil, fmt.Errorf("start the VirtualMachineInstance informer: %w", err)
	}
	vw.cache = c
	go func() {
		if err := c.Start(cctx); err != nil {
			w.log.Error(err, "VirtualMachineInstance informer stopped")
		}
	}()
	w.vmis = vw
	w.log.Info("reading VirtualMachineInstances for the VM forecast")
	return vw, nil
}

// dropVMIs stops the informer vw, unless another has replaced it: the next forecast
// checks again whether the kind is served.
func (w *Watches) dropVMIs(vw *vmiWatch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.vmis != vw {
		return
	}
	w.vmis.stop()
	w.vmis = nil
	w.log.Info("stopped reading VirtualMachineInstances: they could not be listed")
}

// vmisUnreadable says why the instances cannot be listed.
func vmisUnreadable(err error) error {
	switch {
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
		return &VMsUnknownError{Reason: "the cluster serves no kubevirt.io/v1 VirtualMachineInstances: install " + targets.VirtualMachineInstance.Operator,
			NotInstalled: true}
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return &VMsUnknownError{Reason: "VirtualMachineInstances are not readable: " + err.Error()}
	}
	return fmt.Errorf("list VirtualMachineInstances: %w", err)
}

// watchVMIsLocked feeds the informer's events to the controller, once it runs: they wake
// the configs tracked under VMIsKey.
func (w *Watches) watchVMIsLocked() {
	if w.vmis == nil || w.vmis.watched || w.ctx == nil {
		return
	}
	keyOf := func(named) []plan.TargetKey { return []plan.TargetKey{VMIsKey} }
	src := w.source(w.vmis.cache, vmiObject(), keyOf, vmiChanged)
	src.stopped = w.vmis.ctx.Done()
	if err := w.ctrl.Watch(src); err != nil {
		w.log.Error(err, "cannot watch the VirtualMachineInstances")
		return
	}
	w.vmis.watched = true
}

// dropVMIsLocked stops the informer when a CRD of its group changed: the reconciles the
// CRD event starts read the kind as it is served now.
func (w *Watches) dropVMIsLocked(group string) {
	if w.vmis == nil || group != targets.VirtualMachineInstance.GVK.Group {
		return
	}
	w.vmis.stop()
	w.vmis = nil
}

// stopUnusedVMIsLocked stops the informer when no config's VM forecast can change any
// more: the VMIs leave memory until a plan needs them again.
func (w *Watches) stopUnusedVMIsLocked() {
	if w.vmis == nil || len(w.configs[VMIsKey]) > 0 {
		return
	}
	w.vmis.stop()
	w.vmis = nil
	w.log.Info("stopped reading VirtualMachineInstances: no plan's VM forecast can change")
}

// vmiFacts is the transform of the VirtualMachineInstance informer: an instance is kept as
// a vmforecast.Instance, its name, namespace, UID and resourceVersion and the dozen values
// the forecast decides from. A VMI carries its whole domain spec, volumes, interfaces and
// status. The strings many instances share (namespace, node, phase, eviction strategy, why
// one cannot migrate) are kept once (unique.Make).
func vmiFacts(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // kept already
	}
	in := vmforecast.InstanceOf(u)
	for _, s := range []*string{&in.Namespace, &in.Node, &in.Phase, &in.EvictionStrategy, &in.NotMigratableReason} {
		*s = unique.Make(*s).Value()
	}
	return in, nil
}

// vmiChanged tells whether an update changed what the informer keeps of an instance
// (vmiFacts), its resourceVersion aside: a VMI's status changes often in ways the forecast
// does not see.
func vmiChanged(old, updated any) bool {
	o, ok1 := old.(*vmforecast.Instance)
	n, ok2 := updated.(*vmforecast.Instance)
	if !ok1 || !ok2 {
		return true
	}
	a, b := *o, *n
	a.ResourceVersion, b.ResourceVersion = "", ""
	return !reflect.DeepEqual(a, b)
}

// vmForecastInputs is VMIsKey when the config shows a VM forecast that VMs moving would
// change (while its plan or a drift correction waits for review, or its batch has not
// started rolling out), or
// counts what a rollout under way does to the VMs (a VM that starts blocking a drain).
func vmForecastInputs(vpc *advisorv1alpha1.VirtPlatformConfig) []plan.TargetKey {
	switch vpc.Status.Phase {
	case advisorv1alpha1.PhaseReviewRequired, advisorv1alpha1.PhaseInProgress, advisorv1alpha1.PhaseDrifted:
	default:
		return nil
	}
	for _, ro := range vpc.Status.Rollouts {
		if ro.VMs == nil {
			continue
		}
		if ro.RolloutStartedAt == nil || (ro.VMs.UnknownReason == "" && ro.VMsActual == nil) {
			return []plan.TargetKey{VMIsKey}
		}
	}
	return nil
}
