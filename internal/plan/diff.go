package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"
	goyaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// NoChanges is the diff of an item whose target already matches the plan.
const NoChanges = "(no changes)"

// Diff is the unified diff, as YAML, from live to planned (the server-side-apply dry-run
// result), both normalised the same way. live nil means the object will be created: the
// diff starts at /dev/null. Identical objects give NoChanges.
func Diff(live, planned *unstructured.Unstructured, ns ...Normalizer) (string, error) {
	to, err := marshalYAML(normalized(planned, ns...))
	if err != nil {
		return "", fmt.Errorf("render planned %s as YAML: %w", describe(planned), err)
	}
	ud := difflib.UnifiedDiff{
		B:        splitLines(string(to)),
		FromFile: "/dev/null",
		ToFile:   describe(planned) + " (planned)",
		Context:  3,
	}
	if live != nil {
		from, err := marshalYAML(normalized(live, ns...))
		if err != nil {
			return "", fmt.Errorf("render live %s as YAML: %w", describe(live), err)
		}
		if string(from) == string(to) {
			return NoChanges, nil
		}
		ud.A = splitLines(string(from))
		ud.FromFile = describe(live) + " (live)"
	}
	text, err := difflib.GetUnifiedDiffString(ud)
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", describe(planned), err)
	}
	return strings.TrimSuffix(text, "\n") + "\n", nil
}

// marshalYAML is yaml.Marshal, except that it also renders strings holding characters the
// YAML parser refuses in its input: sigs.k8s.io/yaml turns JSON into YAML by parsing the
// JSON as YAML, and JSON leaves DEL, the C1 controls and U+FFFE/U+FFFF unescaped, so an
// object holding one anywhere (an annotation value, a ConfigMap entry) could not be
// diffed. They are handed to the parser escaped, which decodes them to the same string.
//
// The keys of every map keep the order json.Marshal gives them (sorted by their bytes).
// go-yaml's own order of map keys, which compares runs of digits as numbers, is not a
// total order for keys that mix digits and letters: the keys f172, f1A00 and f7 of one
// object came out in two different orders, so two renderings of equal objects differed.
func marshalYAML(obj map[string]any) ([]byte, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var doc goyaml.MapSlice
	if err := goyaml.Unmarshal(escapeForYAML(raw), &doc); err != nil {
		return nil, err
	}
	return goyaml.Marshal(doc)
}

// escapeForYAML writes the characters YAML does not allow in its input as \u escapes. In
// JSON they can only appear inside strings, where the escape means the same character.
func escapeForYAML(raw []byte) []byte {
	var out []byte
	for i := 0; i < len(raw); {
		r, size := utf8.DecodeRune(raw[i:])
		if (r >= 0x7f && r <= 0x9f) || r == 0xfffe || r == 0xffff {
			if out == nil {
				out = append(make([]byte, 0, len(raw)+16), raw[:i]...)
			}
			out = fmt.Appendf(out, `\u%04x`, r)
		} else if out != nil {
			out = append(out, raw[i:i+size]...)
		}
		i += size
	}
	if out == nil {
		return raw
	}
	return out
}

// splitLines splits YAML text into lines that keep their newline. (difflib.SplitLines
// would add an empty last line to text that ends in a newline.)
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
