package vmforecast_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/vmforecast"
)

// vmiYAML is a VirtualMachineInstance as virt-controller and virt-handler leave a running
// one (kubevirt.io/v1), with spec and status lines to add.
func vmiYAML(spec, status string) string { return vmiWithDomain("", spec, status) }

// vmiWithDomain is vmiYAML with lines to add to spec.domain.
func vmiWithDomain(domain, spec, status string) string {
	return `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: pg-0
  namespace: db
  ownerReferences:
  - {apiVersion: kubevirt.io/v1, kind: VirtualMachine, name: pg-0, uid: 1d7a, controller: true, blockOwnerDeletion: true}
spec:
  domain:
    devices:
      disks:
      - {name: rootdisk, disk: {bus: virtio}}
    resources:
      requests: {memory: 2Gi}
` + domain + spec + `
status:
  nodeName: worker-1
  phase: Running
  conditions:
  - {type: Ready, status: "True", lastProbeTime: null, lastTransitionTime: "2026-08-01T10:00:00Z"}
` + status
}

const vmYAML = `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: pg-0, namespace: db}
spec:
  runStrategy: Always
  template:
    spec:
      domain: {devices: {}}
`

func objectOf(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("%v in\n%s", err, doc)
	}
	return u
}

func TestFromObjects(t *testing.T) {
	poolNodes := map[string]map[string]string{
		"worker-0": {"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": "worker-0", "disk": "ssd"},
		"worker-1": {"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": "worker-1", "disk": "ssd"},
		"worker-2": {"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": "worker-2"},
	}
	migratable := `
  - {type: LiveMigratable, status: "True", lastProbeTime: null, lastTransitionTime: null}`
	base := vmforecast.VM{Namespace: "db", Name: "pg-0", Node: "worker-1", MemoryBytes: 2 << 30, RunStrategy: "Always"}
	with := func(change func(*vmforecast.VM)) vmforecast.VM {
		vm := base
		change(&vm)
		return vm
	}
	cases := []struct {
		name         string
		domain       string
		spec, status string
		vm           string
		nodes        map[string]map[string]string
		want         vmforecast.VM
		running      bool
	}{
		{name: "when it is LiveMigratable, owned by a VM and sets no strategy, it reads so",
			status: migratable, vm: vmYAML, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) { v.LiveMigratable = true }), running: true},
		{name: "when LiveMigratable is False, the reason and message say why",
			status: `
  - {type: LiveMigratable, status: "False", reason: DisksNotLiveMigratable, message: "cannot migrate VMI: PVC rootdisk is not shared", lastProbeTime: null, lastTransitionTime: null}`,
			vm: vmYAML, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) {
				v.NotMigratableReason = "DisksNotLiveMigratable: cannot migrate VMI: PVC rootdisk is not shared"
			}), running: true},
		{name: "when there is no LiveMigratable condition, it cannot migrate",
			vm: vmYAML, nodes: poolNodes,
			want:    with(func(v *vmforecast.VM) { v.NotMigratableReason = "no LiveMigratable condition" }),
			running: true},
		{name: "when it sets its own strategy, tolerates every taint, and no VM owns it",
			spec: `
  evictionStrategy: LiveMigrateIfPossible
  tolerations:
  - {operator: Exists}`, status: migratable, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) {
				v.EvictionStrategy, v.LiveMigratable, v.ToleratesUpdateTaint, v.RunStrategy = "LiveMigrateIfPossible", true, true, ""
			}), running: true},
		{name: "when it tolerates UpdateInProgress by key, any effect",
			spec: `
  tolerations:
  - {key: UpdateInProgress, operator: Exists}`, status: migratable, vm: vmYAML, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) { v.LiveMigratable, v.ToleratesUpdateTaint = true, true }), running: true},
		{name: "when it tolerates another taint only, it does not tolerate the update taint",
			spec: `
  tolerations:
  - {key: node-role.kubernetes.io/infra, operator: Exists, effect: NoSchedule}
  - {key: UpdateInProgress, operator: Exists, effect: NoSchedule}`, status: migratable, vm: vmYAML, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) { v.LiveMigratable = true }), running: true},
		{name: "when its nodeSelector leaves out a node of the pool, it is pinned",
			spec: `
  nodeSelector: {disk: ssd}`, status: migratable, vm: vmYAML, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) { v.LiveMigratable, v.Pinned = true, true }), running: true},
		{name: "when its nodeSelector matches every node of the pool, it is not pinned",
			spec: `
  nodeSelector: {node-role.kubernetes.io/worker: ""}`, status: migratable, vm: vmYAML, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) { v.LiveMigratable = true }), running: true},
		{name: "when its required node affinity leaves out a node of the pool, it is pinned",
			spec: `
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: kubernetes.io/hostname, operator: In, values: [worker-0, worker-1]}`,
			status: migratable, vm: vmYAML, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) { v.LiveMigratable, v.Pinned = true, true }), running: true},
		{name: "when its required node affinity allows every node, preferred terms aside, it is not pinned",
			spec: `
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: node-role.kubernetes.io/worker, operator: Exists}
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        preference:
          matchFields:
          - {key: metadata.name, operator: In, values: [worker-2]}`,
			status: migratable, vm: vmYAML, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) { v.LiveMigratable = true }), running: true},
		{name: "when no pool nodes are known, any required selector counts as pinned",
			spec: `
  nodeSelector: {node-role.kubernetes.io/worker: ""}`, status: migratable, vm: vmYAML,
			want: with(func(v *vmforecast.VM) { v.LiveMigratable, v.Pinned = true, true }), running: true},
		{name: "when the guest reports its current memory, that is what a migration copies",
			domain: `
    memory: {guest: 4Gi}`, status: migratable + `
  memory: {guestAtBoot: 4Gi, guestCurrent: 3Gi}`, vm: vmYAML, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) { v.LiveMigratable, v.MemoryBytes = true, 3<<30 }), running: true},
		{name: "when the guest reports no memory, what spec.domain.memory gives it counts",
			domain: `
    memory: {guest: 4Gi}`, status: migratable, vm: vmYAML, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) { v.LiveMigratable, v.MemoryBytes = true, 4<<30 }), running: true},
		{name: "when it has succeeded, it does not run",
			status: migratable + `
  phase: Succeeded`, vm: vmYAML, nodes: poolNodes,
			want: with(func(v *vmforecast.VM) { v.LiveMigratable = true }), running: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vmi := objectOf(t, vmiWithDomain(c.domain, c.spec, c.status))
			var vm *unstructured.Unstructured
			if c.vm != "" {
				vm = objectOf(t, c.vm)
			}
			got, running, err := vmforecast.FromObjects(vmi, vm, c.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || running != c.running {
				t.Errorf("FromObjects = %+v running=%v,\nwant %+v running=%v", got, running, c.want, c.running)
			}
		})
	}
}

func TestFromObjectsRunStrategy(t *testing.T) {
	vmi := objectOf(t, vmiYAML("", ""))
	for _, c := range []struct{ spec, want string }{
		{"runStrategy: RerunOnFailure", "RerunOnFailure"},
		{"running: true", "Always"},
		{"running: false", "Halted"},
		{"# neither runStrategy nor running", "Halted"},
	} {
		vm := objectOf(t, strings.Replace(vmYAML, "runStrategy: Always", c.spec, 1))
		got, _, err := vmforecast.FromObjects(vmi, vm, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.RunStrategy != c.want {
			t.Errorf("a VirtualMachine with %s has run strategy %q, want %q", c.spec, got.RunStrategy, c.want)
		}
	}
}

func TestFromObjectsRefusesAnotherVM(t *testing.T) {
	vmi := objectOf(t, vmiYAML("", ""))
	other := objectOf(t, strings.Replace(vmYAML, "name: pg-0", "name: pg-1", 1))
	if _, _, err := vmforecast.FromObjects(vmi, other, nil); err == nil || !strings.Contains(err.Error(), "does not own") {
		t.Errorf("FromObjects with another VirtualMachine: %v, want an error saying it does not own the instance", err)
	}
}
