package plan

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// NoChanges is the diff of an item whose target already matches the plan.
const NoChanges = "(no changes)"

// Diff is the unified diff, as YAML, from live to planned (the server-side-apply dry-run
// result), both normalised the same way. live nil means the object will be created: the
// diff starts at /dev/null. Identical objects give NoChanges.
func Diff(live, planned *unstructured.Unstructured, ns ...Normalizer) (string, error) {
	to, err := yaml.Marshal(normalized(planned, ns...))
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
		from, err := yaml.Marshal(normalized(live, ns...))
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

// splitLines splits YAML text into lines that keep their newline. (difflib.SplitLines
// would add an empty last line to text that ends in a newline.)
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
