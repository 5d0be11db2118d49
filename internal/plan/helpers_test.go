package plan_test

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// object decodes a YAML manifest into an unstructured object the way the API server's
// JSON is decoded (integers as int64), so test objects look like objects read back from a
// cluster. Test manifests are literals: a malformed one is a bug in the test and panics.
func object(doc string) *unstructured.Unstructured {
	raw, err := yaml.YAMLToJSON([]byte(dedent(doc)))
	if err != nil {
		panic(fmt.Sprintf("test manifest is not YAML: %v\n%s", err, doc))
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		panic(fmt.Sprintf("test manifest is not an object: %v\n%s", err, doc))
	}
	return u
}

// dedent removes the indentation of the first non-empty line from every line, so
// manifests can be indented like the Go code around them.
func dedent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	indent := ""
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			indent = l[:len(l)-len(strings.TrimLeft(l, " \t"))]
			break
		}
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = ""
			continue
		}
		lines[i] = strings.TrimPrefix(l, indent)
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}

// indentBy prefixes every line of s with n spaces.
func indentBy(n int, s string) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(dedent(s), "\n"), "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n")
}

// changedLines returns the removed and added lines of a unified diff, without the ---/+++
// file headers and hunk headers.
func changedLines(diff string) (removed, added []string) {
	for _, l := range strings.Split(strings.TrimSuffix(diff, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
		case strings.HasPrefix(l, "-"):
			removed = append(removed, l)
		case strings.HasPrefix(l, "+"):
			added = append(added, l)
		}
	}
	return removed, added
}

// loadAwareRemovedLines and loadAwareAddedLines are the changed lines of the diff from
// the administrator's KubeDescheduler to the load-aware plan, whether the diff is
// computed directly or drafted through a server-side-apply dry-run.
var (
	loadAwareRemovedLines = []string{
		"-  deschedulingIntervalSeconds: 3600",
		"-  mode: Predictive",
		"-  - LifecycleAndUtilization",
	}
	// The profile's ownership annotation is left out of every comparison.
	loadAwareAddedLines = []string{
		"+  labels:",
		"+    advisor.kubevirt.io/managed-by: virt-advisor-operator",
		"+  deschedulingIntervalSeconds: 60",
		"+  mode: Automatic",
		"+  profileCustomizations:",
		"+    devDeviationThresholds: AsymmetricLow",
		"+    devEnableEvictionsInBackground: true",
		"+  - KubeVirtRelieveAndMigrate",
	}
)
