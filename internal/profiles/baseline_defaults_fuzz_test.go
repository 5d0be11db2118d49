package profiles_test

// FuzzPlatformBaselineDefaults checks platform-baseline's Defaults and Validate against the
// contract of profiles.Profile and the CRD, as FuzzLoadAwareDefaults does for a flat block,
// at every level of options.platformBaseline: its component blocks (swap, numa,
// pciPassthrough, vfio, usbPassthrough, kubeletPerformance, nodeHealthCheck, mtv, metalLB,
// aaq) and their fields. Defaults never panics, never modifies its input nor shares memory
// with it, keeps every field the user set, fills what the CRD defaults as the API server
// does (a component block the CRD defaults to {} is added, then defaulted inside like a
// block the user gave; options without platformBaseline are defaulted as platformBaseline:
// {}), fills nothing else, and is idempotent. Validate never panics, never modifies its
// input, and accepts every defaulted option set admission accepts.
//
// The defaults and admission rules are read from the CRD. Admission is evaluated here on
// the JSON of the defaulted Go value: enum, minimum, maximum, pattern, maxLength, maxItems,
// required, the unique keys of x-kubernetes-list-type: map lists, and the CEL rules in
// baselineRules (vfio and usbPassthrough: enabled requires at least one device; the swap
// partitionLabel is not . or ..). Reading
// the CRD fails on any schema keyword or CEL rule this test does not model, so a new
// constraint is modelled here before the test runs again. Left to the envtest specs in
// internal/profiles/baseline/clusters_test.go, which run the real API server: that the
// server defaults as modelled here (to what Defaults fills in), and that it evaluates the
// CEL rules as mirrored here, refusing with their messages. Not checked here at all: what
// a Go value cannot express (null, an empty devices list or partitionLabel "", which the
// Go types omit, and fields of the wrong type).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/utils/ptr"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/baseline"
)

// The component blocks and fields a fuzzed platformBaseline sets (bits of the shape
// argument, after withOptions and withBlock). A field is set only with its block.
const (
	withSwap = withBlock << (iota + 1)
	withNUMA
	withPCI
	withVFIO
	withUSB
	withKubelet
	withNodeHealth
	withMTV
	withMetalLB
	withAAQ
	withSwapEnabled
	withSwapLabel
	withNUMAEnabled
	withPCIEnabled
	withVFIOEnabled
	withVFIODevices
	withUSBEnabled
	withUSBDevices
	withKubeletEnabled
	withMaxPods
	withAutoSizing
	withCPUManager
	withNodeHealthEnabled
	withMTVEnabled
	withMetalLBEnabled
	withAAQEnabled

	withEveryBlock = withSwap | withNUMA | withPCI | withVFIO | withUSB | withKubelet | withNodeHealth | withMTV |
		withMetalLB | withAAQ
	withEveryField = withSwapEnabled | withSwapLabel | withNUMAEnabled | withPCIEnabled | withVFIOEnabled |
		withVFIODevices | withUSBEnabled | withUSBDevices | withKubeletEnabled | withMaxPods | withAutoSizing |
		withCPUManager | withNodeHealthEnabled | withMTVEnabled | withMetalLBEnabled | withAAQEnabled
)

// baselineSwitches are the boolean fields of platformBaseline, in the order of the bits of
// the on argument that give their values: the shape bits of the block and of the field,
// and the field in a block that is there.
var baselineSwitches = []struct {
	block, field uint32
	at           func(*advisorv1alpha1.PlatformBaselineOptions) **bool
}{
	{withSwap, withSwapEnabled, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool { return &o.Swap.Enabled }},
	{withNUMA, withNUMAEnabled, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool { return &o.NUMA.Enabled }},
	{withPCI, withPCIEnabled, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool { return &o.PCIPassthrough.Enabled }},
	{withVFIO, withVFIOEnabled, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool { return &o.VFIO.Enabled }},
	{withUSB, withUSBEnabled, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool { return &o.USBPassthrough.Enabled }},
	{withKubelet, withKubeletEnabled, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool { return &o.KubeletPerformance.Enabled }},
	{withKubelet, withAutoSizing, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool {
		return &o.KubeletPerformance.AutoSizingReserved
	}},
	{withKubelet, withCPUManager, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool { return &o.KubeletPerformance.CPUManager }},
	{withNodeHealth, withNodeHealthEnabled, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool { return &o.NodeHealthCheck.Enabled }},
	{withMTV, withMTVEnabled, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool { return &o.MTV.Enabled }},
	{withMetalLB, withMetalLBEnabled, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool { return &o.MetalLB.Enabled }},
	{withAAQ, withAAQEnabled, func(o *advisorv1alpha1.PlatformBaselineOptions) **bool { return &o.AAQ.Enabled }},
}

// Values of switches in the on argument (their bits, in baselineSwitches order).
const (
	onVFIO = 1 << 3
	onUSB  = 1 << 4
	onAAQ  = 1 << 11
)

func FuzzPlatformBaselineDefaults(f *testing.F) {
	schema := nestedOptionsSchema(f, "platformBaseline")
	every := uint32(withOptions | withBlock | withEveryBlock | withEveryField)
	none := uint8(0)
	onEverything := uint16(1<<len(baselineSwitches) - 1)
	f.Add(uint32(0), uint16(0), int32(0), "", none, "", "", none, "", "", "")
	f.Add(uint32(withOptions), uint16(0), int32(0), "", none, "", "", none, "", "", "")
	f.Add(uint32(withOptions|withBlock), uint16(0), int32(0), "", none, "", "", none, "", "", "")
	f.Add(uint32(withOptions|withBlock|withEveryBlock), uint16(0), int32(0), "", none, "", "", none, "", "", "")
	f.Add(every, onEverything, int32(500), "CNV_SWAP",
		uint8(1), "10de:1eb8", "nvidia.com/TU104GL_Tesla_T4", uint8(1), "046d", "c52b", "kubevirt.io/usb-receiver")
	f.Add(every, uint16(0), int32(10), "A.b-c_9", none, "", "", none, "", "", "")
	f.Add(every, onEverything, int32(2500), strings.Repeat("x", 36),
		uint8(32), "FFFF:0000", "a/B", uint8(32), "ABCD", "ef01", "a.b-c/d_e.F")
	f.Add(uint32(withOptions|withBlock|withKubelet|withMaxPods), uint16(0), int32(9), "", none, "", "", none, "", "", "")
	f.Add(uint32(withOptions|withBlock|withKubelet|withMaxPods), uint16(0), int32(2501), "", none, "", "", none, "", "", "")
	f.Add(uint32(withOptions|withBlock|withKubelet|withMaxPods), uint16(0), int32(0), "", none, "", "", none, "", "", "")
	f.Add(uint32(withOptions|withBlock|withKubelet|withMaxPods), uint16(0), int32(-1), "", none, "", "", none, "", "", "")
	f.Add(uint32(withOptions|withBlock|withKubelet|withMaxPods|withAAQ|withAAQEnabled|withSwap|withSwapLabel), uint16(onAAQ),
		int32(250), "VM_SWAP", none, "", "", none, "", "", "")
	f.Add(uint32(withOptions|withBlock|withVFIO|withVFIOEnabled), uint16(onVFIO), int32(0), "", none, "", "", none, "", "", "")
	f.Add(uint32(withOptions|withBlock|withUSB|withUSBEnabled|withUSBDevices), uint16(onUSB), int32(0), "",
		none, "", "", none, "", "", "")
	f.Add(uint32(withOptions|withBlock|withVFIO|withVFIODevices|withUSB|withUSBDevices), uint16(0), int32(0), "",
		uint8(1), "10de:1eb8", "nvidia.com/T4", uint8(1), "046d", "c52b", "kubevirt.io/usb-receiver")
	f.Add(every, onEverything, int32(500), "CNV_SWAP",
		uint8(33), "10de:1eb8", "nvidia.com/T4", uint8(33), "046d", "c52b", "kubevirt.io/usb-receiver")
	f.Add(every, onEverything, int32(500), "CNV_SWAP",
		uint8(2), "10de:0001", "nvidia.com/T4", uint8(2), "046d", "c52b", "kubevirt.io/usb-1")
	f.Add(every, onEverything, int32(500), "bad label!",
		uint8(1), "10de", "NVIDIA/T4", uint8(1), "xyz", "c52b0", "a/"+strings.Repeat("b", 252))
	f.Add(uint32(withOptions|withBlock|withSwap|withSwapLabel), uint16(0), int32(0), strings.Repeat("x", 37),
		none, "", "", none, "", "", "")
	f.Add(uint32(withOptions|withBlock|withSwap|withSwapLabel), uint16(0), int32(0), "..",
		none, "", "", none, "", "", "")
	f.Add(uint32(withOptions|withBlock|withSwap|withSwapLabel), uint16(0), int32(0), ".",
		none, "", "", none, "", "", "")

	p := baseline.New()
	f.Fuzz(func(t *testing.T, shape uint32, on uint16, maxPods int32, label string,
		pciCount uint8, pciID, pciResource string, usbCount uint8, usbVendor, usbProduct, usbResource string) {
		var opts *advisorv1alpha1.ProfileOptions
		if shape&withOptions != 0 {
			opts = &advisorv1alpha1.ProfileOptions{}
			if shape&withBlock != 0 {
				o := baselineBlocks(shape)
				for i, s := range baselineSwitches {
					if shape&s.block != 0 && shape&s.field != 0 {
						*s.at(o) = ptr.To(on&(1<<i) != 0)
					}
				}
				if shape&withSwap != 0 && shape&withSwapLabel != 0 {
					o.Swap.PartitionLabel = label
				}
				if shape&withKubelet != 0 && shape&withMaxPods != 0 {
					o.KubeletPerformance.MaxPods = ptr.To(maxPods)
				}
				if shape&withVFIO != 0 && shape&withVFIODevices != 0 {
					o.VFIO.Devices = pciDevices(pciCount, pciID, pciResource)
				}
				if shape&withUSB != 0 && shape&withUSBDevices != 0 {
					o.USBPassthrough.Devices = usbDevices(usbCount, usbVendor, usbProduct, usbResource)
				}
				opts.PlatformBaseline = o
			}
		}
		checkNestedDefaults(t, p, schema, opts)
	})
}

// baselineBlocks is a platformBaseline with the empty component blocks shape sets.
func baselineBlocks(shape uint32) *advisorv1alpha1.PlatformBaselineOptions {
	o := &advisorv1alpha1.PlatformBaselineOptions{}
	if shape&withSwap != 0 {
		o.Swap = &advisorv1alpha1.BaselineSwapOptions{}
	}
	if shape&withNUMA != 0 {
		o.NUMA = &advisorv1alpha1.BaselineNUMAOptions{}
	}
	if shape&withPCI != 0 {
		o.PCIPassthrough = &advisorv1alpha1.BaselinePCIPassthroughOptions{}
	}
	if shape&withVFIO != 0 {
		o.VFIO = &advisorv1alpha1.BaselineVFIOOptions{}
	}
	if shape&withUSB != 0 {
		o.USBPassthrough = &advisorv1alpha1.BaselineUSBPassthroughOptions{}
	}
	if shape&withKubelet != 0 {
		o.KubeletPerformance = &advisorv1alpha1.BaselineKubeletPerformanceOptions{}
	}
	if shape&withNodeHealth != 0 {
		o.NodeHealthCheck = &advisorv1alpha1.BaselineNodeHealthCheckOptions{}
	}
	if shape&withMTV != 0 {
		o.MTV = &advisorv1alpha1.BaselineMTVOptions{}
	}
	if shape&withMetalLB != 0 {
		o.MetalLB = &advisorv1alpha1.BaselineMetalLBOptions{}
	}
	if shape&withAAQ != 0 {
		o.AAQ = &advisorv1alpha1.BaselineAAQOptions{}
	}
	return o
}

// pciDevices is a list of count%40 PCI devices (empty, not nil, for 0), up to past the
// CRD's maxItems: the first is the fuzzed one, the others valid and of distinct
// vendorDevice 10de:0001, 10de:0002...
func pciDevices(count uint8, id, resource string) []advisorv1alpha1.PCIDevice {
	out := make([]advisorv1alpha1.PCIDevice, count%40)
	for i := range out {
		out[i] = advisorv1alpha1.PCIDevice{VendorDevice: fmt.Sprintf("10de:%04x", i), ResourceName: fmt.Sprintf("nvidia.com/gpu-%d", i)}
	}
	if len(out) > 0 {
		out[0] = advisorv1alpha1.PCIDevice{VendorDevice: id, ResourceName: resource}
	}
	return out
}

// usbDevices is as pciDevices for USB devices, the others of distinct resourceName
// kubevirt.io/usb-1, kubevirt.io/usb-2...
func usbDevices(count uint8, vendor, product, resource string) []advisorv1alpha1.USBDevice {
	out := make([]advisorv1alpha1.USBDevice, count%40)
	for i := range out {
		out[i] = advisorv1alpha1.USBDevice{Vendor: "046d", Product: fmt.Sprintf("%04x", i), ResourceName: fmt.Sprintf("kubevirt.io/usb-%d", i)}
	}
	if len(out) > 0 {
		out[0] = advisorv1alpha1.USBDevice{Vendor: vendor, Product: product, ResourceName: resource}
	}
	return out
}

// checkNestedDefaults checks platform-baseline's Defaults and Validate on opts, at every
// level of the platformBaseline block.
func checkNestedDefaults(t *testing.T, p profiles.Profile, schema *schemaNode, opts *advisorv1alpha1.ProfileOptions) {
	t.Helper()
	in := toJSON(t, opts)
	before := opts.DeepCopy()
	out := p.Defaults(opts)
	if !reflect.DeepEqual(opts, before) {
		t.Fatalf("Defaults modified its input: %s, now %s", toJSON(t, before), toJSON(t, opts))
	}
	if out == nil || out.PlatformBaseline == nil {
		t.Fatalf("Defaults(%s) = %s: no platformBaseline block", in, toJSON(t, out))
	}
	if opts != nil {
		if path, shared := sharedMemory(reflect.ValueOf(opts), reflect.ValueOf(out), "options"); shared {
			t.Fatalf("Defaults(%s) returns options that share %s with its input", in, path)
		}
	}
	if blocks := slices.Sorted(maps.Keys(jsonObject(t, out))); !slices.Equal(blocks, []string{"platformBaseline"}) {
		t.Fatalf("Defaults(%s) = %s: blocks %v, not only platformBaseline", in, toJSON(t, out), blocks)
	}

	set := map[string]any{} // what the user set, as JSON; no block at all is taken as {}
	if opts != nil && opts.PlatformBaseline != nil {
		set = jsonObject(t, opts.PlatformBaseline)
	}
	checkNestedFields(t, in, schema, "platformBaseline", set, "the user's", jsonObject(t, out.PlatformBaseline))

	again := p.Defaults(out)
	if !reflect.DeepEqual(again, out) {
		t.Fatalf("Defaults is not idempotent: Defaults(%s) = %s", toJSON(t, out), toJSON(t, again))
	}
	if path, shared := sharedMemory(reflect.ValueOf(out), reflect.ValueOf(again), "options"); shared {
		t.Fatalf("Defaults(%s) returns options that share %s with its input", toJSON(t, out), path)
	}

	for _, o := range []*advisorv1alpha1.ProfileOptions{opts, out} {
		before := o.DeepCopy()
		err := p.Validate(o)
		if !reflect.DeepEqual(o, before) {
			t.Fatalf("Validate modified its input: %s, now %s", toJSON(t, before), toJSON(t, o))
		}
		if err != nil && strings.TrimSpace(err.Error()) == "" {
			t.Fatalf("Validate(%s) failed without a message", toJSON(t, o))
		}
	}
	if reason := schema.refuses(jsonObject(t, out.PlatformBaseline)); reason == "" {
		if err := p.Validate(out); err != nil {
			t.Fatalf("Validate refuses options admission accepts, %s: %v", toJSON(t, out), err)
		}
	}
}

// checkNestedFields checks the defaulted object got at path against set, the object as
// given (by the user, or as the CRD's default of its parent: origin says which), under s:
// every field set is kept (an object with properties is checked field by field, the rest
// whole), every field not set is the CRD's default (an object default, itself defaulted
// inside as the API server does) or left out if the CRD has none, and got has no field
// the CRD does not have.
func checkNestedFields(t *testing.T, in string, s *schemaNode, path string, set map[string]any, origin string, got map[string]any) {
	t.Helper()
	for field := range got {
		if _, ok := s.Properties[field]; !ok {
			t.Fatalf("Defaults(%s) sets %s.%s, which the CRD does not have", in, path, field)
		}
	}
	for _, field := range slices.Sorted(maps.Keys(s.Properties)) {
		prop, at := s.Properties[field], path+"."+field
		given, isSet := set[field]
		from := origin
		if !isSet {
			given, from = prop.Default, "the CRD's default"
		}
		value, has := got[field]
		switch {
		case given == nil && has:
			t.Fatalf("Defaults(%s) sets %s to %v, which the CRD does not default", in, at, value)
		case given == nil:
		case len(prop.Properties) > 0:
			givenObject, _ := given.(map[string]any)
			gotObject, ok := value.(map[string]any)
			if givenObject == nil || !ok {
				t.Fatalf("Defaults(%s) leaves %s at %v, not %s %v", in, at, value, from, given)
			}
			checkNestedFields(t, in, prop, at, givenObject, from, gotObject)
		case !reflect.DeepEqual(value, given):
			t.Fatalf("Defaults(%s) leaves %s at %v, not %s %v", in, at, value, from, given)
		}
	}
}

// schemaNode is what the CRD says of one value and, for an object or a list, of its parts.
// Its fields are the schema keywords this test models; reading the CRD fails on any other.
type schemaNode struct {
	Description string                 `json:"description"`
	Type        string                 `json:"type"`
	Format      string                 `json:"format"`
	Default     any                    `json:"default"`
	Minimum     *float64               `json:"minimum"`
	Maximum     *float64               `json:"maximum"`
	MaxLength   *int                   `json:"maxLength"`
	MaxItems    *int                   `json:"maxItems"`
	Enum        []any                  `json:"enum"`
	Pattern     string                 `json:"pattern"`
	Required    []string               `json:"required"`
	Properties  map[string]*schemaNode `json:"properties"`
	Items       *schemaNode            `json:"items"`
	ListType    string                 `json:"x-kubernetes-list-type"`
	ListMapKeys []string               `json:"x-kubernetes-list-map-keys"`
	Validations []struct {
		Rule    string `json:"rule"`
		Message string `json:"message"`
	} `json:"x-kubernetes-validations"`

	pattern *regexp.Regexp
}

// nestedOptionsSchema reads the schema of spec.options.<name> from the CRD, at every level.
func nestedOptionsSchema(f *testing.F, name string) *schemaNode {
	f.Helper()
	block := optionsBlockJSON(f, name)
	s := &schemaNode{}
	dec := json.NewDecoder(bytes.NewReader(block))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		f.Fatalf("spec.options.%s uses what this test does not model: %v", name, err)
	}
	if len(s.Properties) == 0 {
		f.Fatalf("the CRD has no fields in spec.options.%s", name)
	}
	s.prepare(f, "spec.options."+name)
	return s
}

// prepare compiles the patterns under s and checks that this test models its formats,
// list types and CEL rules.
func (s *schemaNode) prepare(f *testing.F, path string) {
	f.Helper()
	if !slices.Contains([]string{"object", "array", "string", "integer", "number", "boolean"}, s.Type) {
		f.Fatalf("%s has type %q, which this test does not model", path, s.Type)
	}
	if !slices.Contains([]string{"", "int32", "int64"}, s.Format) {
		f.Fatalf("%s has format %q, which this test does not model", path, s.Format)
	}
	if s.ListType != "" && s.ListType != "atomic" && (s.ListType != "map" || len(s.ListMapKeys) == 0) {
		f.Fatalf("%s is a list of type %q, which this test does not model", path, s.ListType)
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			f.Fatalf("the CRD's pattern %q at %s: %v", s.Pattern, path, err)
		}
		s.pattern = re
	}
	for _, v := range s.Validations {
		if _, ok := baselineRules[v.Rule]; !ok {
			f.Fatalf("%s has the CEL rule %q, which this test does not model: add it to baselineRules", path, v.Rule)
		}
	}
	for field, prop := range s.Properties {
		prop.prepare(f, path+"."+field)
	}
	if s.Items != nil {
		s.Items.prepare(f, path+"[]")
	}
}

// baselineRules models the CEL rules under options.platformBaseline, on the defaulted
// value the rule is on (as JSON). Each mirrors its rule exactly; the envtest specs check
// that the API server evaluates them so and refuses with their messages.
var baselineRules = map[string]func(self any) bool{
	// vfio and usbPassthrough: enabled requires at least one device.
	"!has(self.enabled) || !self.enabled || (has(self.devices) && size(self.devices) > 0)": func(self any) bool {
		o, _ := self.(map[string]any)
		enabled, hasEnabled := o["enabled"].(bool)
		devices, hasDevices := o["devices"].([]any)
		return !hasEnabled || !enabled || (hasDevices && len(devices) > 0)
	},
	// swap.partitionLabel: not . or .. (see partitionLabelRule).
	partitionLabelRule: partitionLabelAllowed,
}

// refuses says why admission refuses value (as JSON, after the API server's defaulting)
// under s, or "" if it accepts it.
func (s *schemaNode) refuses(value any) string {
	switch v := value.(type) {
	case float64:
		if s.Minimum != nil && v < *s.Minimum {
			return "below the minimum"
		}
		if s.Maximum != nil && v > *s.Maximum {
			return "above the maximum"
		}
	case string:
		if s.MaxLength != nil && utf8.RuneCountInString(v) > *s.MaxLength {
			return "longer than maxLength"
		}
		if s.pattern != nil && !s.pattern.MatchString(v) {
			return "does not match " + s.Pattern
		}
	case []any:
		if reason := s.listRefuses(v); reason != "" {
			return reason
		}
	case map[string]any:
		if reason := s.objectRefuses(v); reason != "" {
			return reason
		}
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, value) {
		return "not one of the enum"
	}
	for _, v := range s.Validations {
		if !baselineRules[v.Rule](value) {
			return v.Rule
		}
	}
	return ""
}

func (s *schemaNode) listRefuses(list []any) string {
	if s.MaxItems != nil && len(list) > *s.MaxItems {
		return "more items than maxItems"
	}
	keys := map[string]bool{}
	for i, item := range list {
		if s.ListType == "map" {
			o, _ := item.(map[string]any)
			key := make([]any, 0, len(s.ListMapKeys))
			for _, k := range s.ListMapKeys {
				key = append(key, o[k])
			}
			id := fmt.Sprintf("%#v", key)
			if keys[id] {
				return fmt.Sprintf("[%d]: a duplicate of the keys %v", i, s.ListMapKeys)
			}
			keys[id] = true
		}
		if s.Items != nil {
			if reason := s.Items.refuses(item); reason != "" {
				return fmt.Sprintf("[%d]: %s", i, reason)
			}
		}
	}
	return ""
}

func (s *schemaNode) objectRefuses(o map[string]any) string {
	for _, r := range s.Required {
		if _, has := o[r]; !has {
			return "lacks " + r
		}
	}
	for _, field := range slices.Sorted(maps.Keys(o)) {
		prop, ok := s.Properties[field]
		if !ok {
			continue // the API server prunes it
		}
		if reason := prop.refuses(o[field]); reason != "" {
			return field + ": " + reason
		}
	}
	return ""
}
