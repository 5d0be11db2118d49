package ignitioncheck_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/ignitioncheck"
)

func machineConfig(config map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": "broken"},
		"spec":     map[string]any{"config": config},
	}}
}

func unit(name, contents string) map[string]any {
	return map[string]any{"name": name, "enabled": true, "contents": contents}
}

func systemd(units ...any) map[string]any {
	return map[string]any{"ignition": map[string]any{"version": "3.2.0"}, "systemd": map[string]any{"units": units}}
}

const goodUnit = "[Unit]\nDescription=ok\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"

// TestCheckAcceptsAValidConfig shows the checker does not refuse everything.
func TestCheckAcceptsAValidConfig(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ignitioncheck.Check(machineConfig(systemd(unit("ok.service", goodUnit))))).To(Succeed())
}

// TestCheckRejectsBrokenConfigs: each deliberately broken config is refused, and the
// message says what is wrong.
func TestCheckRejectsBrokenConfigs(t *testing.T) {
	cases := []struct {
		name   string
		config map[string]any
		want   string
	}{
		{"no ignition version", map[string]any{"storage": map[string]any{}}, "unsupported config version"},
		{"a version the 3.2 parser does not read", map[string]any{"ignition": map[string]any{"version": "3.9.0"}}, "unsupported config version"},
		{"a file with a relative path", map[string]any{
			"ignition": map[string]any{"version": "3.2.0"},
			"storage": map[string]any{"files": []any{map[string]any{
				"path": "etc/kubelet.conf", "contents": map[string]any{"source": "data:,x"},
			}}},
		}, "path not absolute"},
		{"a file whose source is not a URL", map[string]any{
			"ignition": map[string]any{"version": "3.2.0"},
			"storage": map[string]any{"files": []any{map[string]any{
				"path": "/etc/x.conf", "contents": map[string]any{"source": "::not a url"},
			}}},
		}, "source"},
		{"a unit without a unit suffix", systemd(unit("swap", goodUnit)), "invalid systemd unit extension"},
		{"a unit whose section header is not closed", systemd(unit("bad.service", "[Unit\nDescription=x\n")), "unable to find end of section"},
		{"an enabled unit without an [Install] section", systemd(unit("noinstall.service", "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\n")),
			"is enabled, but has no install section"},
		{"a unit with an option outside any section", systemd(unit("orphan.service", "Description=x\n[Install]\nWantedBy=multi-user.target\n")), "orphan.service"},
		{"a drop-in that is not a .conf file", systemd(map[string]any{"name": "system.slice", "dropins": []any{
			map[string]any{"name": "90-no-swap", "contents": "[Slice]\nMemorySwapMax=0\n"},
		}}), "invalid systemd drop-in extension"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := ignitioncheck.Check(machineConfig(tc.config))
			g.Expect(err).To(HaveOccurred())
			t.Logf("refused: %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
		})
	}
}
