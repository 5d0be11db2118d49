package poolsim

import (
	"encoding/base64"
	"testing"
)

// ignitionWithFile is an Ignition config with one file of that path and content.
func ignitionWithFile(path, content string) map[string]any {
	return map[string]any{
		"ignition": map[string]any{"version": "3.2.0"},
		"storage": map[string]any{"files": []any{map[string]any{
			"path":     path,
			"contents": map[string]any{"source": "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte(content))},
		}}},
	}
}

func ignitionWithUnit(name, contents string) map[string]any {
	return map[string]any{
		"ignition": map[string]any{"version": "3.2.0"},
		"systemd":  map[string]any{"units": []any{map[string]any{"name": name, "contents": contents}}},
	}
}

func TestRebootRequiredFollowsTheDaemonsPostConfigChangeAction(t *testing.T) {
	base := machineConfigSpec{Config: map[string]any{"ignition": map[string]any{"version": "3.2.0"}}}
	for _, tc := range []struct {
		name     string
		from, to machineConfigSpec
		reboot   bool
	}{
		{name: "the same configuration needs no reboot", from: base, to: base},
		{name: "another Ignition version of the same content needs no reboot", from: base,
			to: machineConfigSpec{Config: map[string]any{"ignition": map[string]any{"version": "3.4.0"}}}},
		{name: "a kernel argument reboots", from: base, to: machineConfigSpec{Config: base.Config, KernelArguments: []string{"psi=1"}}, reboot: true},
		{name: "an extension reboots", from: base, to: machineConfigSpec{Config: base.Config, Extensions: []string{"usbguard"}}, reboot: true},
		{name: "a realtime kernel reboots", from: base, to: machineConfigSpec{Config: base.Config, KernelType: "realtime"}, reboot: true},
		{name: "FIPS reboots", from: base, to: machineConfigSpec{Config: base.Config, FIPS: true}, reboot: true},
		{name: "a new OS image reboots", from: base, to: machineConfigSpec{Config: base.Config, OSImageURL: "quay.io/os:2"}, reboot: true},
		{name: "the default kernel type, spelled out, needs no reboot", from: base, to: machineConfigSpec{Config: base.Config, KernelType: "default"}},
		{name: "a systemd unit reboots", from: base, to: machineConfigSpec{Config: ignitionWithUnit("x.service", "[Unit]")}, reboot: true},
		{name: "a file reboots", from: base, to: machineConfigSpec{Config: ignitionWithFile("/etc/kubernetes/kubelet.conf", "a")}, reboot: true},
		{name: "a changed file reboots", from: machineConfigSpec{Config: ignitionWithFile("/etc/sysctl.d/x.conf", "a")},
			to: machineConfigSpec{Config: ignitionWithFile("/etc/sysctl.d/x.conf", "b")}, reboot: true},
		{name: "registries.conf only reloads CRI-O", from: base, to: machineConfigSpec{Config: ignitionWithFile("/etc/containers/registries.conf", "a")}},
		{name: "the pull secret needs nothing", from: base, to: machineConfigSpec{Config: ignitionWithFile("/var/lib/kubelet/config.json", "{}")}},
		{name: "a file of registries.d only reloads CRI-O", from: base,
			to: machineConfigSpec{Config: ignitionWithFile("/etc/containers/registries.d/quay.yaml", "a")}},
		{name: "an unreadable configuration is taken to reboot", from: base,
			to: machineConfigSpec{Config: map[string]any{"ignition": map[string]any{"version": "9.9.9"}}}, reboot: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rebootRequired(tc.from, tc.to); got != tc.reboot {
				t.Errorf("rebootRequired = %t, want %t", got, tc.reboot)
			}
		})
	}
}

func TestMergeConcatenatesKernelArgumentsInNameOrderAndMergesFilesByPath(t *testing.T) {
	configs := []*machineConfig{
		{Spec: machineConfigSpec{KernelArguments: []string{"a=1"}, Config: ignitionWithFile("/etc/x", "first")}},
		{Spec: machineConfigSpec{KernelArguments: []string{"b=2"}, Config: ignitionWithFile("/etc/x", "second")}},
	}
	configs[0].Name, configs[1].Name = "00-first", "50-second"
	merged, err := mergeMachineConfigs(configs)
	if err != nil {
		t.Fatal(err)
	}
	if got := merged.KernelArguments; len(got) != 2 || got[0] != "a=1" || got[1] != "b=2" {
		t.Errorf("kernel arguments %v, want [a=1 b=2]", got)
	}
	cfg, _, err := ignitionOf(merged.Config)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Storage.Files) != 1 || *cfg.Storage.Files[0].Contents.Source != ignitionWithFileSource("second") {
		t.Errorf("files %+v, want the one /etc/x of 50-second", cfg.Storage.Files)
	}
	if merged.KernelType != "default" {
		t.Errorf("kernel type %q, want default", merged.KernelType)
	}
}

func ignitionWithFileSource(content string) string {
	return "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte(content))
}

func TestTheSameContentRendersTheSameName(t *testing.T) {
	mc := &machineConfig{Spec: machineConfigSpec{KernelArguments: []string{"psi=1"}}}
	mc.Name = "50-psi"
	renamed := &machineConfig{Spec: mc.Spec}
	renamed.Name = "60-psi"
	a, errA := renderPool("worker", []*machineConfig{mc})
	b, errB := renderPool("worker", []*machineConfig{renamed})
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if a.name != b.name {
		t.Errorf("%s and %s: the same content renders two names", a.name, b.name)
	}
	changed := &machineConfig{Spec: machineConfigSpec{KernelArguments: []string{"psi=0"}}}
	changed.Name = "50-psi"
	c, err := renderPool("worker", []*machineConfig{changed})
	if err != nil {
		t.Fatal(err)
	}
	if c.name == a.name {
		t.Errorf("a changed kernel argument renders the same name %s", c.name)
	}
}
