package plan

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FieldPath is the path of one field inside an object, as its map keys from the root.
type FieldPath []string

// isPlain tells whether a key can be written bare in a dotted path.
func isPlain(seg string) bool {
	if seg == "" {
		return false
	}
	for i, r := range seg {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r == '-' || r >= '0' && r <= '9'):
		default:
			return false
		}
	}
	return true
}

// String renders the path the way status.items[].managedFields shows it:
// dotted keys, with keys that are not plain identifiers quoted in brackets,
// e.g. metadata.labels["advisor.kubevirt.io/managed-by"].
func (p FieldPath) String() string {
	var b strings.Builder
	for i, seg := range p {
		if isPlain(seg) {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(seg)
			continue
		}
		b.WriteString(`["`)
		b.WriteString(quotedKey.Replace(seg))
		b.WriteString(`"]`)
	}
	return b.String()
}

// quotedKey escapes a key inside ["..."]: a backslash and a double quote are preceded by
// a backslash, so every key reads back as it was.
var quotedKey = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// ParseFieldPath reads a path as String renders it.
func ParseFieldPath(s string) (FieldPath, error) {
	var out FieldPath
	for i := 0; i < len(s); {
		switch {
		case s[i] == '.':
			i++
		case strings.HasPrefix(s[i:], `["`):
			j := i + 2
			var seg strings.Builder
			for ; j < len(s) && !strings.HasPrefix(s[j:], `"]`); j++ {
				if s[j] == '\\' && j+1 < len(s) && (s[j+1] == '"' || s[j+1] == '\\') {
					j++
				}
				seg.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("field path %q: unterminated [\"...\"]", s)
			}
			out = append(out, seg.String())
			i = j + 2
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("field path %q is empty", s)
	}
	return out, nil
}

// ParseFieldPaths reads status.items[].managedFields.
func ParseFieldPaths(ss []string) ([]FieldPath, error) {
	out := make([]FieldPath, 0, len(ss))
	for _, s := range ss {
		p, err := ParseFieldPath(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// identityPaths are set on every desired object but only name the target; they are not
// managed values.
var identityPaths = map[string]bool{
	"apiVersion":         true,
	"kind":               true,
	"metadata.name":      true,
	"metadata.namespace": true,
}

// profileMark tells whether p is a profile's ownership annotation. The operator sets it on
// every object it applies, but it is no value of the plan: a controller may rewrite a
// target's annotations (the Machine Config Operator replaces a KubeletConfig's with its own
// when it first renders it), and losing the mark is no drift. Which profiles apply an
// object is read from its managedFields, and the watches select by the managed-by label.
func profileMark(p FieldPath) bool {
	return len(p) == 3 && p[0] == "metadata" && p[1] == "annotations" && strings.HasPrefix(p[2], ProfileAnnotationPrefix)
}

// snapshotPath tells whether a managed path counts in a snapshot, the optimistic lock of
// rule 4. Every managed path does but the managed-by label: it is a value of every plan
// (the watches select targets by it, so losing it is drift), but every profile sets it to
// the one value ManagedByValue. Another profile that writes the same target sets it with
// its first apply; counting it would make every plan of a co-owner reviewed before that
// apply stale, though nothing it writes or overwrites changed.
func snapshotPath(p FieldPath) bool {
	return len(p) != 3 || p[0] != "metadata" || p[1] != "labels" || p[2] != ManagedByLabel
}

// ManagedPaths lists the leaf paths a desired object sets, sorted. A leaf is a scalar, a
// list (lists are compared whole) or an empty map (an explicit {} is a value of its own).
func ManagedPaths(desired *unstructured.Unstructured) []FieldPath {
	type leaf struct {
		path FieldPath
		name string
	}
	var leaves []leaf
	var walk func(prefix FieldPath, v any)
	walk = func(prefix FieldPath, v any) {
		m, ok := v.(map[string]any)
		if !ok || (len(m) == 0 && len(prefix) > 0) {
			p := append(FieldPath(nil), prefix...)
			if name := p.String(); !identityPaths[name] && !profileMark(p) {
				leaves = append(leaves, leaf{p, name})
			}
			return
		}
		for k, child := range m {
			walk(append(prefix, k), child)
		}
	}
	walk(nil, desired.Object)
	sort.Slice(leaves, func(i, j int) bool { return leaves[i].name < leaves[j].name })
	out := make([]FieldPath, len(leaves))
	for i, l := range leaves {
		out[i] = l.path
	}
	return out
}

// valueAt returns the value at path in obj and whether it is there.
func valueAt(obj map[string]any, path FieldPath) (any, bool) {
	var cur any = obj
	for _, seg := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[seg]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// PathStrings renders paths for status.
func PathStrings(paths []FieldPath) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p.String()
	}
	return out
}

// hasPrefix tells whether p starts with prefix.
func (p FieldPath) hasPrefix(prefix FieldPath) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if p[i] != prefix[i] {
			return false
		}
	}
	return true
}
