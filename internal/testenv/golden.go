package testenv

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

// update rewrites the golden files of the render tests: `go test ./internal/profiles/<p>/
// -run TestRenderItems -update`, then review every change.
var update = flag.Bool("update", false, "rewrite the golden files")

// Update tells whether the test run was asked to rewrite its golden files (-update).
func Update() bool { return *update }

// Golden is a directory of golden files, one per render case.
type Golden struct {
	// Dir holds the files, testdata/render in each profile.
	Dir string
	// written are the files the cases of this run compared or wrote.
	written map[string]bool
}

// NewGolden returns the golden files of dir.
func NewGolden(dir string) *Golden { return &Golden{Dir: dir, written: map[string]bool{}} }

var nonSlug = regexp.MustCompile(`[^a-z0-9.]+`)

// Path is <Dir>/<the case name, lower case, other characters as dashes>.yaml. Two cases
// that share a file fail the test.
func (g *Golden) Path(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(g.Dir, strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(name), "-"), "-")+".yaml")
	if _, dup := g.written[path]; dup {
		t.Fatalf("two cases share the golden file %s", path)
	}
	g.written[path] = false
	return path
}

// goldenItem is how a rendered item is written to a golden file.
type goldenItem struct {
	Name       string                         `json:"name"`
	Component  string                         `json:"component,omitempty"`
	Impact     advisorv1alpha1.ImpactSeverity `json:"impact"`
	Message    string                         `json:"message"`
	SkipReason string                         `json:"skipReason,omitempty"`
	Desired    map[string]any                 `json:"desired"`
}

// RenderedYAML is the YAML of rendered items as the golden files hold them.
func RenderedYAML(t *testing.T, items []plan.Item) []byte {
	t.Helper()
	out := make([]goldenItem, 0, len(items))
	for _, it := range items {
		gi := goldenItem{Name: it.Name, Component: it.Component, Impact: it.Impact, Message: it.Message, SkipReason: it.SkipReason}
		if it.Desired != nil {
			gi.Desired = it.Desired.Object
		}
		out = append(out, gi)
	}
	data, err := yaml.Marshal(out)
	if err != nil {
		t.Fatalf("marshal the rendered items: %v", err)
	}
	return data
}

// Expect compares got with the golden file at path, or rewrites it with -update.
func (g *Golden) Expect(t *testing.T, path string, got []byte) {
	t.Helper()
	g.written[path] = true
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run the test with -update to create it): %v", err)
	}
	if string(want) == string(got) {
		return
	}
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(want)), B: difflib.SplitLines(string(got)),
		FromFile: path, ToFile: "rendered", Context: 3,
	})
	t.Errorf("the rendered items differ from %s (run with -update to accept them, then review the change):\n%s", path, diff)
}

// CheckLeftovers fails on a golden file no case of this run wrote: a leftover of a
// renamed or removed case (removed with -update).
func (g *Golden) CheckLeftovers(t *testing.T) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(g.Dir, "*.yaml"))
	for _, f := range files {
		if g.written[f] {
			continue
		}
		if *update {
			if err := os.Remove(f); err != nil {
				t.Error(err)
			}
			t.Logf("removed %s, which no case writes", f)
			continue
		}
		t.Errorf("%s belongs to no case: delete it, or run with -update", f)
	}
}
