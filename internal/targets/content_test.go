package targets_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// mcOf is a MachineConfig named mc with the spec of the YAML document.
func mcOf(spec string) *unstructured.Unstructured {
	mc := &unstructured.Unstructured{Object: map[string]any{}}
	var s map[string]any
	if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
		panic(err)
	}
	mc.Object["spec"] = s
	mc.SetGroupVersionKind(targets.MachineConfig.GVK)
	mc.SetName("mc")
	return mc
}

func gzipBase64(s string) string {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestContentOf(t *testing.T) {
	cases := []struct {
		name string
		spec string
		want targets.NodeContent
	}{
		{
			name: "when the MachineConfig holds files, units, kernel arguments, extensions, an OS image, a kernel type and FIPS, it should read each",
			spec: `
config:
  ignition: {version: 3.2.0}
  storage:
    files:
    - path: /etc/swap.conf
      mode: 420
      contents: {source: "data:text/plain;charset=utf-8;base64,c3dhcD1vbgo="}
    - path: /etc/plain
      contents: {source: "data:,a%20b"}
  systemd:
    units:
    - name: swap.service
      enabled: true
      contents: "[Unit]\n"
      dropins:
      - {name: 10-x.conf, contents: "[Service]\n"}
    - name: old.service
      mask: true
kernelArguments: [psi=1, "intel_iommu=on iommu=pt"]
extensions: [usbguard]
osImageURL: quay.io/os@sha256:1
kernelType: realtime
fips: true
`,
			want: targets.NodeContent{
				Files: map[string]targets.FileContent{
					"/etc/swap.conf": {Contents: "swap=on\n", Mode: ptr.To(420)},
					"/etc/plain":     {Contents: "a b"},
				},
				Units: map[string]targets.UnitContent{
					"swap.service": {Contents: ptr.To("[Unit]\n"), Enabled: ptr.To(true), Dropins: map[string]string{"10-x.conf": "[Service]\n"}},
					"old.service":  {Mask: ptr.To(true)},
				},
				KernelArguments: []string{"psi=1", "intel_iommu=on", "iommu=pt"},
				Extensions:      []string{"usbguard"},
				OSImageURL:      "quay.io/os@sha256:1",
				KernelType:      "realtime",
				FIPS:            true,
			},
		},
		{
			name: "when a file's contents are gzip-compressed, it should decompress them",
			spec: `
config:
  ignition: {version: 3.4.0}
  storage:
    files:
    - path: /etc/big
      contents: {compression: gzip, source: "data:;base64,` + gzipBase64("a lot of text\n") + `"}
`,
			want: targets.NodeContent{Files: map[string]targets.FileContent{"/etc/big": {Contents: "a lot of text\n"}}, Units: map[string]targets.UnitContent{}},
		},
		{
			name: "when a file appends contents, it should read them after its contents",
			spec: `
config:
  ignition: {version: 3.5.0}
  storage:
    files:
    - path: /etc/hosts.extra
      contents: {source: "data:,one%0A"}
      append: [{source: "data:,two%0A"}]
`,
			want: targets.NodeContent{Files: map[string]targets.FileContent{"/etc/hosts.extra": {Contents: "one\ntwo\n"}}, Units: map[string]targets.UnitContent{}},
		},
		{
			name: "when a file's contents are remote, it should keep their location",
			spec: `
config:
  ignition: {version: 3.1.0}
  storage:
    files:
    - path: /etc/remote
      contents: {source: "https://example.com/remote"}
`,
			want: targets.NodeContent{Files: map[string]targets.FileContent{"/etc/remote": {Source: "https://example.com/remote"}}, Units: map[string]targets.UnitContent{}},
		},
		{
			name: "when the MachineConfig has no Ignition config, it should hold no files or units",
			spec: `kernelArguments: [psi=1]`,
			want: targets.NodeContent{Files: map[string]targets.FileContent{}, Units: map[string]targets.UnitContent{}, KernelArguments: []string{"psi=1"}},
		},
		{
			name: "when its Ignition config is empty, it should hold no files or units",
			spec: `{config: {}, kernelArguments: [psi=1]}`,
			want: targets.NodeContent{Files: map[string]targets.FileContent{}, Units: map[string]targets.UnitContent{}, KernelArguments: []string{"psi=1"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := targets.ContentOf(mcOf(tc.spec))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestContentOfRefusesWhatIgnitionRefuses(t *testing.T) {
	cases := []struct {
		name, spec, err string
	}{
		{"when the Ignition config is of spec 2, it should refuse it",
			`config: {ignition: {version: 2.2.0}}`, "read the Ignition config of MachineConfig mc: unsupported config version"},
		{"when a data URL is not valid, it should refuse the config, as the Machine Config Operator does",
			`config: {ignition: {version: 3.2.0}, storage: {files: [{path: /etc/x, contents: {source: "data:,a b"}}]}}`,
			"read the Ignition config of MachineConfig mc: config is not valid"},
		{"when a compression is not gzip, it should refuse the config",
			`config: {ignition: {version: 3.2.0}, storage: {files: [{path: /etc/x, contents: {compression: xz, source: "data:,a"}}]}}`,
			"read the Ignition config of MachineConfig mc: config is not valid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := targets.ContentOf(mcOf(tc.spec))
			g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
		})
	}
}

func TestMissing(t *testing.T) {
	full := mcOf(`
config:
  ignition: {version: 3.5.0}
  storage:
    files:
    - {path: /etc/a, mode: 420, contents: {source: "data:,a"}}
    - {path: /etc/b, contents: {source: "data:;base64,Yg=="}}
  systemd:
    units:
    - name: a.service
      enabled: true
      contents: "[Unit]\n"
      dropins: [{name: 10-a.conf, contents: "[Service]\n"}]
kernelArguments: [psi=1, "intel_iommu=on iommu=pt"]
extensions: [usbguard]
osImageURL: quay.io/os@sha256:1
kernelType: default
`)
	cases := []struct {
		name string
		part string
		want []string
	}{
		{"when the configuration holds everything of the part, it should miss nothing",
			`
config:
  ignition: {version: 3.2.0}
  storage: {files: [{path: /etc/b, contents: {source: "data:,b"}}]}
  systemd: {units: [{name: a.service, enabled: true, dropins: [{name: 10-a.conf, contents: "[Service]\n"}]}]}
kernelArguments: ["iommu=pt intel_iommu=on"]
`, nil},
		{"when the part sets no kernel type, or the default one, it should not compare it",
			`{kernelType: default}`, nil},
		{"when a kernel argument is missing, it should name it",
			`{kernelArguments: [psi=1, "nosmt mitigations=auto"]}`, []string{"kernel argument nosmt", "kernel argument mitigations=auto"}},
		{"when files are missing or hold other contents or another mode, it should name each, by path",
			`
config:
  ignition: {version: 3.2.0}
  storage:
    files:
    - {path: /etc/c, contents: {source: "data:,c"}}
    - {path: /etc/b, contents: {source: "data:,B"}}
    - {path: /etc/a, mode: 384, contents: {source: "data:,a"}}
`, []string{"file /etc/a (mode 0600)", "file /etc/b (different contents)", "file /etc/c"}},
		{"when units are missing, hold other contents, another enablement or lack a drop-in, it should name each",
			`
config:
  ignition: {version: 3.2.0}
  systemd:
    units:
    - {name: b.service, enabled: true}
    - {name: a.service, enabled: false, dropins: [{name: 20-b.conf, contents: "x"}, {name: 10-a.conf, contents: "y"}]}
`, []string{"systemd unit a.service (not disabled)", "drop-in 10-a.conf of systemd unit a.service (different contents)",
				"drop-in 20-b.conf of systemd unit a.service", "systemd unit b.service"}},
		{"when a unit's contents differ, it should say so",
			`{config: {ignition: {version: 3.2.0}, systemd: {units: [{name: a.service, contents: "[Unit]\nDescription=x\n"}]}}}`,
			[]string{"systemd unit a.service (different contents)"}},
		{"when a unit should be masked, it should say so",
			`{config: {ignition: {version: 3.2.0}, systemd: {units: [{name: a.service, mask: true}]}}}`,
			[]string{"systemd unit a.service (not masked)"}},
		{"when an extension, the OS image, the kernel type or FIPS differ, it should name each",
			`{extensions: [usbguard, kernel-devel], osImageURL: "quay.io/os@sha256:2", kernelType: realtime, fips: true}`,
			[]string{"extension kernel-devel", "OS image quay.io/os@sha256:2", "kernel type realtime", "FIPS mode"}},
	}
	have, err := targets.ContentOf(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			part, err := targets.ContentOf(mcOf(tc.part))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(have.Missing(part)).To(Equal(tc.want))
		})
	}
}
