package plan

// FuzzDiff checks the unified diff Diff renders: its hunk headers count the lines their
// hunks hold, each hunk carries three lines of context (fewer only at the ends of the
// text), and applying the hunks to the live YAML gives the planned YAML. It is an internal
// test so that the texts it applies the diff to are rendered exactly as Diff renders them
// (normalized, then YAML).
//
// Run it with `make fuzz`; `go test` runs the seeds below.

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

func FuzzDiff(f *testing.F) {
	descheduler := `
apiVersion: operator.openshift.io/v1
kind: KubeDescheduler
metadata:
  name: cluster
  namespace: openshift-kube-descheduler-operator
  resourceVersion: "48213"
spec:
  mode: Predictive
  deschedulingIntervalSeconds: 3600
  logLevel: Normal
  profiles: [AffinityAndTaints, LifecycleAndUtilization]
status:
  readyReplicas: 1
`
	planned := `
apiVersion: operator.openshift.io/v1
kind: KubeDescheduler
metadata:
  name: cluster
  namespace: openshift-kube-descheduler-operator
  labels:
    advisor.kubevirt.io/managed-by: virt-advisor-operator
spec:
  mode: Automatic
  deschedulingIntervalSeconds: 60
  logLevel: Normal
  profiles: [AffinityAndTaints, KubeVirtRelieveAndMigrate]
  profileCustomizations:
    devEnableEvictionsInBackground: true
`
	var long, longer strings.Builder
	for i := range 40 {
		long.WriteString("f" + strconv.Itoa(i) + ": v" + strconv.Itoa(i) + "\n")
		v := "v" + strconv.Itoa(i)
		if i == 5 || i == 30 || i == 31 {
			v += "-changed"
		}
		longer.WriteString("f" + strconv.Itoa(i) + ": " + v + "\n")
	}
	f.Add(descheduler, planned, false)
	f.Add(descheduler, planned, true)
	f.Add(descheduler, descheduler, false)
	f.Add(long.String(), longer.String(), false)
	f.Add(longer.String(), "f0: v0\n", false)
	f.Add(`{"spec": {"a": 1}}`, `{"spec": {"a": 1.5, "b": [1, 2, {"c": null}]}}`, false)
	f.Add("script: |\n  line one\n  line two\n", "script: |\n  line one\n  line 2\n  line three\n", false)
	f.Add("plain text, not YAML: {[", "other: text\n- with a dash", false)
	f.Add("", "{}", false)
	f.Add("note: \"DEL \\x7F, NEL \\x85, \\uFFFE\"\n", "note: \"BOM \\uFEFF, LS \\u2028, \\U0001F600\"\n", false)
	f.Add("kind: \"A\\nB\"\nmetadata:\n  name: \"x\\ny\"\n", "kind: \"A\\nB\"\nmetadata:\n  name: \"x\\ny\"\nspec: 1\n", false)

	f.Fuzz(func(t *testing.T, liveText, plannedText string, created bool) {
		planned := diffObject(plannedText)
		var live *unstructured.Unstructured
		if !created {
			live = diffObject(liveText)
		}
		diff, err := Diff(live, planned)
		if err != nil {
			t.Fatalf("Diff of two decodable objects failed: %v", err)
		}
		to := renderYAML(t, planned)
		fromLabel, from := "/dev/null", []string(nil)
		if live != nil {
			fromLabel, from = describe(live)+" (live)", renderYAML(t, live)
		}
		if live != nil && slices.Equal(from, to) {
			if diff != NoChanges {
				t.Fatalf("identical objects: want %q, got\n%s", NoChanges, diff)
			}
			return
		}
		header := "--- " + fromLabel + "\n+++ " + describe(planned) + " (planned)\n"
		if !strings.HasPrefix(diff, header) {
			t.Fatalf("diff does not start with the headers %q:\n%s", header, diff)
		}
		hunks := parseDiffHunks(t, strings.TrimPrefix(diff, header))
		if got := applyDiffHunks(t, from, hunks); !slices.Equal(got, to) {
			t.Fatalf("applying the diff to the live YAML does not give the planned YAML\nlive:\n%s\nplanned:\n%s\ndiff:\n%s\npatched:\n%s",
				strings.Join(from, ""), strings.Join(to, ""), diff, strings.Join(got, ""))
		}
	})
}

// diffObject decodes text, as YAML or JSON, into an object the way the API machinery
// decodes objects (integers as int64). Text that is not an object is the value of a
// field, so that every input is diffed.
func diffObject(text string) *unstructured.Unstructured {
	if raw, err := yaml.YAMLToJSON([]byte(text)); err == nil {
		var m map[string]any
		if utiljson.Unmarshal(raw, &m) == nil && m != nil {
			return &unstructured.Unstructured{Object: m}
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{"text": text}}
}

// renderYAML is obj as Diff sees it: normalized, as YAML, split into lines that keep
// their newline. The YAML must mean the object: read back, it is the same JSON.
func renderYAML(t *testing.T, obj *unstructured.Unstructured) []string {
	t.Helper()
	norm := normalized(obj)
	text, err := marshalYAML(norm)
	if err != nil {
		t.Fatalf("render %s: %v", describe(obj), err)
	}
	back, err := yaml.YAMLToJSON(text)
	if err != nil {
		t.Fatalf("the YAML of %s does not parse: %v\n%s", describe(obj), err, text)
	}
	// Compared as JSON values (JSON has no invalid UTF-8: it turns into U+FFFD both ways).
	raw, err := json.Marshal(norm)
	if err != nil {
		t.Fatalf("encode %s: %v", describe(obj), err)
	}
	var got, want any
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatalf("the YAML of %s reads back as invalid JSON: %v\n%s", describe(obj), err, back)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("decode %s: %v", describe(obj), err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the YAML of %s reads back as\n%s\nnot\n%s\nYAML:\n%s", describe(obj), back, raw, text)
	}
	lines := strings.SplitAfter(string(text), "\n")
	if lines[len(lines)-1] != "" {
		t.Fatalf("the YAML of %s does not end in a newline:\n%s", describe(obj), text)
	}
	return lines[:len(lines)-1]
}

// diffHunk is one hunk of a unified diff: its header's ranges and its lines.
type diffHunk struct {
	fromStart, fromLen, toStart, toLen int
	header                             string
	lines                              []string
}

var diffHunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n$`)

// parseDiffHunks splits the body of a unified diff (after its ---/+++ headers) into
// hunks; every line must be a hunk header or a context, removed or added line.
func parseDiffHunks(t *testing.T, body string) []diffHunk {
	t.Helper()
	if body == "" || !strings.HasSuffix(body, "\n") {
		t.Fatalf("diff body is empty or does not end in a newline: %q", body)
	}
	number := func(s string, absent int) int {
		if s == "" {
			// A range without a length has length 1 (POSIX unified format).
			return absent
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("hunk header number %q: %v", s, err)
		}
		return n
	}
	var hunks []diffHunk
	for _, line := range strings.SplitAfter(strings.TrimSuffix(body, "\n"), "\n") {
		if !strings.HasSuffix(line, "\n") {
			line += "\n"
		}
		if m := diffHunkHeader.FindStringSubmatch(line); m != nil {
			hunks = append(hunks, diffHunk{
				fromStart: number(m[1], 0), fromLen: number(m[2], 1),
				toStart: number(m[3], 0), toLen: number(m[4], 1),
				header: strings.TrimSuffix(line, "\n"),
			})
			continue
		}
		if len(hunks) == 0 || !strings.ContainsAny(line[:1], " -+") {
			t.Fatalf("line %q is neither a hunk header nor a hunk line:\n%s", line, body)
		}
		hunks[len(hunks)-1].lines = append(hunks[len(hunks)-1].lines, line)
	}
	return hunks
}

// applyDiffHunks applies hunks to the live lines and returns the result, checking on the
// way that every header gives its hunk's position and line counts in both texts, that the
// context and removed lines are the live lines there, and that hunks come in order with
// three lines of context (fewer only at the start or end of the live text).
func applyDiffHunks(t *testing.T, from []string, hunks []diffHunk) []string {
	t.Helper()
	if len(hunks) == 0 {
		t.Fatalf("a diff of different texts has no hunks")
	}
	var out []string
	next := 0 // the first live line not yet copied
	for i, h := range hunks {
		// An empty range names the line before it (0 before the first line).
		start, toStart := h.fromStart-1, h.toStart-1
		if h.fromLen == 0 {
			start = h.fromStart
		}
		if h.toLen == 0 {
			toStart = h.toStart
		}
		if start < next || start > len(from) || (i > 0 && start == next) {
			t.Fatalf("hunk %d (%s) starts at live line %d: the previous hunk ended at %d, the live text has %d lines",
				i+1, h.header, start+1, next, len(from))
		}
		out = append(out, from[next:start]...)
		if toStart != len(out) {
			t.Fatalf("hunk %d (%s) starts at planned line %d, but it starts at %d", i+1, h.header, toStart+1, len(out)+1)
		}
		cur, fromCount, toCount := start, 0, 0
		for _, line := range h.lines {
			op, text := line[0], line[1:]
			if op != '+' {
				if cur >= len(from) || from[cur] != text {
					t.Fatalf("hunk %d (%s): %q is not live line %d", i+1, h.header, line, cur+1)
				}
				cur++
				fromCount++
			}
			if op != '-' {
				out = append(out, text)
				toCount++
			}
		}
		if fromCount != h.fromLen || toCount != h.toLen {
			t.Fatalf("hunk %d (%s) holds %d live and %d planned lines", i+1, h.header, fromCount, toCount)
		}
		checkContext(t, i, h, start == 0, cur == len(from))
		next = cur
	}
	return append(out, from[next:]...)
}

// checkContext checks a hunk has a change, three context lines before its first change
// (fewer only at the start of the live text) and after its last (fewer only at the end),
// and no run of more than six context lines between changes (that would make two hunks).
func checkContext(t *testing.T, i int, h diffHunk, atStart, atEnd bool) {
	t.Helper()
	var changes []int // indices of the removed and added lines
	for j, line := range h.lines {
		if line[0] != ' ' {
			changes = append(changes, j)
		}
	}
	if len(changes) == 0 {
		t.Fatalf("hunk %d (%s) changes nothing", i+1, h.header)
	}
	lead, trail := changes[0], len(h.lines)-1-changes[len(changes)-1]
	if lead > 3 || (lead < 3 && !atStart) {
		t.Fatalf("hunk %d (%s) has %d context lines before its first change", i+1, h.header, lead)
	}
	if trail > 3 || (trail < 3 && !atEnd) {
		t.Fatalf("hunk %d (%s) has %d context lines after its last change", i+1, h.header, trail)
	}
	for k := 1; k < len(changes); k++ {
		if run := changes[k] - changes[k-1] - 1; run > 6 {
			t.Fatalf("hunk %d (%s) has %d context lines between two changes: that is two hunks", i+1, h.header, run)
		}
	}
}
