package watches

import (
	"testing"
	"unsafe"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/vmforecast"
)

const fullVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: pg-0
  namespace: db
  uid: 6f1c
  resourceVersion: "42"
  labels: {app: pg}
  annotations: {kubevirt.io/latest-observed-api-version: v1}
  ownerReferences: [{apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: pg-0, uid: 9a0b}]
spec:
  evictionStrategy: LiveMigrate
  nodeSelector: {disk: ssd}
  tolerations: [{key: UpdateInProgress, operator: Exists}]
  domain:
    cpu: {cores: 4}
    devices: {disks: [{name: root, disk: {bus: virtio}}], interfaces: [{name: default, masquerade: {}}]}
    memory: {guest: 8Gi}
  volumes: [{name: root, dataVolume: {name: pg-0-root}}]
status:
  nodeName: worker-2
  phase: Running
  memory: {guestCurrent: 8Gi, guestAtBoot: 8Gi}
  interfaces: [{name: default, ipAddress: 10.128.2.7}]
  conditions:
  - {type: Ready, status: "True"}
  - {type: LiveMigratable, status: "False", reason: DisksNotLiveMigratable, message: "PVC pg-0-root is not shared", lastProbeTime: null}
`

func TestVMIFactsKeepWhatTheForecastDecidesFromAndNothingElse(t *testing.T) {
	full := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(fullVMI), &full.Object); err != nil {
		t.Fatal(err)
	}
	kept, err := vmiFacts(full)
	if err != nil {
		t.Fatal(err)
	}
	in, ok := kept.(*vmforecast.Instance)
	if !ok {
		t.Fatalf("the informer keeps a %T", kept)
	}
	if in.GetLabels() != nil || in.GetAnnotations() != nil || in.GetOwnerReferences() != nil {
		t.Errorf("the informer keeps metadata beyond the name, namespace, UID and resourceVersion: %+v", in)
	}
	if in.Name != "pg-0" || in.Namespace != "db" || in.UID != "6f1c" || in.ResourceVersion != "42" {
		t.Errorf("kept %+v", in)
	}
	if again, _ := vmiFacts(in); again != kept {
		t.Error("an instance kept already is kept anew")
	}
	want, _, err := vmforecast.FromObjects(full, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, running, err := vmforecast.FromInstance(in, nil, nil)
	if err != nil || !running {
		t.Fatalf("FromInstance of the kept VMI: running %v, %v", running, err)
	}
	if got != want {
		t.Errorf("the forecast reads other facts from the kept VMI:\n got %+v\nwant %+v", got, want)
	}
	if got.MemoryBytes != 8<<30 || got.LiveMigratable || !got.ToleratesUpdateTaint || !got.Pinned {
		t.Errorf("facts %+v", got)
	}

	other := full.DeepCopy()
	other.SetNamespace("db")
	kept2, _ := vmiFacts(other)
	if in2 := kept2.(*vmforecast.Instance); unsafe.StringData(in2.Node) != unsafe.StringData(in.Node) ||
		unsafe.StringData(in2.NotMigratableReason) != unsafe.StringData(in.NotMigratableReason) {
		t.Error("two instances on the same node do not share its name and the reason they cannot migrate")
	}

	moved := in.DeepCopyObject().(*vmforecast.Instance)
	moved.ResourceVersion = "43"
	if vmiChanged(in, moved) {
		t.Error("an update that changes nothing the informer keeps wakes the configs")
	}
	moved.Node = "worker-0"
	if !vmiChanged(in, moved) {
		t.Error("a VMI that moved to another node does not wake the configs")
	}
}

func TestOnlyAConfigWhoseVMForecastCanStillChangeWatchesTheVMIs(t *testing.T) {
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	vpc.Status.Phase = advisorv1alpha1.PhaseReviewRequired
	vpc.Status.Rollouts = []advisorv1alpha1.PoolRollout{{Pool: "worker", VMs: &advisorv1alpha1.VMForecast{Migrations: 3}}}
	if got := vmForecastInputs(vpc); len(got) != 1 || got[0] != VMIsKey {
		t.Errorf("a plan under review with a VM forecast: %v", got)
	}
	vpc.Status.Phase = advisorv1alpha1.PhaseCompleted
	if got := vmForecastInputs(vpc); len(got) != 0 {
		t.Errorf("a completed config: %v", got)
	}
	vpc.Status.Phase = advisorv1alpha1.PhaseReviewRequired
	vpc.Status.Rollouts[0].VMs = nil
	if got := vmForecastInputs(vpc); len(got) != 0 {
		t.Errorf("a plan that drains no node: %v", got)
	}
}

func TestTheVMIInformerStopsWhenNoConfigsForecastCanChange(t *testing.T) {
	w := New(nil, nil, nil, nil, nil, nil, logr.Discard())
	stopped := false
	w.vmis = &vmiWatch{stop: func() { stopped = true }}
	w.mu.Lock()
	w.addConfigLocked(VMIsKey, "a")
	w.addConfigLocked(VMIsKey, "b")
	w.mu.Unlock()

	w.Forget("a")
	if stopped || w.vmis == nil {
		t.Fatal("the informer stopped while config b's forecast can still change")
	}
	w.Forget("b")
	if !stopped || w.vmis != nil {
		t.Fatal("the informer runs on with no config whose VM forecast can change")
	}
}
