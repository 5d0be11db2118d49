package profiles_test

// FuzzLoadAwareDefaults and FuzzHigherDensityDefaults check each profile's Defaults and
// Validate against the contract of profiles.Profile and the CRD: Defaults never panics,
// never modifies its input nor shares memory with it, keeps every field the user set,
// fills every field the CRD defaults with the CRD's default (and no other), and is
// idempotent; Validate never panics, never modifies its input, and accepts every
// defaulted option set admission accepts. The defaults and admission rules are read from
// the CRD, so the test follows the CRD.
//
// An option that is an object (virtHigherDensity.ksmConfiguration) is checked field by field,
// as the API server defaults it: a block the CRD defaults to {} is added, then defaulted
// inside like a block the user gave.
//
// Run them with `make fuzz`; `go test` runs the seeds below.

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/higherdensity"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

// The fields a fuzzed option block sets (bits of the shape argument).
const (
	withOptions = 1 << iota // spec.options is not nil
	withBlock               // the profile's block is not nil
	withField1
	withField2
	withField3
	withField4
	withField5
)

func FuzzLoadAwareDefaults(f *testing.F) {
	schema := optionsSchema(f, "loadAware")
	all := uint8(withOptions | withBlock | withField1 | withField2 | withField3 | withField4)
	f.Add(uint8(0), int32(0), "", false, "", int32(0), int32(0))
	f.Add(uint8(withOptions), int32(0), "", false, "", int32(0), int32(0))
	f.Add(uint8(withOptions|withBlock), int32(0), "", false, "", int32(0), int32(0))
	f.Add(all, int32(3600), "Predictive", false, "High", int32(10), int32(3))
	f.Add(all, int32(60), "Automatic", true, "AsymmetricLow", int32(1000), int32(100))
	f.Add(all, int32(86400), "", true, "", int32(1), int32(1))
	f.Add(all, int32(59), "Sometimes", false, "Extreme", int32(2), int32(3))
	f.Add(all, int32(-1), "automatic", true, "low", int32(0), int32(101))
	f.Add(uint8(withOptions|withBlock|withField4), int32(0), "", false, "", int32(0), int32(7))

	p := loadaware.New()
	f.Fuzz(func(t *testing.T, shape uint8, interval int32, mode string, psi bool, dev string, total, node int32) {
		var opts *advisorv1alpha1.ProfileOptions
		if shape&withOptions != 0 {
			opts = &advisorv1alpha1.ProfileOptions{}
			if shape&withBlock != 0 {
				o := &advisorv1alpha1.LoadAwareOptions{
					Mode:                   advisorv1alpha1.DeschedulerMode(mode),
					DevDeviationThresholds: advisorv1alpha1.DeviationThresholds(dev),
				}
				if shape&withField1 != 0 {
					o.DeschedulingIntervalSeconds = ptr.To(interval)
				}
				if shape&withField2 != 0 {
					o.EnablePSIMetrics = ptr.To(psi)
				}
				if shape&withField3 != 0 {
					o.EvictionLimitTotal = ptr.To(total)
				}
				if shape&withField4 != 0 {
					o.EvictionLimitNode = ptr.To(node)
				}
				opts.LoadAware = o
			}
		}
		checkDefaults(t, p, schema, opts, func(o *advisorv1alpha1.ProfileOptions) any { return o.LoadAware })
	})
}

func FuzzHigherDensityDefaults(f *testing.F) {
	schema := optionsSchema(f, "virtHigherDensity")
	// withField3 adds a ksmConfiguration block, withField4 sets its enabled to ksm and
	// withField5 its nodeLabelSelector (matchLabels {ksmKey: ksmValue}, or {} without a key).
	all := uint8(withOptions | withBlock | withField1 | withField2 | withField3 | withField4 | withField5)
	f.Add(uint8(0), false, int32(0), "", false, "", "")
	f.Add(uint8(withOptions|withBlock), false, int32(0), "", false, "", "")
	f.Add(all, true, int32(300), "SWAP_1.a-b", true, "node-role.kubernetes.io/worker", "")
	f.Add(all, false, int32(120), "CNV_SWAP", false, "zone", "a")
	f.Add(all, false, int32(121), "CNV_SWAP", true, "", "")
	f.Add(uint8(withOptions|withBlock|withField1), false, int32(0), "", false, "", "")
	f.Add(uint8(withOptions|withBlock|withField3), false, int32(0), "", false, "", "")
	f.Add(uint8(withOptions|withBlock|withField3|withField4), false, int32(0), "", false, "", "")
	f.Add(uint8(withOptions|withBlock|withField3|withField5), false, int32(0), "", false, "k", "v")
	f.Add(all, true, int32(99), "bad label!", true, "k", "v")
	f.Add(all, true, int32(150), strings.Repeat("x", 37), true, "k", "v")
	f.Add(all, true, int32(150), "..", true, "k", "v")
	f.Add(all, true, int32(150), ".", false, "", "")

	p := higherdensity.New()
	f.Fuzz(func(t *testing.T, shape uint8, swap bool, ratio int32, label string, ksm bool, ksmKey, ksmValue string) {
		var opts *advisorv1alpha1.ProfileOptions
		if shape&withOptions != 0 {
			opts = &advisorv1alpha1.ProfileOptions{}
			if shape&withBlock != 0 {
				o := &advisorv1alpha1.VirtHigherDensityOptions{SwapPartitionLabel: label}
				if shape&withField1 != 0 {
					o.EnableSwap = ptr.To(swap)
				}
				if shape&withField2 != 0 {
					o.MemoryToRequestRatio = ptr.To(ratio)
				}
				if shape&withField3 != 0 {
					o.KSMConfiguration = &advisorv1alpha1.KSMConfiguration{}
					if shape&withField4 != 0 {
						o.KSMConfiguration.Enabled = ptr.To(ksm)
					}
					if shape&withField5 != 0 {
						selector := &metav1.LabelSelector{}
						if ksmKey != "" {
							selector.MatchLabels = map[string]string{ksmKey: ksmValue}
						}
						o.KSMConfiguration.NodeLabelSelector = selector
					}
				}
				opts.VirtHigherDensity = o
			}
		}
		checkDefaults(t, p, schema, opts, func(o *advisorv1alpha1.ProfileOptions) any { return o.VirtHigherDensity })
	})
}

// checkDefaults checks p's Defaults and Validate on opts; block returns the profile's
// option block of an options value.
func checkDefaults(t *testing.T, p profiles.Profile, schema blockSchema, opts *advisorv1alpha1.ProfileOptions,
	block func(*advisorv1alpha1.ProfileOptions) any) {
	t.Helper()
	before := opts.DeepCopy()
	out := p.Defaults(opts)
	if !reflect.DeepEqual(opts, before) {
		t.Fatalf("Defaults modified its input: %s, now %s", toJSON(t, before), toJSON(t, opts))
	}
	if out == nil || reflect.ValueOf(block(out)).IsNil() {
		t.Fatalf("Defaults(%s) = %s: no %s block", toJSON(t, opts), toJSON(t, out), schema.name)
	}
	if opts != nil {
		if path, shared := sharedMemory(reflect.ValueOf(opts), reflect.ValueOf(out), "options"); shared {
			t.Fatalf("Defaults(%s) returns options that share %s with its input", toJSON(t, opts), path)
		}
	}

	set := map[string]any{} // the fields the user set, as JSON
	if opts != nil && !reflect.ValueOf(block(opts)).IsNil() {
		set = jsonObject(t, block(opts))
	}
	checkFields(t, toJSON(t, opts), schema.properties, schema.name, set, "the user's", jsonObject(t, block(out)))

	if again := p.Defaults(out); !reflect.DeepEqual(again, out) {
		t.Fatalf("Defaults is not idempotent: Defaults(%s) = %s", toJSON(t, out), toJSON(t, again))
	}

	checkValidate(t, p, schema, opts, out)
}

// checkFields checks the defaulted object got at path against set, the object as given (by
// the user, or as the CRD's default of its parent: origin says which), under properties:
// every field set is kept (an object with properties is checked field by field, the rest
// whole), every field not set is the CRD's default (an object default, itself defaulted
// inside as the API server does) or left out if the CRD has none, and got has no field the
// CRD does not have.
func checkFields(t *testing.T, in string, properties map[string]propertySchema, path string, set map[string]any, origin string, got map[string]any) {
	t.Helper()
	for field := range got {
		if _, ok := properties[field]; !ok {
			t.Fatalf("Defaults(%s) sets %s.%s, which the CRD does not have", in, path, field)
		}
	}
	for _, field := range slices.Sorted(maps.Keys(properties)) {
		prop, at := properties[field], path+"."+field
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
			checkFields(t, in, prop.Properties, at, givenObject, from, gotObject)
		case !reflect.DeepEqual(value, given):
			t.Fatalf("Defaults(%s) leaves %s at %v, not %s %v", in, at, value, from, given)
		}
	}
}

// checkValidate: Validate never panics nor modifies its input, on raw or defaulted
// options; and it accepts defaulted options that admission accepts (it checks only what
// admission cannot).
func checkValidate(t *testing.T, p profiles.Profile, schema blockSchema, opts, defaulted *advisorv1alpha1.ProfileOptions) {
	t.Helper()
	for _, o := range []*advisorv1alpha1.ProfileOptions{opts, defaulted} {
		before := o.DeepCopy()
		err := p.Validate(o)
		if !reflect.DeepEqual(o, before) {
			t.Fatalf("Validate modified its input: %s, now %s", toJSON(t, before), toJSON(t, o))
		}
		if err != nil && strings.TrimSpace(err.Error()) == "" {
			t.Fatalf("Validate(%s) failed without a message", toJSON(t, o))
		}
	}
	if reason := schema.refuses(t, jsonObject(t, defaulted)[schema.name]); reason == "" {
		if err := p.Validate(defaulted); err != nil {
			t.Fatalf("Validate refuses options admission accepts, %s: %v", toJSON(t, defaulted), err)
		}
	}
}

// sharedMemory tells whether a and b share a pointer, map or slice, and where.
func sharedMemory(a, b reflect.Value, path string) (string, bool) {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return "", false
		}
		if a.Pointer() == b.Pointer() {
			return path, true
		}
		return sharedMemory(a.Elem(), b.Elem(), path)
	case reflect.Map, reflect.Slice:
		if a.Len() > 0 && b.Len() > 0 && a.Pointer() == b.Pointer() {
			return path, true
		}
		if a.Kind() == reflect.Slice {
			for i := range min(a.Len(), b.Len()) {
				if where, ok := sharedMemory(a.Index(i), b.Index(i), path); ok {
					return where, true
				}
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if where, ok := sharedMemory(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); ok {
				return where, true
			}
		}
	}
	return "", false
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return string(out)
}

// jsonObject is v as a JSON object decoded into Go values (numbers as float64), the form
// the CRD's defaults have.
func jsonObject(t *testing.T, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	if err := json.Unmarshal([]byte(toJSON(t, v)), &out); err != nil {
		t.Fatalf("decode %T: %v", v, err)
	}
	return out
}

// propertySchema is what the CRD says of one option.
type propertySchema struct {
	Type        string                    `json:"type"`
	Default     any                       `json:"default"`
	Minimum     *float64                  `json:"minimum"`
	Maximum     *float64                  `json:"maximum"`
	Enum        []any                     `json:"enum"`
	Pattern     string                    `json:"pattern"`
	Required    []string                  `json:"required"`
	Properties  map[string]propertySchema `json:"properties"`
	Validations []struct {
		Rule string `json:"rule"`
	} `json:"x-kubernetes-validations"`
}

// blockSchema is the CRD's schema of one profile's option block.
type blockSchema struct {
	name       string
	properties map[string]propertySchema
	rules      []string
}

// optionsSchema reads the schema of spec.options.<name> from the CRD. The CEL rules it
// has must be among those admissionRules models.
// optionsBlockJSON returns the schema of spec.options.<name> in the CRD, as JSON.
func optionsBlockJSON(f *testing.F, name string) json.RawMessage {
	f.Helper()
	raw, err := os.ReadFile("../../config/crd/bases/advisor.kubevirt.io_virtplatformconfigs.yaml")
	if err != nil {
		f.Fatalf("read the CRD: %v", err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Properties struct {
									Options struct {
										Properties map[string]json.RawMessage `json:"properties"`
									} `json:"options"`
								} `json:"properties"`
							} `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		f.Fatalf("decode the CRD: %v", err)
	}
	if len(crd.Spec.Versions) != 1 {
		f.Fatalf("the CRD has %d versions; this test reads the one there is", len(crd.Spec.Versions))
	}
	block, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec.Properties.Options.Properties[name]
	if !ok {
		f.Fatalf("the CRD has no spec.options.%s", name)
	}
	return block
}

func optionsSchema(f *testing.F, name string) blockSchema {
	f.Helper()
	var block struct {
		Properties  map[string]propertySchema `json:"properties"`
		Validations []struct {
			Rule string `json:"rule"`
		} `json:"x-kubernetes-validations"`
	}
	if err := json.Unmarshal(optionsBlockJSON(f, name), &block); err != nil || len(block.Properties) == 0 {
		f.Fatalf("the CRD has no fields in spec.options.%s (%v)", name, err)
	}
	s := blockSchema{name: name, properties: block.Properties}
	for _, v := range block.Validations {
		if _, ok := admissionRules[v.Rule]; !ok {
			f.Fatalf("spec.options.%s has the CEL rule %q, which this test does not model: add it to admissionRules", name, v.Rule)
		}
		s.rules = append(s.rules, v.Rule)
	}
	checkValueRules(f, "spec.options."+name, block.Properties)
	return s
}

// checkValueRules fails on a CEL rule of an option value that valueRules does not model.
func checkValueRules(f *testing.F, path string, properties map[string]propertySchema) {
	f.Helper()
	for field, p := range properties {
		for _, v := range p.Validations {
			if _, ok := valueRules[v.Rule]; !ok {
				f.Fatalf("%s.%s has the CEL rule %q, which this test does not model: add it to valueRules", path, field, v.Rule)
			}
		}
		checkValueRules(f, path+"."+field, p.Properties)
	}
}

// partitionLabelRule is the CEL rule of the swap partition labels: . and .. name directories
// of /dev/disk/by-partlabel, not a partition.
const partitionLabelRule = "self != '.' && self != '..'"

func partitionLabelAllowed(self any) bool {
	label, _ := self.(string)
	return label != "." && label != ".."
}

// valueRules models the CEL rules of single option values (the rules of a whole block are
// admissionRules), on the value as JSON.
var valueRules = map[string]func(self any) bool{
	partitionLabelRule: partitionLabelAllowed,
}

// admissionRules models the CEL rules of the option blocks, on the defaulted block.
var admissionRules = map[string]func(o map[string]any) bool{
	"!has(self.evictionLimitNode) || !has(self.evictionLimitTotal) || self.evictionLimitNode <= self.evictionLimitTotal": func(o map[string]any) bool {
		node, hasNode := o["evictionLimitNode"].(float64)
		total, hasTotal := o["evictionLimitTotal"].(float64)
		return !hasNode || !hasTotal || node <= total
	},
	"!has(self.memoryToRequestRatio) || self.memoryToRequestRatio <= 120 || (has(self.enableSwap) && self.enableSwap)": func(o map[string]any) bool {
		ratio, hasRatio := o["memoryToRequestRatio"].(float64)
		swap, _ := o["enableSwap"].(bool)
		return !hasRatio || ratio <= 120 || swap
	},
}

// refuses says why admission refuses a block (as JSON, after the API server's defaulting),
// or "" if it accepts it.
func (s blockSchema) refuses(t *testing.T, block any) string {
	t.Helper()
	o, _ := block.(map[string]any)
	for field, value := range o {
		if reason := propertyRefuses(t, s.properties[field], value); reason != "" {
			return field + ": " + reason
		}
	}
	for _, rule := range s.rules {
		if !admissionRules[rule](o) {
			return rule
		}
	}
	return ""
}

func propertyRefuses(t *testing.T, p propertySchema, value any) string {
	t.Helper()
	if n, ok := value.(float64); ok {
		if p.Minimum != nil && n < *p.Minimum {
			return "below the minimum"
		}
		if p.Maximum != nil && n > *p.Maximum {
			return "above the maximum"
		}
	}
	if len(p.Enum) > 0 && !slices.Contains(p.Enum, value) {
		return "not one of the enum"
	}
	for _, v := range p.Validations {
		if !valueRules[v.Rule](value) {
			return v.Rule
		}
	}
	if s, ok := value.(string); ok && p.Pattern != "" {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			t.Fatalf("the CRD's pattern %q: %v", p.Pattern, err)
		}
		if !re.MatchString(s) {
			return "does not match " + p.Pattern
		}
	}
	if o, ok := value.(map[string]any); ok {
		for _, r := range p.Required {
			if _, has := o[r]; !has {
				return "lacks " + r
			}
		}
		for field, v := range o {
			if reason := propertyRefuses(t, p.Properties[field], v); reason != "" {
				return field + ": " + reason
			}
		}
	}
	return ""
}
