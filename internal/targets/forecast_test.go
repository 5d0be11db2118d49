package targets_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

func contentOf(t *testing.T, spec string) targets.NodeContent {
	t.Helper()
	c, err := targets.ContentOf(mcOf(spec))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestChangeOf(t *testing.T) {
	live := `
config:
  ignition: {version: 3.2.0}
  storage:
    files:
    - {path: /etc/a, contents: {source: "data:,a"}}
    - {path: /etc/b, contents: {source: "data:,b"}}
  systemd: {units: [{name: a.service, enabled: true}]}
kernelArguments: [psi=1, nosmt]
extensions: [usbguard]
`
	cases := []struct {
		name          string
		live, desired string
		want          targets.NodeChange
	}{
		{"when the MachineConfig is created, it should add all of it",
			"", `{kernelArguments: [psi=1], config: {ignition: {version: 3.2.0}, storage: {files: [{path: /etc/a, contents: {source: "data:,a"}}]}}}`,
			targets.NodeChange{Files: []string{"/etc/a"}, KernelArgumentsAdded: []string{"psi=1"}}},
		{"when nothing a node sees changes, it should change nothing, whatever the encoding or the Ignition version",
			live, `
config:
  ignition: {version: 3.4.0}
  storage:
    files:
    - {path: /etc/b, contents: {source: "data:;base64,Yg=="}}
    - {path: /etc/a, contents: {source: "data:,a"}}
  systemd: {units: [{name: a.service, enabled: true}]}
kernelArguments: [psi=1 nosmt]
extensions: [usbguard]
kernelType: default
`, targets.NodeChange{}},
		{"when files and units change or go, kernel arguments and extensions come and go, it should list each",
			live, `
config:
  ignition: {version: 3.2.0}
  storage: {files: [{path: /etc/a, contents: {source: "data:,A"}}]}
  systemd: {units: [{name: a.service, enabled: false}, {name: b.service, mask: true}]}
kernelArguments: [psi=1, mitigations=off]
extensions: [kernel-devel]
`, targets.NodeChange{
				Files: []string{"/etc/a", "/etc/b"}, Units: []string{"a.service", "b.service"},
				KernelArgumentsAdded: []string{"mitigations=off"}, KernelArgumentsRemoved: []string{"nosmt"},
				ExtensionsAdded: []string{"kernel-devel"}, ExtensionsRemoved: []string{"usbguard"},
			}},
		{"when the OS image, the kernel type and FIPS change, it should say so",
			`{kernelType: default}`, `{osImageURL: quay.io/os@sha256:2, kernelType: realtime, fips: true}`,
			targets.NodeChange{OSImage: true, KernelType: true, FIPS: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var before targets.NodeContent
			if tc.live != "" {
				before = contentOf(t, tc.live)
			}
			got := targets.ChangeOf(before, contentOf(t, tc.desired))
			g.Expect(got).To(Equal(tc.want))
			g.Expect(got.IsEmpty()).To(Equal(reflect.DeepEqual(tc.want, targets.NodeChange{})))
		})
	}
}

func TestChangeOfObject(t *testing.T) {
	g := NewWithT(t)
	change, err := targets.ChangeOfObject(nil, machineConfig(psiMC, "worker", psi()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(change).To(Equal(targets.NodeChange{KernelArgumentsAdded: []string{"psi=1"}}), "a MachineConfig created")

	kc := kubeletConfig("kc", map[string]any{poolLabel + "worker": ""})
	change, err = targets.ChangeOfObject(nil, kc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(change).To(Equal(targets.NodeChange{Files: []string{"/etc/kubernetes/kubelet.conf"}}), "a KubeletConfig created")

	change, err = targets.ChangeOfObject(kc.DeepCopy(), kc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(change.IsEmpty()).To(BeTrue(), "a KubeletConfig whose spec stays")

	changed := kc.DeepCopy()
	g.Expect(unstructured.SetNestedField(changed.Object, int64(250), "spec", "kubeletConfig", "maxPods")).To(Succeed())
	change, err = targets.ChangeOfObject(kc, changed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(change).To(Equal(targets.KubeletConfigChange()), "a KubeletConfig whose spec changes")

	descheduler := &unstructured.Unstructured{}
	descheduler.SetGroupVersionKind(targets.KubeDescheduler.GVK)
	change, err = targets.ChangeOfObject(nil, descheduler)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(change.IsEmpty()).To(BeTrue(), "a kind that rolls nothing out")
}

// forecastPool is a pool of nodes machines with spec.maxUnavailable (nil: unset).
func forecastPool(nodes int64, maxUnavailable any) *unstructured.Unstructured {
	p := pool{name: "worker", role: "worker", machines: nodes, updated: nodes}.object()
	if maxUnavailable != nil {
		p.Object["spec"].(map[string]any)["maxUnavailable"] = maxUnavailable
	}
	return p
}

// policy is a node disruption policy as the Machine Config Operator reports it, with the
// cluster defaults for the files it applies without a reboot.
var policy = &targets.DisruptionPolicy{
	Files: []targets.FileDisruptionPolicy{
		{Path: "/etc/kubernetes/kubelet-ca.crt", Actions: []targets.DisruptionAction{{Type: "None"}}},
		{Path: "/etc/containers/registries.conf", Actions: []targets.DisruptionAction{{Type: "Special"}}},
		{Path: "/etc/containers", Actions: []targets.DisruptionAction{{Type: "Reload", Service: "crio.service"}}},
		{Path: "/etc/containers/registries.d", Actions: []targets.DisruptionAction{{Type: "Restart", Service: "crio.service"}}},
		{Path: "/etc/drain-me", Actions: []targets.DisruptionAction{{Type: "Drain"}, {Type: "DaemonReload"}}},
	},
	Units: []targets.UnitDisruptionPolicy{
		{Name: "chronyd.service", Actions: []targets.DisruptionAction{{Type: "Restart", Service: "chronyd.service"}}},
	},
}

func TestForecastPool(t *testing.T) {
	karg := targets.NodeChange{KernelArgumentsAdded: []string{"psi=1"}}
	file := func(paths ...string) targets.NodeChange { return targets.NodeChange{Files: paths} }
	unit := func(names ...string) targets.NodeChange { return targets.NodeChange{Units: names} }
	cases := []struct {
		name    string
		pool    *unstructured.Unstructured
		changes []targets.NodeChange
		policy  *targets.DisruptionPolicy
		want    targets.PoolForecast
	}{
		{"when a kernel argument changes on a pool without maxUnavailable, it should reboot and drain one node at a time",
			forecastPool(6, nil), []targets.NodeChange{karg}, nil,
			targets.PoolForecast{Nodes: 6, MaxUnavailable: "1", Waves: 6, Reboot: true, Drain: true, Reasons: []string{"kernel arguments change"}}},
		{"when maxUnavailable is a number, it should take that many nodes a wave",
			forecastPool(6, int64(4)), []targets.NodeChange{karg}, policy,
			targets.PoolForecast{Nodes: 6, MaxUnavailable: "4", Waves: 2, Reboot: true, Drain: true, Reasons: []string{"kernel arguments change"}}},
		{"when maxUnavailable is a percent, it should round it down",
			forecastPool(5, "50%"), []targets.NodeChange{karg}, nil,
			targets.PoolForecast{Nodes: 5, MaxUnavailable: "50%", Waves: 3, Reboot: true, Drain: true, Reasons: []string{"kernel arguments change"}}},
		{"when a percent rounds down to no node, it should take one node a wave",
			forecastPool(3, "10%"), []targets.NodeChange{karg}, nil,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "10%", Waves: 3, Reboot: true, Drain: true, Reasons: []string{"kernel arguments change"}}},
		{"when nothing changes on the nodes, it should forecast no wave",
			forecastPool(3, nil), []targets.NodeChange{{}}, nil,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1"}},
		{"when the pool has no machines, it should forecast no wave",
			forecastPool(0, nil), []targets.NodeChange{karg}, nil,
			targets.PoolForecast{MaxUnavailable: "1", Reboot: true, Drain: true, Reasons: []string{"kernel arguments change"}}},
		{"when extensions, the kernel type, FIPS and the OS image change, it should reboot for each, whatever the policy",
			forecastPool(2, nil), []targets.NodeChange{{ExtensionsAdded: []string{"usbguard"}, KernelType: true, FIPS: true, OSImage: true}}, policy,
			targets.PoolForecast{Nodes: 2, MaxUnavailable: "1", Waves: 2, Reboot: true, Drain: true,
				Reasons: []string{"extensions change", "kernel type changes", "FIPS mode changes", "OS image changes"}}},
		{"when a file whose policy is None changes, it should neither reboot nor drain, but still roll out",
			forecastPool(3, nil), []targets.NodeChange{file("/etc/kubernetes/kubelet-ca.crt")}, policy,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1", Waves: 3, Reasons: []string{"file /etc/kubernetes/kubelet-ca.crt changes (policy: None)"}}},
		{"when a file under a directory with a policy changes, it should follow the closest directory's policy",
			forecastPool(3, nil), []targets.NodeChange{file("/etc/containers/registries.d/mirror.yaml", "/etc/containers/storage.conf")}, policy,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1", Waves: 3, Reasons: []string{
				"file /etc/containers/registries.d/mirror.yaml changes (policy: Restart crio.service)",
				"file /etc/containers/storage.conf changes (policy: Reload crio.service)"}}},
		{"when registries.conf changes under its Special policy, it should not reboot but may drain",
			forecastPool(3, nil), []targets.NodeChange{file("/etc/containers/registries.conf")}, policy,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1", Waves: 3, Drain: true, Reasons: []string{"file /etc/containers/registries.conf changes (policy: Special)"}}},
		{"when a file's policy drains, it should drain without a reboot",
			forecastPool(3, nil), []targets.NodeChange{file("/etc/drain-me")}, policy,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1", Waves: 3, Drain: true, Reasons: []string{"file /etc/drain-me changes (policy: Drain, DaemonReload)"}}},
		{"when a file no policy covers changes, it should reboot",
			forecastPool(3, nil), []targets.NodeChange{file("/etc/swap.conf")}, policy,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1", Waves: 3, Reboot: true, Drain: true, Reasons: []string{"file /etc/swap.conf changes (no policy: Reboot)"}}},
		{"when a KubeletConfig changes and no policy covers the kubelet configuration, it should reboot",
			forecastPool(3, nil), []targets.NodeChange{targets.KubeletConfigChange()}, policy,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1", Waves: 3, Reboot: true, Drain: true, Reasons: []string{"file /etc/kubernetes/kubelet.conf changes (no policy: Reboot)"}}},
		{"when units change, it should follow their policy, and reboot for one without",
			forecastPool(3, nil), []targets.NodeChange{unit("chronyd.service"), unit("swap.service")}, policy,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1", Waves: 3, Reboot: true, Drain: true, Reasons: []string{
				"systemd unit chronyd.service changes (policy: Restart chronyd.service)", "systemd unit swap.service changes (no policy: Reboot)"}}},
		{"when the cluster has no policy, it should apply the files the daemon applies without a reboot, and reboot for the rest",
			forecastPool(3, nil), []targets.NodeChange{file("/etc/kubernetes/kubelet-ca.crt", "/etc/nmstate/openshift/eth0.yml", "/etc/containers/policy.json",
				"/etc/containers/registries.d/x.yaml", "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt")}, nil,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1", Waves: 3, Reasons: []string{
				"file /etc/kubernetes/kubelet-ca.crt changes (applied without a reboot)",
				"file /etc/nmstate/openshift/eth0.yml changes (applied without a reboot)",
				"file /etc/containers/policy.json changes (CRI-O reload)",
				"file /etc/containers/registries.d/x.yaml changes (CRI-O reload)",
				"file /etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt changes (CRI-O restart)"}}},
		{"when the cluster has no policy and registries.conf changes, it may drain",
			forecastPool(3, nil), []targets.NodeChange{file("/etc/containers/registries.conf")}, nil,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1", Waves: 3, Drain: true, Reasons: []string{"file /etc/containers/registries.conf changes (CRI-O reload, may drain)"}}},
		{"when the cluster has no policy and another file or a unit changes, it should reboot",
			forecastPool(3, nil), []targets.NodeChange{file("/etc/swap.conf"), unit("swap.service")}, nil,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1", Waves: 3, Reboot: true, Drain: true, Reasons: []string{
				"file /etc/swap.conf changes (reboot)", "systemd unit swap.service changes (reboot)"}}},
		{"when several items change the same thing, it should say it once",
			forecastPool(3, nil), []targets.NodeChange{karg, {KernelArgumentsRemoved: []string{"nosmt"}}, file("/etc/swap.conf"), file("/etc/swap.conf")}, nil,
			targets.PoolForecast{Nodes: 3, MaxUnavailable: "1", Waves: 3, Reboot: true, Drain: true, Reasons: []string{
				"kernel arguments change", "file /etc/swap.conf changes (reboot)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tc.want.Pool = "worker"
			g.Expect(targets.ForecastPool(tc.pool, tc.changes, tc.policy)).To(Equal(tc.want))
		})
	}
}

// machineConfiguration is the MachineConfiguration cluster with the status the Machine
// Config Operator reports (nil: none yet).
func machineConfiguration(status map[string]any) *unstructured.Unstructured {
	mc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"managementState": "Managed"}}}
	mc.SetGroupVersionKind(targets.MachineConfiguration.GVK)
	mc.SetName("cluster")
	if status != nil {
		mc.Object["status"] = status
	}
	return mc
}

func TestReadDisruptionPolicy(t *testing.T) {
	c := apiServer(t)
	reported := map[string]any{
		"observedGeneration": int64(1),
		"nodeDisruptionPolicyStatus": map[string]any{"clusterPolicies": map[string]any{
			"files": []any{
				map[string]any{"path": "/etc/containers/registries.conf", "actions": []any{map[string]any{"type": "Special"}}},
				map[string]any{"path": "/etc/containers/policy.json", "actions": []any{map[string]any{"type": "Reload", "reload": map[string]any{"serviceName": "crio.service"}}}},
			},
			"units": []any{
				map[string]any{"name": "chronyd.service", "actions": []any{map[string]any{"type": "Restart", "restart": map[string]any{"serviceName": "chronyd.service"}}}},
			},
			"sshkey": map[string]any{"actions": []any{map[string]any{"type": "None"}}},
		}},
	}
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want *targets.DisruptionPolicy
	}{
		{"when the Machine Config Operator reports a policy, it should read its files and units with their actions",
			machineConfiguration(reported), &targets.DisruptionPolicy{
				Files: []targets.FileDisruptionPolicy{
					{Path: "/etc/containers/registries.conf", Actions: []targets.DisruptionAction{{Type: "Special"}}},
					{Path: "/etc/containers/policy.json", Actions: []targets.DisruptionAction{{Type: "Reload", Service: "crio.service"}}},
				},
				Units: []targets.UnitDisruptionPolicy{
					{Name: "chronyd.service", Actions: []targets.DisruptionAction{{Type: "Restart", Service: "chronyd.service"}}},
				},
			}},
		{"when the object reports no policy yet, it should be nil", machineConfiguration(nil), nil},
		{"when there is no object cluster, it should be nil", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			if tc.obj != nil {
				create(t, c, tc.obj)
			}
			got, err := targets.ReadDisruptionPolicy(context.Background(), c)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
	t.Run("when the cluster serves no MachineConfiguration, it should be nil", func(t *testing.T) {
		g := NewWithT(t)
		c := clusterOf()
		c.notServed["MachineConfiguration"] = true
		got, err := targets.ReadDisruptionPolicy(context.Background(), c)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(BeNil())
	})
}

// The node disruption policy status is validated by the API server as the Machine Config
// Operator writes it: the test CRD keeps the upstream rules.
func TestDisruptionPolicyStatusIsValidatedAsUpstream(t *testing.T) {
	g := NewWithT(t)
	c := apiServer(t)
	obj := create(t, c, machineConfiguration(nil))
	bad := map[string]any{"nodeDisruptionPolicyStatus": map[string]any{"clusterPolicies": map[string]any{"files": []any{
		map[string]any{"path": "/etc/x", "actions": []any{map[string]any{"type": "Reboot"}, map[string]any{"type": "Drain"}}},
	}}}}
	obj.Object["status"] = bad
	err := c.Status().Update(context.Background(), obj)
	g.Expect(err).To(MatchError(ContainSubstring("Reboot action can only be specified standalone")))
}

func TestMastersSchedulable(t *testing.T) {
	c := apiServer(t)
	scheduler := func(spec map[string]any) *unstructured.Unstructured {
		s := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		s.SetGroupVersionKind(targets.Scheduler.GVK)
		s.SetName("cluster")
		return s
	}
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"when the Scheduler cluster makes masters schedulable (a compact cluster), it should be true",
			scheduler(map[string]any{"mastersSchedulable": true}), true},
		{"when it keeps them unschedulable, it should be false", scheduler(map[string]any{"mastersSchedulable": false}), false},
		{"when it does not say, it should be false", scheduler(map[string]any{"profile": "LowNodeUtilization"}), false},
		{"when there is no Scheduler cluster, it should be false", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			if tc.obj != nil {
				create(t, c, tc.obj)
			}
			got, err := targets.MastersSchedulable(context.Background(), c)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
	t.Run("when the cluster serves no Scheduler, it should be false", func(t *testing.T) {
		g := NewWithT(t)
		c := clusterOf()
		c.notServed["Scheduler"] = true
		got, err := targets.MastersSchedulable(context.Background(), c)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(BeFalse())
	})
}

// forecastCluster is a cluster holding the pools worker (6 nodes, 2 at a time), master (3
// nodes) and infra (2 nodes), each selecting the MachineConfigs of its role, and objs.
func forecastCluster(objs ...*unstructured.Unstructured) *cluster {
	worker := pool{name: "worker", role: "worker", conditions: updated, machines: 6, updated: 6}.object()
	worker.Object["spec"].(map[string]any)["maxUnavailable"] = int64(2)
	c := clusterOf()
	c.objects = append(c.objects, worker,
		pool{name: "master", role: "master", conditions: updated, machines: 3, updated: 3}.object(),
		pool{name: "infra", role: "infra", conditions: updated, machines: 2, updated: 2}.object())
	c.objects = append(c.objects, objs...)
	return c
}

// roleMC is a MachineConfig of role with the spec of the YAML document.
func roleMC(name, role, spec string) *unstructured.Unstructured {
	mc := mcOf(spec)
	mc.SetName(name)
	mc.SetLabels(map[string]string{roleLabel: role})
	return mc
}

// registriesMC is the MachineConfig of the master pool that writes registries.conf.
func registriesMC() *unstructured.Unstructured {
	return roleMC("99-master-registries", "master",
		`{config: {ignition: {version: 3.2.0}, storage: {files: [{path: /etc/containers/registries.conf, contents: {source: "data:,a"}}]}}}`)
}

func TestForecastGroupsTheItemsOfEachPoolTheyReachInTheOrderOfThePoolsNames(t *testing.T) {
	g := NewWithT(t)
	got, err := targets.Forecast(context.Background(), forecastCluster(), []targets.PlannedChange{
		{Item: "psi", Desired: machineConfig(psiMC, "worker", psi())},
		{Item: "registries", Desired: registriesMC()},
		{Item: "kubelet", Desired: kubeletConfig("kc", map[string]any{poolLabel + "worker": ""})},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]targets.ItemsForecast{
		{PoolForecast: targets.PoolForecast{Pool: "master", Nodes: 3, MaxUnavailable: "1", Waves: 3, Drain: true,
			Reasons: []string{"file /etc/containers/registries.conf changes (CRI-O reload, may drain)"}},
			Items: []string{"registries"}},
		{PoolForecast: targets.PoolForecast{Pool: "worker", Nodes: 6, MaxUnavailable: "2", Waves: 3, Reboot: true, Drain: true,
			Reasons: []string{"kernel arguments change", "file /etc/kubernetes/kubelet.conf changes (reboot)"}},
			Items: []string{"psi", "kubelet"}},
	}), "the infra pool renders from none of the changed objects")
}

func TestForecastFollowsTheNodeDisruptionPolicyTheClusterReports(t *testing.T) {
	policyOf := func(action string) *unstructured.Unstructured {
		return machineConfiguration(map[string]any{"nodeDisruptionPolicyStatus": map[string]any{"clusterPolicies": map[string]any{
			"files": []any{map[string]any{"path": "/etc/containers/registries.conf", "actions": []any{map[string]any{"type": action}}}},
		}}})
	}
	cases := []struct {
		name string
		// configuration is the MachineConfiguration cluster; nil when there is none.
		configuration *unstructured.Unstructured
		drain         bool
		reason        string
	}{
		{"when the cluster reports no policy, it should follow the daemon's own rules",
			nil, true, "file /etc/containers/registries.conf changes (CRI-O reload, may drain)"},
		{"when the policy of the file is Special, it should follow it and may drain",
			policyOf("Special"), true, "file /etc/containers/registries.conf changes (policy: Special)"},
		{"when the policy of the file is None, it should follow it and neither drain nor reboot",
			policyOf("None"), false, "file /etc/containers/registries.conf changes (policy: None)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := forecastCluster()
			if tc.configuration != nil {
				c = forecastCluster(tc.configuration)
			}
			got, err := targets.Forecast(context.Background(), c, []targets.PlannedChange{{Item: "registries", Desired: registriesMC()}})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal([]targets.ItemsForecast{{PoolForecast: targets.PoolForecast{
				Pool: "master", Nodes: 3, MaxUnavailable: "1", Waves: 3, Drain: tc.drain, Reasons: []string{tc.reason},
			}, Items: []string{"registries"}}}))
		})
	}
}

func TestForecastLeavesOutChangesThatTouchNoNodeAndPoolsNoChangeReaches(t *testing.T) {
	g := NewWithT(t)
	kc := kubeletConfig("kc", map[string]any{poolLabel + "master": ""})
	c := forecastCluster(machineConfig(psiMC, "worker", psi()), kc)
	got, err := targets.Forecast(context.Background(), c, []targets.PlannedChange{
		{Item: "psi", Desired: machineConfig(psiMC, "worker", psi())},
		{Item: "swap", Desired: roleMC("99-worker-swap", "worker", `{config: {ignition: {version: 3.2.0}, systemd: {units: [{name: swap.service, enabled: true}]}}}`)},
		{Item: "kubelet", Desired: kc.DeepCopy()},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]targets.ItemsForecast{
		{PoolForecast: targets.PoolForecast{Pool: "worker", Nodes: 6, MaxUnavailable: "2", Waves: 3, Reboot: true, Drain: true,
			Reasons: []string{"systemd unit swap.service changes (reboot)"}},
			Items: []string{"swap"}},
	}), "psi and kubelet are applied as they are live; the master pool renders from kubelet only")
}

func TestForecastOfADeletedItemForecastsItsRemoval(t *testing.T) {
	g := NewWithT(t)
	live := machineConfig(psiMC, "worker", psi())
	got, err := targets.Forecast(context.Background(), forecastCluster(live), []targets.PlannedChange{
		{Item: "psi", Desired: live.DeepCopy(), Deleted: true},
		{Item: "gone", Desired: roleMC("99-master-gone", "master", `{kernelArguments: [nosmt]}`), Deleted: true},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]targets.ItemsForecast{
		{PoolForecast: targets.PoolForecast{Pool: "worker", Nodes: 6, MaxUnavailable: "2", Waves: 3, Reboot: true, Drain: true,
			Reasons: []string{"kernel arguments change"}},
			Items: []string{"psi"}},
	}), "removing psi=1 reboots the worker nodes; deleting a MachineConfig already gone changes nothing")
}

// forbidden is the error of a read the operator's role does not allow.
var forbidden = apierrors.NewForbidden(schema.GroupResource{Group: "machineconfiguration.openshift.io"}, "", errors.New("RBAC denies it"))

func TestForecastOfNoChangesIsNilWithoutReadingTheCluster(t *testing.T) {
	g := NewWithT(t)
	c := forecastCluster()
	c.failing["MachineConfigPool"], c.failing["MachineConfiguration"] = forbidden, forbidden
	got, err := targets.Forecast(context.Background(), c, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeNil())
}

func TestForecastReturnsAReadErrorOtherThanNotFoundNamingWhatItReads(t *testing.T) {
	cases := []struct {
		name, kind, want string
	}{
		{"when listing the pools fails, it should name them", "MachineConfigPool", "list MachineConfigPools: "},
		{"when reading the node disruption policy fails, it should name its object",
			"MachineConfiguration", "read MachineConfiguration cluster: "},
		{"when reading a changed MachineConfig fails, it should name it", "MachineConfig", "read MachineConfig " + psiMC + ": "},
		{"when reading a changed KubeletConfig fails, it should name it", "KubeletConfig", "read KubeletConfig kc: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := forecastCluster()
			c.failing[tc.kind] = forbidden
			got, err := targets.Forecast(context.Background(), c, []targets.PlannedChange{
				{Item: "psi", Desired: machineConfig(psiMC, "worker", psi())},
				{Item: "kubelet", Desired: kubeletConfig("kc", map[string]any{poolLabel + "worker": ""})},
			})
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(HavePrefix(tc.want))
			g.Expect(got).To(BeNil())
		})
	}
}
