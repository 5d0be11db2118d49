package plan_test

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// annotated is a live target of the given apiVersion and kind carrying annotations.
func annotated(apiVersion, kind string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName("target")
	if annotations != nil {
		u.SetAnnotations(annotations)
	}
	return u
}

// annotatedDescheduler is the KubeDescheduler singleton carrying annotations.
func annotatedDescheduler(annotations map[string]string) *unstructured.Unstructured {
	u := annotated("operator.openshift.io/v1", "KubeDescheduler", annotations)
	u.SetName("cluster")
	u.SetNamespace(deschedulerNamespace)
	return u
}

// controlError returns err as a *plan.ControlError, failing the test when it is not one.
func controlError(g *WithT, err error) *plan.ControlError {
	var ce *plan.ControlError
	g.Expect(errors.As(err, &ce)).To(BeTrue(), "expected a *plan.ControlError, got %T: %v", err, err)
	return ce
}

func TestReadControls(t *testing.T) {
	pointers := func(c plan.Controls) []string {
		out := []string{}
		for _, p := range c.Ignore {
			out = append(out, p.String())
		}
		return out
	}

	t.Run("reads no controls from a target that does not exist", func(t *testing.T) {
		g := NewWithT(t)
		c, err := plan.ReadControls(nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.Unmanaged).To(BeFalse())
		g.Expect(c.Ignore).To(BeEmpty())
		g.Expect(c.Patch).To(BeEmpty())
	})

	ok := []struct {
		name        string
		annotations map[string]string
		unmanaged   bool
		ignore      []string
		patchOps    int
	}{
		{name: "no annotations at all: the item is planned as rendered"},
		{
			name:        "only unrelated annotations: the item is planned as rendered",
			annotations: map[string]string{"example.com/owner": "team-a", "advisor.kubevirt.io/profile.load-aware-rebalancing": "managed"},
		},
		{
			name:        "mode unmanaged opts the target out",
			annotations: map[string]string{plan.ModeAnnotation: plan.ModeUnmanaged},
			unmanaged:   true,
		},
		{
			name:        "mode managed is the default, spelled out",
			annotations: map[string]string{plan.ModeAnnotation: "managed"},
		},
		{
			name:        "ignore-fields with one pointer",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/spec/deschedulingIntervalSeconds"},
			ignore:      []string{"/spec/deschedulingIntervalSeconds"},
		},
		{
			name:        "ignore-fields with several pointers, listed sorted",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/spec/mode,/spec/deschedulingIntervalSeconds,/spec/logLevel"},
			ignore:      []string{"/spec/deschedulingIntervalSeconds", "/spec/logLevel", "/spec/mode"},
		},
		{
			name:        "ignore-fields with spaces around the pointers, empty entries and duplicates",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "  /spec/mode ,, /spec/logLevel,/spec/mode , "},
			ignore:      []string{"/spec/logLevel", "/spec/mode"},
		},
		{
			name:        "ignore-fields with escaped ~0 and ~1",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/metadata/annotations/example.com~1team,/spec/a~0b"},
			ignore:      []string{"/metadata/annotations/example.com~1team", "/spec/a~0b"},
		},
		{
			name:        "ignore-fields with an array index",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/spec/profiles/1"},
			ignore:      []string{"/spec/profiles/1"},
		},
		{
			name:        "ignore-fields that is empty ignores nothing",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: " , "},
		},
		{
			name:        "ignore-fields as a JSON list, naming a key that holds a comma",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: `["/spec/mode", "/metadata/annotations/example.com~1a,b"]`},
			ignore:      []string{"/metadata/annotations/example.com~1a,b", "/spec/mode"},
		},
		{
			name:        "ignore-fields as a JSON list with spaces around it and a duplicate",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: " \n [\"/spec/mode\",\n \"/spec/logLevel\", \"/spec/mode\"] "},
			ignore:      []string{"/spec/logLevel", "/spec/mode"},
		},
		{
			name:        "ignore-fields as an empty JSON list ignores nothing",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "[]"},
		},
		{
			name:        "a valid patch",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/spec/mode","value":"Predictive"},{"op":"add","path":"/spec/logLevel","value":"Debug"}]`},
			patchOps:    2,
		},
		{
			name:        "a valid patch moving a spec field",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"move","from":"/spec/mode","path":"/spec/oldMode"}]`},
			patchOps:    1,
		},
		{
			name: "all three annotations at once",
			annotations: map[string]string{
				plan.ModeAnnotation:         "managed",
				plan.IgnoreFieldsAnnotation: "/spec/logLevel",
				plan.PatchAnnotation:        `[{"op":"replace","path":"/spec/mode","value":"Predictive"}]`,
			},
			ignore:   []string{"/spec/logLevel"},
			patchOps: 1,
		},
	}
	for _, tc := range ok {
		t.Run("accepts "+tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := plan.ReadControls(annotatedDescheduler(tc.annotations))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Unmanaged).To(Equal(tc.unmanaged))
			if tc.ignore == nil {
				tc.ignore = []string{}
			}
			g.Expect(pointers(c)).To(Equal(tc.ignore))
			g.Expect(c.IgnoredFieldStrings()).To(Equal(tc.ignore))
			g.Expect(c.Patch).To(HaveLen(tc.patchOps))
		})
	}

	t.Run("unescapes the tokens of an ignored pointer", func(t *testing.T) {
		g := NewWithT(t)
		c, err := plan.ReadControls(annotatedDescheduler(map[string]string{
			plan.IgnoreFieldsAnnotation: "/metadata/annotations/example.com~1team,/spec/a~0b~01,/spec/profiles/0",
		}))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.Ignore).To(HaveLen(3))
		g.Expect(c.Ignore[0].Tokens()).To(Equal([]string{"metadata", "annotations", "example.com/team"}))
		g.Expect(c.Ignore[1].Tokens()).To(Equal([]string{"spec", "a~b~1"}))
		g.Expect(c.Ignore[2].Tokens()).To(Equal([]string{"spec", "profiles", "0"}))
	})

	t.Run("unescapes the tokens of a pointer of the JSON list form, keeping the comma of a key", func(t *testing.T) {
		g := NewWithT(t)
		c, err := plan.ReadControls(annotatedDescheduler(map[string]string{
			plan.IgnoreFieldsAnnotation: `["/metadata/annotations/example.com~1a,b", "/spec/with space"]`,
		}))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.Ignore).To(HaveLen(2))
		g.Expect(c.Ignore[0].Tokens()).To(Equal([]string{"metadata", "annotations", "example.com/a,b"}))
		g.Expect(c.Ignore[1].Tokens()).To(Equal([]string{"spec", "with space"}), "a pointer of the list is taken as written")
	})

	t.Run("splits the comma-separated form at every comma, so only the JSON list form names a key with a comma", func(t *testing.T) {
		g := NewWithT(t)
		_, err := plan.ReadControls(annotatedDescheduler(map[string]string{
			plan.IgnoreFieldsAnnotation: "/spec/a,b",
		}))
		g.Expect(err).To(MatchError(ContainSubstring(`"b" must start with /`)))
	})

	refused := []struct {
		name        string
		target      *unstructured.Unstructured
		annotations map[string]string
		annotation  string
		fragment    string
	}{
		{
			name:        "a mode with an unknown value",
			annotations: map[string]string{plan.ModeAnnotation: "off"},
			annotation:  plan.ModeAnnotation,
			fragment:    `unknown mode "off"`,
		},
		{
			name:        "a mode spelled with a capital letter",
			annotations: map[string]string{plan.ModeAnnotation: "Unmanaged"},
			annotation:  plan.ModeAnnotation,
			fragment:    `set it to "unmanaged"`,
		},
		{
			name:        "an ignored pointer without a leading slash",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/spec/mode,spec/logLevel"},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    `"spec/logLevel" must start with /`,
		},
		{
			name:        "an ignored pointer written as a dotted path",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "spec.deschedulingIntervalSeconds"},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "must start with /",
		},
		{
			name:        "an ignored pointer with a bad escape",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/spec/a~2b"},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "~ must be followed by 0 or 1",
		},
		{
			name:        "an ignored pointer ending in a lone ~",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/spec/a~"},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "~ must be followed by 0 or 1",
		},
		{
			name:        "ignoring the whole object",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/"},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "names the whole object",
		},
		{
			name:        "ignoring metadata.name",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/metadata/name"},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "touches metadata/name",
		},
		{
			name:        "ignoring the whole metadata",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/metadata"},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "which the operator needs",
		},
		{
			name:        "ignoring the managed-by label",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/metadata/labels/advisor.kubevirt.io~1managed-by"},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "which the operator needs",
		},
		{
			name:        "ignoring a profile annotation",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "/metadata/annotations/advisor.kubevirt.io~1profile.load-aware-rebalancing"},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "which the operator needs",
		},
		{
			name:        "ignore-fields starting with [ that is not a JSON list",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: "[/spec/mode,/spec/logLevel]"},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "a value that starts with [ must be a JSON array of RFC 6901 pointer strings",
		},
		{
			name:        "ignore-fields as a JSON list holding a number",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: `["/spec/mode", 3]`},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "a value that starts with [ must be a JSON array of RFC 6901 pointer strings",
		},
		{
			name:        "ignore-fields as a JSON list holding null",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: `["/spec/mode", null]`},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "a value that starts with [ must be a JSON array of RFC 6901 pointer strings",
		},
		{
			name:        "ignore-fields as a JSON list with text after it",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: `["/spec/mode"],/spec/logLevel`},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "a value that starts with [ must be a JSON array of RFC 6901 pointer strings",
		},
		{
			name:        "ignore-fields as a JSON list holding a pointer without a leading slash",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: `["/spec/mode", "spec/logLevel"]`},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    `"spec/logLevel" must start with /`,
		},
		{
			name:        "ignore-fields as a JSON list holding an empty pointer (the whole object)",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: `[""]`},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "names the whole object",
		},
		{
			name:        "ignore-fields as a JSON list naming metadata.name",
			annotations: map[string]string{plan.IgnoreFieldsAnnotation: `["/metadata/name"]`},
			annotation:  plan.IgnoreFieldsAnnotation,
			fragment:    "touches metadata/name, which the operator needs",
		},
		{
			name:        "a patch that is not JSON",
			annotations: map[string]string{plan.PatchAnnotation: `op: replace, path: /spec/mode`},
			annotation:  plan.PatchAnnotation,
			fragment:    "not an RFC 6902 JSON patch",
		},
		{
			name:        "a patch that is a JSON object, not an array of operations",
			annotations: map[string]string{plan.PatchAnnotation: `{"spec":{"mode":"Predictive"}}`},
			annotation:  plan.PatchAnnotation,
			fragment:    "not an RFC 6902 JSON patch",
		},
		{
			name:        "a patch operation without a path",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"replace","value":"Predictive"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "missing path",
		},
		{
			name:        "a patch path without a leading slash",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"spec/mode","value":"Predictive"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "must start with /",
		},
		{
			name:        "a patch operation on /metadata/name",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/metadata/name","value":"other"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "touches metadata/name, which a patch may not change",
		},
		{
			name:        "a patch operation on /metadata/namespace",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/metadata/namespace","value":"default"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "touches metadata/namespace",
		},
		{
			name:        "a patch operation on /kind",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/kind","value":"ConfigMap"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "touches kind",
		},
		{
			name:        "a patch operation on /apiVersion",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/apiVersion","value":"v1"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "touches apiVersion",
		},
		{
			name:        "a patch operation on /status",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"add","path":"/status","value":{}}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "touches status",
		},
		{
			name:        "a patch operation inside /status",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"add","path":"/status/conditions","value":[]}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "touches status",
		},
		{
			name:        "a patch removing the whole metadata",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"remove","path":"/metadata"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "which a patch may not change",
		},
		{
			name:        "a patch moving metadata.name away (from is checked too)",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"move","from":"/metadata/name","path":"/spec/name"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "touches metadata/name",
		},
		{
			name:        "a patch whose second operation touches /kind",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/spec/mode","value":"Predictive"},{"op":"replace","path":"/kind","value":"ConfigMap"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "operation 1",
		},
		{
			name:        "a patch removing the managed-by label",
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"remove","path":"/metadata/labels/advisor.kubevirt.io~1managed-by"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "which a patch may not change",
		},
		{
			name:        "a patch on a MachineConfig",
			target:      annotated("machineconfiguration.openshift.io/v1", "MachineConfig", nil),
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/spec/kernelArguments","value":[]}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "patches are refused on MachineConfigs",
		},
		{
			name:        "a patch on a KubeletConfig",
			target:      annotated("machineconfiguration.openshift.io/v1", "KubeletConfig", nil),
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"add","path":"/spec/kubeletConfig/maxPods","value":500}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "patches are refused on KubeletConfigs",
		},
		{
			name:        "a patch on a ClusterRole",
			target:      annotated("rbac.authorization.k8s.io/v1", "ClusterRole", nil),
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"add","path":"/rules/-","value":{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "patches are refused on RBAC objects",
		},
		{
			name:        "a patch on a RoleBinding",
			target:      annotated("rbac.authorization.k8s.io/v1", "RoleBinding", nil),
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/roleRef/name","value":"cluster-admin"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "patches are refused on RBAC objects",
		},
		{
			name:        "a patch on a ValidatingWebhookConfiguration",
			target:      annotated("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", nil),
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"remove","path":"/webhooks/0"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "patches are refused on admission webhooks and policies",
		},
		{
			name:        "a patch on a ValidatingAdmissionPolicy",
			target:      annotated("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", nil),
			annotations: map[string]string{plan.PatchAnnotation: `[{"op":"replace","path":"/spec/failurePolicy","value":"Ignore"}]`},
			annotation:  plan.PatchAnnotation,
			fragment:    "patches are refused on admission webhooks and policies",
		},
		{
			name:        "a malformed patch on a MachineConfig (refused for the kind first)",
			target:      annotated("machineconfiguration.openshift.io/v1", "MachineConfig", nil),
			annotations: map[string]string{plan.PatchAnnotation: `not json`},
			annotation:  plan.PatchAnnotation,
			fragment:    "patches are refused on MachineConfigs",
		},
	}
	for _, tc := range refused {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			g := NewWithT(t)
			target := tc.target
			if target == nil {
				target = annotatedDescheduler(nil)
			}
			target.SetAnnotations(tc.annotations)

			_, err := plan.ReadControls(target)

			g.Expect(err).To(HaveOccurred())
			g.Expect(plan.IsControlError(err)).To(BeTrue())
			ce := controlError(g, err)
			g.Expect(ce.Annotation).To(Equal(tc.annotation))
			g.Expect(err.Error()).To(HavePrefix("annotation " + tc.annotation + ": "))
			g.Expect(err.Error()).To(ContainSubstring(tc.fragment))
		})
	}

	t.Run("tells the user what to do instead of a refused patch", func(t *testing.T) {
		g := NewWithT(t)
		_, err := plan.ReadControls(annotated("machineconfiguration.openshift.io/v1", "MachineConfig",
			map[string]string{plan.PatchAnnotation: `[]`}))
		g.Expect(err).To(MatchError(ContainSubstring("remove the annotation, or use " + plan.IgnoreFieldsAnnotation)))
	})

	t.Run("accepts ignore-fields on a sensitive kind: only patches are refused there", func(t *testing.T) {
		g := NewWithT(t)
		c, err := plan.ReadControls(annotated("machineconfiguration.openshift.io/v1", "MachineConfig",
			map[string]string{plan.IgnoreFieldsAnnotation: "/spec/kernelArguments"}))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.IgnoredFieldStrings()).To(Equal([]string{"/spec/kernelArguments"}))
	})
}

func TestParsePointer(t *testing.T) {
	valid := []struct {
		in     string
		tokens []string
	}{
		{"/spec", []string{"spec"}},
		{"/spec/deschedulingIntervalSeconds", []string{"spec", "deschedulingIntervalSeconds"}},
		{"/spec/profiles/0", []string{"spec", "profiles", "0"}},
		{"/spec/profiles/12/name", []string{"spec", "profiles", "12", "name"}},
		{"/metadata/annotations/example.com~1team", []string{"metadata", "annotations", "example.com/team"}},
		{"/spec/a~0b", []string{"spec", "a~b"}},
		// ~01 is ~ followed by 1, not /: ~1 is unescaped before ~0.
		{"/spec/a~01", []string{"spec", "a~1"}},
		{"/spec/~0~1", []string{"spec", "~/"}},
		{"/spec//x", []string{"spec", "", "x"}},
		{"/spec/with space", []string{"spec", "with space"}},
	}
	for _, tc := range valid {
		t.Run("parses "+tc.in, func(t *testing.T) {
			g := NewWithT(t)
			p, err := plan.ParsePointer(tc.in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.String()).To(Equal(tc.in))
			g.Expect(p.Tokens()).To(Equal(tc.tokens))
		})
	}

	invalid := []struct {
		in       string
		fragment string
	}{
		{"", "names the whole object"},
		{"/", "names the whole object"},
		{"spec/mode", "must start with /"},
		{"spec.mode", "must start with /"},
		{" /spec/mode", "must start with /"},
		{"#/spec/mode", "must start with /"},
		{"/spec/a~", "~ must be followed by 0 or 1"},
		{"/spec/a~2", "~ must be followed by 0 or 1"},
		{"/spec/~x/y", "~ must be followed by 0 or 1"},
	}
	for _, tc := range invalid {
		t.Run(fmt.Sprintf("refuses %q", tc.in), func(t *testing.T) {
			g := NewWithT(t)
			_, err := plan.ParsePointer(tc.in)
			g.Expect(err).To(MatchError(ContainSubstring(tc.fragment)))
			g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("%q", tc.in)), "the error quotes the pointer")
		})
	}
}

func TestIsControlError(t *testing.T) {
	ce := &plan.ControlError{Annotation: plan.PatchAnnotation, Reason: "not an RFC 6902 JSON patch"}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"a ControlError", ce, true},
		{"a wrapped ControlError", fmt.Errorf("item enable-load-aware-descheduling: %w", ce), true},
		{"a plain error", errors.New("annotation advisor.kubevirt.io/patch: not JSON"), false},
		{"an invalid plan", plan.ErrInvalidPlan, false},
		{"nil", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(plan.IsControlError(tc.err)).To(Equal(tc.want))
		})
	}

	t.Run("names the annotation and the reason", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(ce.Error()).To(Equal("annotation advisor.kubevirt.io/patch: not an RFC 6902 JSON patch"))
	})
}
