package cli

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

func TestUseColor(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	none := env(nil)
	cases := []struct {
		mode     string
		terminal bool
		getenv   func(string) string
		want     bool
	}{
		{ColorAuto, true, none, true},
		{ColorAuto, false, none, false},
		{ColorAuto, true, env(map[string]string{"NO_COLOR": "1"}), false},
		{ColorAuto, true, env(map[string]string{"TERM": "dumb"}), false},
		{"", true, none, true},
		{ColorAlways, false, env(map[string]string{"NO_COLOR": "1"}), true},
		{ColorNever, true, none, false},
	}
	for _, c := range cases {
		got, err := useColor(c.mode, c.terminal, c.getenv)
		if err != nil || got != c.want {
			t.Errorf("useColor(%q, terminal %v) = %v, %v; want %v", c.mode, c.terminal, got, err, c.want)
		}
	}
	if _, err := useColor("sometimes", true, none); err == nil {
		t.Error("useColor accepted an unknown mode")
	}
}

func TestPlanWithoutColorHasNoEscapes(t *testing.T) {
	var out bytes.Buffer
	code, err := planView{vpc: reviewConfig()}.render(&out)
	if err != nil || code != ExitChanges {
		t.Fatalf("render = %d, %v; want %d", code, err, ExitChanges)
	}
	text := out.String()
	if strings.Contains(text, "\x1b") {
		t.Errorf("escape codes without color:\n%q", text)
	}
	for _, want := range []string{
		"Plan of load-aware-rebalancing: phase ReviewRequired, action DryRun, impact High\n",
		"Item 1/2: enable-load-aware-descheduling\n",
		"  target:  KubeDescheduler openshift-kube-descheduler-operator/cluster (operator.openshift.io/v1)\n",
		"  impact:  Medium\n",
		"  message: adds the KubeVirtRelieveAndMigrate profile\n",
		"-  - LifecycleAndUtilization\n+  - KubeVirtRelieveAndMigrate\n",
		"Item 2/2: enable-psi-metrics\n",
		"--- /dev/null\n",
		"+  - psi=1\n",
		"Plan hash: " + hashA + "\n",
		"kubectl virt-advisor approve load-aware-rebalancing --hash " + hashA + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
}

func TestPlanColors(t *testing.T) {
	var out bytes.Buffer
	if _, err := (planView{vpc: reviewConfig(), color: true}).render(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		ansiGreen + "+  - KubeVirtRelieveAndMigrate" + ansiReset + "\n",
		ansiRed + "-  - LifecycleAndUtilization" + ansiReset + "\n",
		ansiCyan + "@@ -3,5 +3,5 @@" + ansiReset + "\n",
		ansiBold + "--- KubeDescheduler openshift-kube-descheduler-operator/cluster (live)" + ansiReset + "\n",
		ansiBold + "+++ MachineConfig 99-worker-psi-karg (planned)" + ansiReset + "\n",
		ansiBold + "--- /dev/null" + ansiReset + "\n",
		ansiBold + "Item 2/2: enable-psi-metrics" + ansiReset + "\n",
		ansiBold + "Plan hash: " + hashA + ansiReset + "\n",
		ansiReset + "\n spec:\n", // context lines stay plain
	} {
		if !strings.Contains(text, want) {
			t.Errorf("colored plan lacks %q:\n%q", want, text)
		}
	}
}

func TestDiffColorsContentThatLooksLikeAHeader(t *testing.T) {
	d := "--- a (live)\n+++ a (planned)\n@@ -1,2 +1,2 @@\n--- removed yaml document marker\n+++ added\n"
	got := painter{on: true}.diff(d)
	for _, want := range []string{
		ansiRed + "--- removed yaml document marker" + ansiReset,
		ansiGreen + "+++ added" + ansiReset,
		ansiBold + "--- a (live)" + ansiReset,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%q", want, got)
		}
	}
	if (painter{}).diff(d) != d {
		t.Error("a diff without colors changed")
	}
}

func TestPlanExitCodes(t *testing.T) {
	cases := map[string]struct {
		edit func(*advisorv1alpha1.VirtPlatformConfig)
		want int
	}{
		"pending items with diffs": {func(*advisorv1alpha1.VirtPlatformConfig) {}, ExitChanges},
		"every item already as planned": {func(v *advisorv1alpha1.VirtPlatformConfig) {
			for i := range v.Status.Items {
				v.Status.Items[i].Diff, v.Status.Items[i].Change = "(no changes)", advisorv1alpha1.ChangeNone
			}
		}, ExitOK},
		"empty diffs": {func(v *advisorv1alpha1.VirtPlatformConfig) {
			for i := range v.Status.Items {
				v.Status.Items[i].Diff, v.Status.Items[i].Change = "", ""
			}
		}, ExitOK},
		"completed plan": {func(v *advisorv1alpha1.VirtPlatformConfig) { *v = *completedConfig() }, ExitOK},
		"skipped item with a diff": {func(v *advisorv1alpha1.VirtPlatformConfig) {
			v.Status.Items = v.Status.Items[1:]
			v.Status.Items[0].State = advisorv1alpha1.ItemSkipped
		}, ExitOK},
		"in progress, the next item pending": {func(v *advisorv1alpha1.VirtPlatformConfig) {
			v.Status.Phase = advisorv1alpha1.PhaseInProgress
			v.Status.Items[0].State = advisorv1alpha1.ItemInProgress
		}, ExitChanges},
		"in progress, the last item applied and rolling out": {func(v *advisorv1alpha1.VirtPlatformConfig) {
			v.Status.Phase = advisorv1alpha1.PhaseInProgress
			v.Status.Items[0].State = advisorv1alpha1.ItemCompleted
			v.Status.Items[1].State = advisorv1alpha1.ItemInProgress
		}, ExitOK},
		"failed item to retry": {func(v *advisorv1alpha1.VirtPlatformConfig) {
			v.Status.Items[0].State = advisorv1alpha1.ItemCompleted
			v.Status.Items[1].State = advisorv1alpha1.ItemFailed
		}, ExitChanges},
		"release without a diff": {func(v *advisorv1alpha1.VirtPlatformConfig) {
			v.Status.Items = v.Status.Items[:1]
			v.Status.Items[0].Action = advisorv1alpha1.ItemActionRelease
			v.Status.Items[0].Diff = ""
		}, ExitChanges},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			vpc := reviewConfig()
			c.edit(vpc)
			var out bytes.Buffer
			code, err := planView{vpc: vpc}.render(&out)
			if err != nil || code != c.want {
				t.Errorf("render = %d, %v; want %d\n%s", code, err, c.want, out.String())
			}
		})
	}
}

func TestPlanCommandExitCodes(t *testing.T) {
	out, errOut, code := run(t, fakeClient(reviewConfig()), "plan", "load-aware-rebalancing")
	if code != ExitChanges || errOut != "" {
		t.Errorf("plan of a plan with changes: exit %d, stderr %q; want %d", code, errOut, ExitChanges)
	}
	if !strings.Contains(out, "Plan hash: "+hashA) {
		t.Errorf("no plan hash:\n%s", out)
	}
	if _, errOut, code = run(t, fakeClient(completedConfig()), "plan", "load-aware-rebalancing"); code != ExitOK || errOut != "" {
		t.Errorf("plan of a completed plan: exit %d, stderr %q; want 0", code, errOut)
	}
	_, errOut, code = run(t, fakeClient(reviewConfig()), "plan", "load-aware")
	if code != ExitError || !strings.Contains(errOut, `"load-aware" is not a profile`) ||
		!strings.Contains(errOut, "Existing VirtPlatformConfigs: load-aware-rebalancing (ReviewRequired)") ||
		!strings.Contains(errOut, "Valid profile names: load-aware-rebalancing, virt-higher-density, platform-baseline") {
		t.Errorf("plan of an unknown profile: exit %d, stderr %q", code, errOut)
	}
	if _, _, code = run(t, fakeClient(reviewConfig()), "plan", "load-aware-rebalancing", "--color", "sometimes"); code != ExitError {
		t.Errorf("a bad --color exits %d", code)
	}
}

func TestPlanOneItem(t *testing.T) {
	vpc := reviewConfig()
	vpc.Status.Items[0].Diff, vpc.Status.Items[0].Change = "(no changes)", advisorv1alpha1.ChangeNone
	var out bytes.Buffer
	code, err := planView{vpc: vpc, item: "enable-load-aware-descheduling"}.render(&out)
	if err != nil || code != ExitOK {
		t.Fatalf("render of an item without changes = %d, %v", code, err)
	}
	if strings.Contains(out.String(), "enable-psi-metrics") || !strings.Contains(out.String(), "Item 1/2: enable-load-aware-descheduling") {
		t.Errorf("--item shows other items:\n%s", out.String())
	}
	code, err = planView{vpc: vpc, item: "enable-psi-metrics"}.render(&out)
	if err != nil || code != ExitChanges {
		t.Errorf("render of an item with changes = %d, %v", code, err)
	}
	_, err = planView{vpc: vpc, item: "nope"}.render(&out)
	if err == nil || !strings.Contains(err.Error(), "its items: enable-load-aware-descheduling, enable-psi-metrics") {
		t.Errorf("unknown item: %v", err)
	}
}

func TestPlanShowsSkippedItemsAndConflicts(t *testing.T) {
	vpc := reviewConfig()
	vpc.Status.Items[1].State = advisorv1alpha1.ItemSkipped
	vpc.Status.Items[1].Message = "the cluster serves no MachineConfigs: install the Machine Config Operator"
	vpc.Status.Items[0].Conflicts = []advisorv1alpha1.FieldConflict{
		{Path: "spec.mode", Manager: "argocd-controller", LiveValue: `"Predictive"`, PlannedValue: `"Automatic"`},
	}
	var out bytes.Buffer
	if _, err := (planView{vpc: vpc}).render(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"Item 2/2: enable-psi-metrics\n  state:   Skipped\n",
		"  message: the cluster serves no MachineConfigs: install the Machine Config Operator\n",
		`  conflict: spec.mode is owned by argocd-controller with "Predictive"; the plan sets "Automatic"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "psi=1") {
		t.Errorf("a skipped item's diff is shown:\n%s", text)
	}
}

func TestPlanRefusesWithoutPlan(t *testing.T) {
	ignored := reviewConfig()
	ignored.Spec.Action = advisorv1alpha1.ActionIgnore
	ignored.Status = advisorv1alpha1.VirtPlatformConfigStatus{Phase: advisorv1alpha1.PhaseIgnored, ObservedGeneration: 2}
	drafting := reviewConfig()
	drafting.Status = advisorv1alpha1.VirtPlatformConfigStatus{Phase: advisorv1alpha1.PhaseDrafting, ObservedGeneration: 2}
	for vpc, want := range map[*advisorv1alpha1.VirtPlatformConfig]string{
		ignored:  "Draft one with: kubectl virt-advisor dry-run load-aware-rebalancing",
		drafting: "has no plan yet (phase Drafting)",
	} {
		var out bytes.Buffer
		code, err := planView{vpc: vpc}.render(&out)
		if code != ExitError || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("render without plan = %d, %v; want an error with %q", code, err, want)
		}
	}
}

func TestSanitize(t *testing.T) {
	if got := sanitize("a\x1b[31mb\tc\nd\u009b"); got != `a\x1b[31mb`+"\tc\nd"+`\u009b` {
		t.Errorf("sanitize = %q", got)
	}
	vpc := reviewConfig()
	vpc.Status.Items[0].Diff = "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+evil: \"\x1b]0;title\x07\"\n"
	var out bytes.Buffer
	if _, err := (planView{vpc: vpc}).render(&out); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") {
		t.Errorf("control characters from the cluster reach the terminal: %q", out.String())
	}
}

func TestPlanShowsTheDisruptionForecast(t *testing.T) {
	vpc := reviewConfig()
	vpc.Status.Rollouts = []advisorv1alpha1.PoolRollout{{Pool: "worker", Items: []string{"enable-psi-metrics"}, Nodes: 6,
		MaxUnavailable: "1", Waves: 6, Reboot: true, Pause: true, EstimatedDuration: "unknown",
		Reasons: []string{"kernel arguments change"}}}
	var out bytes.Buffer
	if _, err := (planView{vpc: vpc}).render(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"MachineConfigPool worker: 6 node(s) reboot once, in 6 wave(s) of at most 1; estimated duration unknown",
		"the pool is paused while enable-psi-metrics are applied, then resumed",
		"kernel arguments change",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the plan does not show %q:\n%s", want, out.String())
		}
	}
}

func TestPlanShowsWhatTheDrainDoesToTheVMs(t *testing.T) {
	vpc := reviewConfig()
	memory := resource.MustParse("96Gi")
	vpc.Status.Rollouts = []advisorv1alpha1.PoolRollout{
		{Pool: "master", Items: []string{"enable-psi-metrics"}, Nodes: 3, Waves: 3, Reboot: true,
			VMs: &advisorv1alpha1.VMForecast{UnknownReason: "VirtualMachineInstances are not readable: forbidden"}},
		{Pool: "worker", Items: []string{"enable-psi-metrics"}, Nodes: 6, Waves: 6, Reboot: true, VMs: &advisorv1alpha1.VMForecast{
			LiveMigrate: 57, Migrations: 67, Restart: 2, Block: 1, MemoryToMigrate: &memory,
			Summary:    "57 VMs live-migrate (67 migrations), 2 restart, 1 blocks the drain (db/pg-0)",
			Blocking:   &advisorv1alpha1.VMNames{Names: []string{"db/pg-0"}},
			Restarting: &advisorv1alpha1.VMNames{Names: []string{"ci/runner-0", "ci/runner-1"}},
			MayExceed:  &advisorv1alpha1.VMNames{Names: []string{"infra/dns-0"}, More: 12},
		}},
	}
	var out bytes.Buffer
	if _, err := (planView{vpc: vpc}).render(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"    VMs unknown: VirtualMachineInstances are not readable: forbidden\n",
		"    VMs: 57 VMs live-migrate (67 migrations), 2 restart, 1 blocks the drain (db/pg-0)\n",
		"    memory to migrate: 96Gi\n",
		"    block the drain: db/pg-0\n",
		"    restart: ci/runner-0, ci/runner-1\n",
		"    may move more often than forecast: infra/dns-0 and 12 more\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPlanShowsWhatTheRolloutDidToTheVMsBesideTheForecast(t *testing.T) {
	vpc := reviewConfig()
	three := int32(3)
	vpc.Status.Rollouts = []advisorv1alpha1.PoolRollout{
		{Pool: "master", Items: []string{"enable-psi-metrics"}, Nodes: 3, Waves: 3, Reboot: true,
			VMs:       &advisorv1alpha1.VMForecast{Summary: "2 VMs live-migrate (3 migrations)", LiveMigrate: 2, Migrations: 3},
			VMsActual: &advisorv1alpha1.VMActual{UnknownReason: "the cluster serves no VirtualMachineInstanceMigrations"}},
		{Pool: "worker", Items: []string{"enable-psi-metrics"}, Nodes: 6, Waves: 6, Reboot: true,
			VMs: &advisorv1alpha1.VMForecast{Summary: "57 VMs live-migrate (65 migrations), 2 restart", LiveMigrate: 57, Migrations: 65, Restart: 2},
			VMsActual: &advisorv1alpha1.VMActual{Migrations: 66, MigratedVMs: 57, MaxPerVM: 3, Restarts: &three, Blocked: 1,
				Summary:   "forecast 65 migration(s), 2 restart(s); actual 66 migration(s) of 57 VM(s) (at most 3 per VM), 3 restart(s), 1 blocked drain(s), in 12m0s",
				MovedMore: &advisorv1alpha1.VMNames{Names: []string{"infra/dns-0"}}, Blocking: &advisorv1alpha1.VMNames{Names: []string{"db/pg-0"}}}},
	}
	var out bytes.Buffer
	if _, err := (planView{vpc: vpc}).render(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"    VMs after the rollout unknown: the cluster serves no VirtualMachineInstanceMigrations\n",
		"    VMs after the rollout (NOT as forecast): forecast 65 migration(s), 2 restart(s); actual 66 migration(s) of 57 VM(s) (at most 3 per VM), 3 restart(s), 1 blocked drain(s), in 12m0s\n",
		"    moved more often than forecast: infra/dns-0\n",
		"    blocked a drain: db/pg-0\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out.String())
		}
	}
}
