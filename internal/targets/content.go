package targets

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	ign "github.com/coreos/ignition/v2/config/v3_5"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// This file reads what a MachineConfig puts on a node, so that a rollout is judged by what
// the pool's rendered configuration holds, never by its name: the Machine Config Operator
// names a rendered configuration after a hash of its content, so a correction that restores
// the content of an earlier configuration renders the earlier name again.

// KubeletConfigFile is the file the Machine Config Operator writes a KubeletConfig to: the
// MachineConfig it generates from a KubeletConfig holds the kubelet configuration there
// (findKubeletConfig in pkg/controller/kubelet-config).
const KubeletConfigFile = "/etc/kubernetes/kubelet.conf"

// NodeContent is what a MachineConfig puts on the nodes of the pools that select it.
type NodeContent struct {
	// Files by path.
	Files map[string]FileContent
	// Units are the systemd units, by name.
	Units map[string]UnitContent
	// KernelArguments, one argument each (an entry "a b" of the MachineConfig is two).
	KernelArguments []string
	// Extensions are the RHCOS extensions to install.
	Extensions []string
	// OSImageURL is the OS image ("" when the MachineConfig sets none).
	OSImageURL string
	// KernelType is spec.kernelType ("" when the MachineConfig sets none; the Machine
	// Config Operator renders that as "default").
	KernelType string
	// FIPS is spec.fips.
	FIPS bool
}

// FileContent is a file of a MachineConfig.
type FileContent struct {
	// Contents are the decoded contents (data URL decoded, gzip decompressed), appended
	// parts included.
	Contents string
	// Source is the contents' source when it is not a data URL (a remote file, which is
	// compared by its location); "" otherwise.
	Source string
	// Mode is the file's mode; nil when the MachineConfig sets none.
	Mode *int
}

// UnitContent is a systemd unit of a MachineConfig; nil fields are not set.
type UnitContent struct {
	Contents *string
	Enabled  *bool
	Mask     *bool
	// Dropins are the unit's drop-ins: name → contents.
	Dropins map[string]string
}

// ContentOf reads what the MachineConfig mc puts on a node: its Ignition config (spec 3.0 to
// 3.5) in spec.config, and the kernel arguments, extensions, OS image, kernel type and FIPS
// of its spec. A MachineConfig without an Ignition config (or with an empty one) puts no
// files or units, as the Machine Config Operator merges it.
func ContentOf(mc *unstructured.Unstructured) (NodeContent, error) {
	out := NodeContent{Files: map[string]FileContent{}, Units: map[string]UnitContent{}}
	spec, _, _ := unstructured.NestedMap(mc.Object, "spec")
	if config, ok := spec["config"].(map[string]any); ok && len(config) > 0 {
		cfg, err := parseIgnition(config)
		if err != nil {
			return NodeContent{}, fmt.Errorf("read the Ignition config of MachineConfig %s: %w", mc.GetName(), err)
		}
		for _, f := range cfg.Storage.Files {
			file, err := fileContent(f)
			if err != nil {
				return NodeContent{}, fmt.Errorf("read file %s of MachineConfig %s: %w", f.Path, mc.GetName(), err)
			}
			out.Files[f.Path] = file
		}
		for _, u := range cfg.Systemd.Units {
			out.Units[u.Name] = unitContent(u)
		}
	}
	args, _, _ := unstructured.NestedStringSlice(spec, "kernelArguments")
	for _, a := range args {
		out.KernelArguments = append(out.KernelArguments, strings.Fields(a)...)
	}
	out.Extensions, _, _ = unstructured.NestedStringSlice(spec, "extensions")
	out.OSImageURL, _, _ = unstructured.NestedString(spec, "osImageURL")
	out.KernelType, _, _ = unstructured.NestedString(spec, "kernelType")
	out.FIPS, _, _ = unstructured.NestedBool(spec, "fips")
	return out, nil
}

func parseIgnition(config map[string]any) (igntypes.Config, error) {
	raw, err := json.Marshal(config)
	if err != nil {
		return igntypes.Config{}, err
	}
	cfg, report, err := ign.ParseCompatibleVersion(raw)
	if err != nil {
		if detail := strings.TrimSpace(report.String()); detail != "" {
			return igntypes.Config{}, fmt.Errorf("%w: %s", err, detail)
		}
		return igntypes.Config{}, err
	}
	return cfg, nil
}

func fileContent(f igntypes.File) (FileContent, error) {
	out := FileContent{Mode: f.Mode}
	var contents strings.Builder
	for _, r := range append([]igntypes.Resource{f.Contents}, f.Append...) {
		if r.Source == nil {
			continue
		}
		if !strings.HasPrefix(*r.Source, "data:") {
			out.Source += *r.Source
			continue
		}
		data, err := decodeResource(*r.Source, r.Compression)
		if err != nil {
			return FileContent{}, err
		}
		contents.Write(data)
	}
	out.Contents = contents.String()
	return out, nil
}

// decodeResource decodes a data URL, decompressing it when Ignition's compression says so
// (gzip is the only compression Ignition 3 knows).
func decodeResource(source string, compression *string) ([]byte, error) {
	du, err := dataurl.DecodeString(source)
	if err != nil {
		return nil, fmt.Errorf("decode data URL: %w", err)
	}
	if compression == nil || *compression == "" {
		return du.Data, nil
	}
	if *compression != "gzip" {
		return nil, fmt.Errorf("unknown compression %q", *compression)
	}
	r, err := gzip.NewReader(bytes.NewReader(du.Data))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	defer func() { _ = r.Close() }()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	return data, nil
}

func unitContent(u igntypes.Unit) UnitContent {
	out := UnitContent{Contents: u.Contents, Enabled: u.Enabled, Mask: u.Mask}
	if len(u.Dropins) > 0 {
		out.Dropins = map[string]string{}
		for _, d := range u.Dropins {
			if d.Contents != nil {
				out.Dropins[d.Name] = *d.Contents
			} else {
				out.Dropins[d.Name] = ""
			}
		}
	}
	return out
}

// Missing says, one entry each, what of part the configuration c does not hold: a file,
// a unit or a drop-in it lacks or holds otherwise, a kernel argument or extension it lacks,
// another OS image or kernel type, FIPS off. Empty means c contains part. What part leaves
// unset (a file's mode, a unit's enablement) is not compared.
func (c NodeContent) Missing(part NodeContent) []string {
	var out []string
	for _, path := range sortedKeys(part.Files) {
		want := part.Files[path]
		have, ok := c.Files[path]
		switch {
		case !ok:
			out = append(out, "file "+path)
		case have.Contents != want.Contents || have.Source != want.Source:
			out = append(out, "file "+path+" (different contents)")
		case want.Mode != nil && (have.Mode == nil || *have.Mode != *want.Mode):
			out = append(out, fmt.Sprintf("file %s (mode %04o)", path, *want.Mode))
		}
	}
	for _, name := range sortedKeys(part.Units) {
		out = append(out, missingOfUnit(name, c.Units, part.Units[name])...)
	}
	have := setOf(c.KernelArguments)
	for _, a := range part.KernelArguments {
		if !have[a] {
			out = append(out, "kernel argument "+a)
		}
	}
	have = setOf(c.Extensions)
	for _, e := range part.Extensions {
		if !have[e] {
			out = append(out, "extension "+e)
		}
	}
	if part.OSImageURL != "" && part.OSImageURL != c.OSImageURL {
		out = append(out, "OS image "+part.OSImageURL)
	}
	if part.KernelType != "" && canonicalKernelType(part.KernelType) != canonicalKernelType(c.KernelType) {
		out = append(out, "kernel type "+part.KernelType)
	}
	if part.FIPS && !c.FIPS {
		out = append(out, "FIPS mode")
	}
	return out
}

func missingOfUnit(name string, units map[string]UnitContent, want UnitContent) []string {
	have, ok := units[name]
	if !ok {
		return []string{"systemd unit " + name}
	}
	var out []string
	switch {
	case want.Contents != nil && (have.Contents == nil || *have.Contents != *want.Contents):
		out = append(out, "systemd unit "+name+" (different contents)")
	case want.Enabled != nil && (have.Enabled == nil || *have.Enabled != *want.Enabled):
		if *want.Enabled {
			out = append(out, "systemd unit "+name+" (not enabled)")
		} else {
			out = append(out, "systemd unit "+name+" (not disabled)")
		}
	case want.Mask != nil && *want.Mask != (have.Mask != nil && *have.Mask):
		if *want.Mask {
			out = append(out, "systemd unit "+name+" (not masked)")
		} else {
			out = append(out, "systemd unit "+name+" (masked)")
		}
	}
	for _, d := range sortedKeys(want.Dropins) {
		contents, ok := have.Dropins[d]
		switch {
		case !ok:
			out = append(out, "drop-in "+d+" of systemd unit "+name)
		case contents != want.Dropins[d]:
			out = append(out, "drop-in "+d+" of systemd unit "+name+" (different contents)")
		}
	}
	return out
}

// canonicalKernelType is the kernel type as the Machine Config Operator renders it: a
// MachineConfig that sets none runs the default kernel.
func canonicalKernelType(t string) string {
	if t == "" {
		return "default"
	}
	return t
}

func setOf(items []string) map[string]bool {
	out := make(map[string]bool, len(items))
	for _, i := range items {
		out[i] = true
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
