package plan_test

// FuzzReadControls and FuzzParsePointer feed arbitrary annotation values to the parser of
// the user-control annotations. Neither may panic; ReadControls must accept exactly what
// an independent model of the annotations' rules accepts, name the annotation it refuses,
// and never hand back a pointer to a field the operator needs.
//
// Run them with `make fuzz`; `go test` runs the seeds below.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// controlKinds are the kinds of the fuzzed target: kinds that take patches, and kinds
// whose patches are refused.
var controlKinds = []struct{ apiVersion, kind string }{
	{"operator.openshift.io/v1", "KubeDescheduler"},
	{"hco.kubevirt.io/v1beta1", "HyperConverged"},
	{"v1", "ConfigMap"},
	{"machineconfiguration.openshift.io/v1", "MachineConfig"},
	{"machineconfiguration.openshift.io/v1", "KubeletConfig"},
	{"machineconfiguration.openshift.io/v1", "MachineConfigPool"},
	{"rbac.authorization.k8s.io/v1", "ClusterRole"},
	{"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"},
}

// Which annotations a fuzzed target carries.
const (
	withMode = 1 << iota
	withIgnore
	withPatch
)

func FuzzReadControls(f *testing.F) {
	all := uint8(withMode | withIgnore | withPatch)
	f.Add("unmanaged", "/spec/mode, /spec/profiles/0", `[{"op":"replace","path":"/spec/mode","value":"Predictive"}]`, all, uint8(0))
	f.Add("managed", " /spec/b ,/spec/a,, /spec/a ", `[]`, all, uint8(1))
	f.Add("Unmanaged", "", "", uint8(withMode), uint8(0))
	f.Add("", "/metadata/labels/advisor.kubevirt.io~1managed-by", "", uint8(withIgnore), uint8(0))
	f.Add("", "/metadata/annotations/advisor.kubevirt.io~1profile.x", "", uint8(withIgnore), uint8(2))
	f.Add("", "/metadata", "", uint8(withIgnore), uint8(0))
	f.Add("", "/spec/a~2", "", uint8(withIgnore), uint8(0))
	f.Add("", "spec/mode", "", uint8(withIgnore), uint8(0))
	f.Add("", "/", "", uint8(withIgnore), uint8(0))
	f.Add("", ` ["/spec/mode", "/metadata/annotations/example.com~1a,b", "/spec/mode"] `, "", uint8(withIgnore), uint8(0))
	f.Add("", `["/spec/mode", null]`, "", uint8(withIgnore), uint8(1))
	f.Add("", `["/metadata/name"]`, "", uint8(withIgnore), uint8(0))
	f.Add("", `[/spec/mode]`, "", uint8(withIgnore), uint8(0))
	f.Add("", `[""]`, "", uint8(withIgnore), uint8(0))
	f.Add("", "", `[{"op":"move","from":"/metadata/name","path":"/spec/name"}]`, uint8(withPatch), uint8(0))
	f.Add("", "", `[{"op":"add","path":"/spec/kernelArguments/-","value":"x"}]`, uint8(withPatch), uint8(3))
	f.Add("", "", `[{"op":"add","path":"/rules/0","value":{}}]`, uint8(withPatch), uint8(6))
	f.Add("", "", `[{"op":"copy","path":"/spec/x"}]`, uint8(withPatch), uint8(0))
	f.Add("", "", `[{"op":"remove","path":"/spec/x","from":null}]`, uint8(withPatch), uint8(0))
	f.Add("", "", `[{"op":"test","path":"","value":1}]`, uint8(withPatch), uint8(0))
	f.Add("", "", `[{"op":"add","path":"/spec/x","value":1e400}]`, uint8(withPatch), uint8(0))
	f.Add("", "", `{"op":"add"}`, uint8(withPatch), uint8(0))
	f.Add("", "", `null`, uint8(withPatch), uint8(0))
	f.Add("", "", `[null, 5]`, uint8(withPatch), uint8(0))
	f.Add("", "", `[{"op":"replace","p\u0061th":"/st\u0061tus","value":1}]`, uint8(withPatch), uint8(1))

	f.Fuzz(func(t *testing.T, mode, ignore, patch string, present, kind uint8) {
		live := controlTarget(mode, ignore, patch, present, kind)
		before := live.DeepCopy()
		c, err := plan.ReadControls(live)
		if !equality.Semantic.DeepEqual(before.Object, live.Object) {
			t.Fatalf("ReadControls modified the target: %v, now %v", before.Object, live.Object)
		}
		want := expectedControlError(live)
		if err != nil {
			checkControlError(t, err, want, live)
			return
		}
		if want != "" {
			t.Fatalf("ReadControls accepted the annotations, but %s breaks its rules: %v", want, live.GetAnnotations())
		}
		checkControls(t, c, live)
	})
}

func controlTarget(mode, ignore, patch string, present, kind uint8) *unstructured.Unstructured {
	k := controlKinds[int(kind)%len(controlKinds)]
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(k.apiVersion)
	u.SetKind(k.kind)
	u.SetName("target")
	annotations := map[string]string{"example.com/other": mode}
	if present&withMode != 0 {
		annotations[plan.ModeAnnotation] = mode
	}
	if present&withIgnore != 0 {
		annotations[plan.IgnoreFieldsAnnotation] = ignore
	}
	if present&withPatch != 0 {
		annotations[plan.PatchAnnotation] = patch
	}
	u.SetAnnotations(annotations)
	return u
}

// checkControlError checks err is a *ControlError naming the annotation the model
// refuses, with a reason.
func checkControlError(t *testing.T, err error, want string, live *unstructured.Unstructured) {
	t.Helper()
	var ce *plan.ControlError
	if !errors.As(err, &ce) || error(ce) != err {
		t.Fatalf("ReadControls returned %T %v, not a *ControlError", err, err)
	}
	if want == "" {
		t.Fatalf("ReadControls refused valid annotations %v: %v", live.GetAnnotations(), err)
	}
	if ce.Annotation != want {
		t.Fatalf("the error names %q, but %s is the first annotation that breaks its rules: %v", ce.Annotation, want, err)
	}
	if strings.TrimSpace(ce.Reason) == "" || !strings.Contains(err.Error(), ce.Annotation) {
		t.Fatalf("the error %q does not name the annotation %s and a reason", err.Error(), ce.Annotation)
	}
}

// checkControls checks what ReadControls made of annotations the model accepts.
func checkControls(t *testing.T, c plan.Controls, live *unstructured.Unstructured) {
	t.Helper()
	ann := live.GetAnnotations()
	if mode, ok := ann[plan.ModeAnnotation]; c.Unmanaged != (ok && mode == plan.ModeUnmanaged) {
		t.Fatalf("mode %q (set: %v) read as Unmanaged=%v", mode, ok, c.Unmanaged)
	}
	var want []string
	if raw, ok := ann[plan.IgnoreFieldsAnnotation]; ok {
		want, _ = ignoreEntries(raw)
	}
	slices.Sort(want)
	got := c.IgnoredFieldStrings()
	if !slices.Equal(got, want) {
		t.Fatalf("ignore-fields %q read as %q, want %q (each listed pointer once, sorted)", ann[plan.IgnoreFieldsAnnotation], got, want)
	}
	for _, p := range c.Ignore {
		if escapePointer(p.Tokens()) != p.String() {
			t.Fatalf("pointer %q has tokens %q, which escape to %q", p.String(), p.Tokens(), escapePointer(p.Tokens()))
		}
		if bad, ok := touchesForbidden(p.Tokens()); ok {
			t.Fatalf("ignore-fields %q was accepted, but %s touches %s", ann[plan.IgnoreFieldsAnnotation], p, bad)
		}
	}
	raw, ok := ann[plan.PatchAnnotation]
	if !ok {
		if c.Patch != nil {
			t.Fatalf("no patch annotation, but a patch of %d operations", len(c.Patch))
		}
		return
	}
	var ops []map[string]*json.RawMessage
	if err := json.Unmarshal([]byte(raw), &ops); err != nil || len(ops) != len(c.Patch) {
		t.Fatalf("patch %q read as %d operations (decoding it: %d, %v)", raw, len(c.Patch), len(ops), err)
	}
}

// ignoreEntries are the distinct pointers an ignore-fields value lists: a JSON array of
// strings when the value starts with [ (spaces aside), taken as written; otherwise the
// comma-separated entries, trimmed, empty ones left out. ok is false for a value that
// starts with [ but is no JSON array of strings.
func ignoreEntries(raw string) (out []string, ok bool) {
	if trimmed := strings.TrimSpace(raw); strings.HasPrefix(trimmed, "[") {
		var list []*string
		if err := json.Unmarshal([]byte(trimmed), &list); err != nil {
			return nil, false
		}
		for _, s := range list {
			if s == nil {
				return nil, false
			}
			if !slices.Contains(out, *s) {
				out = append(out, *s)
			}
		}
		return out, true
	}
	for _, s := range strings.Split(raw, ",") {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, true
}

// expectedControlError is the first user-control annotation of live, in the order the
// rules are checked (mode, ignore-fields, patch), that breaks its rules; "" if none does.
func expectedControlError(live *unstructured.Unstructured) string {
	ann := live.GetAnnotations()
	if mode, ok := ann[plan.ModeAnnotation]; ok && mode != "managed" && mode != plan.ModeUnmanaged {
		return plan.ModeAnnotation
	}
	if raw, ok := ann[plan.IgnoreFieldsAnnotation]; ok {
		entries, wellFormed := ignoreEntries(raw)
		if !wellFormed {
			return plan.IgnoreFieldsAnnotation
		}
		for _, s := range entries {
			tokens, ok := pointerTokens(s)
			if !ok {
				return plan.IgnoreFieldsAnnotation
			}
			if _, bad := touchesForbidden(tokens); bad {
				return plan.IgnoreFieldsAnnotation
			}
		}
	}
	if raw, ok := ann[plan.PatchAnnotation]; ok && !patchAllowed(live, raw) {
		return plan.PatchAnnotation
	}
	return ""
}

// patchAllowed: the kind takes patches, and raw is a JSON array of RFC 6902 operations,
// each with the members its op needs, whose path (and from, when given) are pointers to
// fields the operator does not need.
func patchAllowed(live *unstructured.Unstructured, raw string) bool {
	gvk := live.GroupVersionKind()
	if gvk.Group == "rbac.authorization.k8s.io" || gvk.Group == "admissionregistration.k8s.io" ||
		(gvk.Group == "machineconfiguration.openshift.io" && (gvk.Kind == "MachineConfig" || gvk.Kind == "KubeletConfig")) {
		return false
	}
	var ops []map[string]*json.RawMessage
	if err := json.Unmarshal([]byte(raw), &ops); err != nil {
		return false
	}
	for _, op := range ops {
		var kind string
		if !stringMember(op, "op", &kind) {
			return false
		}
		switch kind {
		case "add", "replace":
			if _, ok := op["value"]; !ok {
				return false
			}
		case "move", "copy":
			if !stringMember(op, "from", new(string)) {
				return false
			}
		case "remove", "test":
		default:
			return false
		}
		for _, member := range []string{"path", "from"} {
			if _, has := op[member]; !has && member == "from" {
				continue
			}
			var ptr string
			if !stringMember(op, member, &ptr) {
				return false
			}
			tokens, ok := pointerTokens(ptr)
			if !ok {
				return false
			}
			if _, bad := touchesForbidden(tokens); bad {
				return false
			}
		}
	}
	return true
}

// stringMember reads op's member name, which must be a JSON string.
func stringMember(op map[string]*json.RawMessage, name string, into *string) bool {
	v, ok := op[name]
	return ok && v != nil && json.Unmarshal(*v, into) == nil
}

// pointerTokens parses an RFC 6901 pointer the way the annotations take it: it names a
// field, so neither the whole object ("") nor its empty-named member ("/") will do.
func pointerTokens(s string) ([]string, bool) {
	if !strings.HasPrefix(s, "/") || s == "/" {
		return nil, false
	}
	tokens := strings.Split(s[1:], "/")
	for i, tok := range tokens {
		var b strings.Builder
		for j := 0; j < len(tok); j++ {
			if tok[j] != '~' {
				b.WriteByte(tok[j])
				continue
			}
			if j+1 == len(tok) || (tok[j+1] != '0' && tok[j+1] != '1') {
				return nil, false
			}
			b.WriteByte("~/"[tok[j+1]-'0'])
			j++
		}
		tokens[i] = b.String()
	}
	return tokens, true
}

func escapePointer(tokens []string) string {
	var b strings.Builder
	for _, tok := range tokens {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// forbiddenFields are the fields neither ignore-fields nor a patch may touch: those that
// name the target, the API server's, and the operator's ownership marks.
var forbiddenFields = [][]string{
	{"apiVersion"}, {"kind"}, {"status"},
	{"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "managedFields"},
	{"metadata", "resourceVersion"}, {"metadata", "uid"}, {"metadata", "generation"},
	{"metadata", "labels", plan.ManagedByLabel},
}

// touchesForbidden tells whether a pointer's field is a forbidden field, inside one or
// holds one, and which.
func touchesForbidden(tokens []string) (string, bool) {
	for _, f := range forbiddenFields {
		n := min(len(f), len(tokens))
		if slices.Equal(f[:n], tokens[:n]) {
			return strings.Join(f, "."), true
		}
	}
	// Every profile's annotation, advisor.kubevirt.io/profile.<name>.
	if len(tokens) >= 2 && tokens[0] == "metadata" && tokens[1] == "annotations" &&
		(len(tokens) == 2 || strings.HasPrefix(tokens[2], plan.ProfileAnnotationPrefix)) {
		return "metadata.annotations." + plan.ProfileAnnotationPrefix + "*", true
	}
	return "", false
}

func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{
		"/spec", "/spec/profiles/0", "/metadata/annotations/example.com~1team", "/spec/a~01", "/spec/~0~1",
		"/spec//x", "/spec/", "//", "", "/", "spec/mode", " /spec", "/spec/a~", "/spec/a~2", "/~", "/\xff~1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := plan.ParsePointer(s)
		tokens, valid := pointerTokens(s)
		if !valid {
			if err == nil {
				t.Fatalf("ParsePointer(%q) accepted a malformed pointer: tokens %q", s, p.Tokens())
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) {
				t.Fatalf("ParsePointer(%q): the error %q does not quote the pointer", s, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("ParsePointer(%q) refused a well-formed pointer: %v", s, err)
		}
		if p.String() != s || !slices.Equal(p.Tokens(), tokens) {
			t.Fatalf("ParsePointer(%q) = %q with tokens %q, want tokens %q", s, p.String(), p.Tokens(), tokens)
		}
		if escapePointer(p.Tokens()) != s {
			t.Fatalf("ParsePointer(%q): its tokens %q escape to %q", s, p.Tokens(), escapePointer(p.Tokens()))
		}
		again, err := plan.ParsePointer(p.String())
		if err != nil || again.String() != s || !slices.Equal(again.Tokens(), p.Tokens()) {
			t.Fatalf("ParsePointer(%q).String() does not parse back to the same pointer: %q, %v", s, again.Tokens(), err)
		}
	})
}
