package watches

import (
	"context"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// readProbe is a reader that records, at each read, whether the watch of what it reads had
// listed it.
type readProbe struct {
	listed <-chan struct{}
	reads  []bool
}

func (p *readProbe) read() error {
	select {
	case <-p.listed:
		p.reads = append(p.reads, true)
	default:
		p.reads = append(p.reads, false)
	}
	return nil
}

func (p *readProbe) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return p.read()
}

func (p *readProbe) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return p.read()
}

var poolGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}

// watchedPool is the watch of MachineConfigPool worker, as the reader finds it, whose list
// and failure the test makes.
func watchedPool(w *Watches) (k plan.TargetKey, in *inputWatch, listed chan struct{}) {
	k = plan.TargetKey{Group: poolGVK.Group, Kind: poolGVK.Kind, Name: "worker"}
	listed = make(chan struct{})
	in = &inputWatch{configs: map[string]bool{}, synced: listed, failed: make(chan struct{})}
	w.inputs[k] = in
	return k, in, listed
}

func pool() *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(poolGVK)
	return o
}

func TestAReadOfAnInputIsSentOnlyOnceItsWatchHasListedItAndItsInitialListWakesNoConfig(t *testing.T) {
	w := New(nil, nil, nil, nil, nil, logr.Discard())
	k, in, listed := watchedPool(w)
	probe := &readProbe{listed: listed}
	done := make(chan error)
	go func() {
		done <- w.Reader("c", probe).Get(context.Background(), client.ObjectKey{Name: "worker"}, pool())
	}()
	close(listed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(probe.reads, []bool{true}) {
		t.Fatalf("the read must wait until the watch of what it reads has listed it: reads after the list %v", probe.reads)
	}
	if !w.configs[k]["c"] || !in.configs["c"] {
		t.Errorf("the config must be registered with the watch before the read, so a change after the read wakes it")
	}
	if in.initialListWakes.Load() {
		t.Errorf("the initial list of a watch listed before the read must wake no config")
	}
}

func TestAReadWhoseWatchFailedToListGoesAheadAndThatWatchsInitialListWakesItsConfigs(t *testing.T) {
	w := New(nil, nil, nil, nil, nil, logr.Discard())
	_, in, listed := watchedPool(w)
	close(in.failed)
	probe := &readProbe{listed: listed}
	if err := w.Reader("c", probe).Get(context.Background(), client.ObjectKey{Name: "worker"}, pool()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(probe.reads, []bool{false}) {
		t.Fatalf("want one read, sent before the watch listed, got %v", probe.reads)
	}
	if !in.initialListWakes.Load() {
		t.Errorf("a watch that lists after the read must wake the config with its initial list")
	}
	if err := w.Reader("d", probe).Get(context.Background(), client.ObjectKey{Name: "worker"}, pool()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(probe.reads, []bool{false, false}) || !in.configs["d"] {
		t.Fatalf("a later read of an input whose list wakes its configs goes ahead at once, registered: got reads %v, configs %v",
			probe.reads, in.configs)
	}
}

func TestAReadCancelledWhileItWaitsGoesAheadAndTheInitialListWakesItsConfigs(t *testing.T) {
	w := New(nil, nil, nil, nil, nil, logr.Discard())
	k := plan.TargetKey{Group: poolGVK.Group, Kind: poolGVK.Kind}
	listed := make(chan struct{})
	in := &inputWatch{configs: map[string]bool{}, synced: listed, failed: make(chan struct{})}
	w.inputs[k] = in
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	probe := &readProbe{listed: listed}
	_ = w.Reader("c", probe).List(ctx, &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{
		APIVersion: poolGVK.GroupVersion().String(), Kind: "MachineConfigPoolList"}})
	if !slices.Equal(probe.reads, []bool{false}) {
		t.Fatalf("want the read sent (it fails on its own), got %v", probe.reads)
	}
	if !w.configs[k]["c"] || !in.configs["c"] {
		t.Errorf("a list is watched as the whole kind: want the config registered with %v, got %v", k, w.configs)
	}
	if !in.initialListWakes.Load() {
		t.Errorf("a watch that lists after the read must wake the config with its initial list")
	}
}

func TestCRDsAndRenderedMachineConfigsAreReadWithoutAWatch(t *testing.T) {
	w := New(nil, nil, nil, nil, nil, logr.Discard())
	probe := &readProbe{}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	rendered := &metav1.PartialObjectMetadata{}
	rendered.SetGroupVersionKind(schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"})
	r := w.Reader("c", probe)
	_ = r.Get(context.Background(), client.ObjectKey{Name: "machineconfigs.machineconfiguration.openshift.io"}, crd)
	_ = r.Get(context.Background(), client.ObjectKey{Name: "rendered-worker-5f1c8d0b"}, rendered)
	if len(probe.reads) != 2 || len(w.configs) != 0 {
		t.Errorf("want both read and nothing watched for them, got %d reads and %v", len(probe.reads), w.configs)
	}
}
