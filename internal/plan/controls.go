package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// The user-control annotations an administrator puts on a target to take back control of
// it from every profile.
const (
	// ModeAnnotation "unmanaged" makes the item of the target Skipped.
	ModeAnnotation = "advisor.kubevirt.io/mode"
	// ModeUnmanaged is the value of ModeAnnotation that opts the target out.
	ModeUnmanaged = "unmanaged"
	// IgnoreFieldsAnnotation lists RFC 6901 JSON pointers of fields left to the user,
	// comma-separated or as a JSON array of strings: they are left out of the desired state,
	// the diff, the managed paths and drift.
	IgnoreFieldsAnnotation = "advisor.kubevirt.io/ignore-fields"
	// PatchAnnotation is an RFC 6902 JSON patch applied to the desired object in memory.
	PatchAnnotation = "advisor.kubevirt.io/patch"
)

// maxPatchedSize bounds, in bytes, the serialized desired object a patch annotation may
// make. A copy operation duplicates a subtree, so a patch of a few hundred bytes could
// double the object again and again, to gigabytes; and the patched object is shown in the
// config's status twice (desired state and diff), next to the other items of the plan,
// which must all fit in one request to the API server (1.5 MiB). The copies of one patch
// are bounded by the same figure, so an oversize patch stops at the copy that passes it.
const maxPatchedSize = 32 << 10

// controlKeys are the annotations that change what a plan does with a target.
var controlKeys = []string{ModeAnnotation, IgnoreFieldsAnnotation, PatchAnnotation}

// controlAnnotations returns the user-control annotations set on obj.
func controlAnnotations(obj *unstructured.Unstructured) map[string]string {
	var out map[string]string
	for _, k := range controlKeys {
		if v, ok := obj.GetAnnotations()[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// sensitiveGroups and sensitiveKinds are refused a patch annotation: a patch there could
// reboot every node or grant permissions, with no review of what the patch does.
var (
	sensitiveGroups = map[string]string{
		"rbac.authorization.k8s.io":    "RBAC objects",
		"admissionregistration.k8s.io": "admission webhooks and policies",
	}
	sensitiveKinds = map[schema.GroupKind]string{
		{Group: "machineconfiguration.openshift.io", Kind: "MachineConfig"}: "MachineConfigs (node configuration: a patch could break every node's boot)",
		{Group: "machineconfiguration.openshift.io", Kind: "KubeletConfig"}: "KubeletConfigs (node configuration: a patch could break every kubelet)",
	}
)

// forbiddenPointers are fields neither ignore-fields nor patch may touch: they name the
// target, carry the operator's ownership marks, or are the API server's.
var forbiddenPointers = []string{
	"/apiVersion", "/kind", "/metadata/name", "/metadata/namespace", "/status",
	"/metadata/managedFields", "/metadata/resourceVersion", "/metadata/uid", "/metadata/generation",
	"/metadata/labels/" + escapeToken(ManagedByLabel),
	"/metadata/annotations/" + escapeToken(ProfileAnnotationPrefix),
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// forbidden tells whether a pointer touches one of forbiddenPointers (equal, inside it, or
// a parent of it).
func forbidden(ptr string) (string, bool) {
	for _, f := range forbiddenPointers {
		if ptr == f || strings.HasPrefix(ptr, f+"/") || strings.HasPrefix(f, ptr+"/") ||
			(strings.HasSuffix(f, "profile.") && strings.HasPrefix(ptr, f)) {
			return strings.TrimPrefix(f, "/"), true
		}
	}
	return "", false
}

// Controls is what a target's user-control annotations ask of its item.
type Controls struct {
	// Unmanaged: the target opted out; the item is Skipped.
	Unmanaged bool
	// Ignore are the fields left to the user.
	Ignore []Pointer
	// Patch is applied to the desired object.
	Patch jsonpatch.Patch
}

// ControlError is a malformed or forbidden user-control annotation. The item it belongs
// to is not planned; the other items are.
type ControlError struct {
	Annotation string
	Reason     string
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("annotation %s: %s", e.Annotation, e.Reason)
}

// IsControlError tells whether err is, or wraps, a *ControlError.
func IsControlError(err error) bool {
	var ce *ControlError
	return errors.As(err, &ce)
}

// ReadControls parses the user-control annotations of a live target (nil: none).
func ReadControls(live *unstructured.Unstructured) (Controls, error) {
	var c Controls
	if live == nil {
		return c, nil
	}
	ann := live.GetAnnotations()
	switch mode, ok := ann[ModeAnnotation]; {
	case !ok, mode == "managed":
	case mode == ModeUnmanaged:
		c.Unmanaged = true
	default:
		return c, &ControlError{ModeAnnotation, fmt.Sprintf("unknown mode %q: set it to %q to opt the object out, or remove it", mode, ModeUnmanaged)}
	}
	if raw, ok := ann[IgnoreFieldsAnnotation]; ok {
		entries, err := ignoreEntries(raw)
		if err != nil {
			return c, &ControlError{IgnoreFieldsAnnotation, err.Error()}
		}
		seen := map[string]bool{}
		for _, s := range entries {
			if seen[s] {
				continue
			}
			seen[s] = true
			p, err := ParsePointer(s)
			if err != nil {
				return c, &ControlError{IgnoreFieldsAnnotation, err.Error()}
			}
			if f, bad := forbidden(s); bad {
				return c, &ControlError{IgnoreFieldsAnnotation, fmt.Sprintf("%s touches %s, which the operator needs: remove it from the list", s, f)}
			}
			c.Ignore = append(c.Ignore, p)
		}
		sort.Slice(c.Ignore, func(i, j int) bool { return c.Ignore[i].text < c.Ignore[j].text })
	}
	if raw, ok := ann[PatchAnnotation]; ok {
		gvk := live.GroupVersionKind()
		if what, refused := sensitiveGroups[gvk.Group]; refused {
			return c, &ControlError{PatchAnnotation, "patches are refused on " + what + ": remove the annotation, or use " + IgnoreFieldsAnnotation}
		}
		if what, refused := sensitiveKinds[gvk.GroupKind()]; refused {
			return c, &ControlError{PatchAnnotation, "patches are refused on " + what + ": remove the annotation, or use " + IgnoreFieldsAnnotation}
		}
		patch, err := jsonpatch.DecodePatch([]byte(raw))
		if err != nil {
			return c, &ControlError{PatchAnnotation, "not an RFC 6902 JSON patch (a JSON array of operations): " + err.Error()}
		}
		for i, op := range patch {
			for _, field := range []string{"path", "from"} {
				var ptr string
				var err error
				if field == "path" {
					ptr, err = op.Path()
				} else if _, has := op["from"]; has {
					ptr, err = op.From()
				} else {
					continue
				}
				if err != nil {
					return c, &ControlError{PatchAnnotation, fmt.Sprintf("operation %d: %v", i, err)}
				}
				if _, err := ParsePointer(ptr); err != nil {
					return c, &ControlError{PatchAnnotation, fmt.Sprintf("operation %d (%s): %v", i, op.Kind(), err)}
				}
				if f, bad := forbidden(ptr); bad {
					return c, &ControlError{PatchAnnotation, fmt.Sprintf("operation %d (%s %s) touches %s, which a patch may not change", i, op.Kind(), ptr, f)}
				}
			}
		}
		c.Patch = patch
	}
	return c, nil
}

// ignoreEntries splits an ignore-fields value into its pointers. A value that starts with
// [ (spaces aside) is a JSON array of pointer strings, taken as written, so a pointer may
// name a key that holds a comma; any other value lists them comma-separated, each trimmed
// and empty entries left out.
func ignoreEntries(raw string) ([]string, error) {
	trimmed := strings.TrimSpace(raw)
	if !strings.HasPrefix(trimmed, "[") {
		var out []string
		for _, s := range strings.Split(raw, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	}
	malformed := func(err error) error {
		return fmt.Errorf(`a value that starts with [ must be a JSON array of RFC 6901 pointer strings, e.g. ["/spec/a","/spec/b"]: %v`, err)
	}
	var list []any
	if err := json.Unmarshal([]byte(trimmed), &list); err != nil {
		return nil, malformed(err)
	}
	out := make([]string, len(list))
	for i, v := range list {
		s, ok := v.(string)
		if !ok {
			return nil, malformed(fmt.Errorf("entry %d is not a string", i))
		}
		out[i] = s
	}
	return out, nil
}

// refusedPatch is the error of a patch that makes a desired object the API server refuses
// (err, its answer to the dry-run).
func refusedPatch(err error) *ControlError {
	return &ControlError{PatchAnnotation, "the API server refuses the desired object it makes: " + serverMessage(err)}
}

// badAnnotation skips an item for a malformed, forbidden or refused user-control
// annotation on its target, with a BadAnnotation Event.
func badAnnotation(pi advisorv1alpha1.PlanItem, desired *unstructured.Unstructured, ce *ControlError) (advisorv1alpha1.PlanItem, []Note, error) {
	msg := fmt.Sprintf("not planned: %s on %s: %v. Fix or remove the annotation; the other items are not affected",
		ce.Annotation, describe(desired), ce)
	return skipped(pi, msg), []Note{{corev1.EventTypeWarning, advisorv1alpha1.EventBadAnnotation, fmt.Sprintf("item %s: %s", pi.Name, msg), pi.Name}}, nil
}

// apply returns desired with the patch applied and the ignored fields handed to the user:
// an ignored field takes its live value (so the apply neither changes nor removes it) or
// is left out when the target does not have it. It also returns the managed paths, without
// the ignored fields.
func (c Controls) apply(desired, live *unstructured.Unstructured) (*unstructured.Unstructured, []FieldPath, error) {
	out := desired
	if len(c.Patch) > 0 {
		raw, err := desired.MarshalJSON()
		if err != nil {
			return nil, nil, fmt.Errorf("encode desired %s: %w", describe(desired), err)
		}
		opts := jsonpatch.NewApplyOptions()
		opts.AccumulatedCopySizeLimit = maxPatchedSize
		patched, err := c.Patch.ApplyWithOptions(raw, opts)
		var tooMuch *jsonpatch.AccumulatedCopySizeError
		switch {
		case errors.As(err, &tooMuch):
			return nil, nil, &ControlError{PatchAnnotation, fmt.Sprintf(
				"its copy operations copy more than the limit of %d bytes (%d KiB) a patched object may have", maxPatchedSize, maxPatchedSize>>10)}
		case err != nil:
			return nil, nil, &ControlError{PatchAnnotation, "cannot apply it to the desired object: " + err.Error()}
		case len(patched) > maxPatchedSize && len(patched) > len(raw):
			return nil, nil, &ControlError{PatchAnnotation, fmt.Sprintf(
				"it makes the desired object %d bytes, more than the limit of %d bytes (%d KiB) a patched object may have", len(patched), maxPatchedSize, maxPatchedSize>>10)}
		}
		out = &unstructured.Unstructured{}
		if err := out.UnmarshalJSON(patched); err != nil {
			return nil, nil, &ControlError{PatchAnnotation, "the patched object is not a valid object: " + err.Error()}
		}
		if out.GroupVersionKind() != desired.GroupVersionKind() || out.GetName() != desired.GetName() || out.GetNamespace() != desired.GetNamespace() {
			return nil, nil, &ControlError{PatchAnnotation, "the patch changed which object is applied"}
		}
	} else {
		out = desired.DeepCopy()
	}
	var liveObj map[string]any
	if live != nil {
		liveObj = live.Object
	}
	var unmanaged []FieldPath
	for _, p := range c.Ignore {
		if v, ok := p.get(liveObj); ok && liveObj != nil {
			if !p.set(out.Object, v) {
				// The desired object does not reach that far: nothing of it is set by the
				// plan, so there is nothing to hand over.
				continue
			}
		} else {
			out.Object = p.remove(out.Object).(map[string]any)
		}
		if prefix := p.fieldPrefix(out.Object); len(prefix) == len(p.tokens) {
			unmanaged = append(unmanaged, prefix)
		}
	}
	var paths []FieldPath
	for _, p := range ManagedPaths(out) {
		keep := true
		for _, u := range unmanaged {
			if p.hasPrefix(u) {
				keep = false
				break
			}
		}
		if keep {
			paths = append(paths, p)
		}
	}
	return out, paths, nil
}

// patchChanges tells whether the patch made adjusted, the result of apply on desired,
// differ from what desired becomes without it.
func (c Controls) patchChanges(desired, live, adjusted *unstructured.Unstructured) bool {
	if len(c.Patch) == 0 {
		return false
	}
	unpatched, _, err := Controls{Ignore: c.Ignore}.apply(desired, live)
	return err != nil || !jsonEqual(unpatched.Object, adjusted.Object)
}

// IgnoredFieldStrings lists the ignored pointers for status.
func (c Controls) IgnoredFieldStrings() []string {
	out := make([]string, len(c.Ignore))
	for i, p := range c.Ignore {
		out[i] = p.text
	}
	return out
}

// normalizersOf rebuilds the ignore normaliser of an item from its status.
func normalizersOf(ignored []string) []Normalizer {
	var ptrs []Pointer
	for _, s := range ignored {
		if p, err := ParsePointer(s); err == nil {
			ptrs = append(ptrs, p)
		}
	}
	if len(ptrs) == 0 {
		return nil
	}
	return []Normalizer{ignoredFields(ptrs)}
}
