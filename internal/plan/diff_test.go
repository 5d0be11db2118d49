package plan_test

// The diff tests need no cluster: plan.Diff compares two objects it is given. They are
// plain Go tests (with Gomega matchers), so they run without KUBEBUILDER_ASSETS.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// expectGolden compares got with testdata/name, or rewrites the file when -update is set.
func expectGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if testenv.Update() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run `go test ./internal/plan/ -run %s -update` to create it): %v", t.Name(), err)
	}
	if got != string(want) {
		t.Errorf("diff differs from %s (run with -update to accept the new output)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// liveDescheduler is a KubeDescheduler as the API server returns it: server-maintained
// metadata and a status block around the spec another manager set.
const liveDescheduler = `
apiVersion: operator.openshift.io/v1
kind: KubeDescheduler
metadata:
  name: cluster
  namespace: openshift-kube-descheduler-operator
  uid: 6f1c2b8e-3d0a-4c55-9a7e-2f4b1d9c8e01
  resourceVersion: "48213"
  generation: 4
  creationTimestamp: "2025-01-14T09:12:44Z"
  managedFields:
  - manager: kubectl-edit
    operation: Update
    apiVersion: operator.openshift.io/v1
    time: "2025-01-14T09:12:44Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:deschedulingIntervalSeconds: {}
        f:profiles: {}
spec:
  deschedulingIntervalSeconds: 3600
  logLevel: Normal
  managementState: Managed
  mode: Predictive
  operatorLogLevel: Normal
  profiles:
  - AffinityAndTaints
  - LifecycleAndUtilization
status:
  observedGeneration: 4
  readyReplicas: 1
  conditions:
  - type: TargetConfigControllerDegraded
    status: "False"
    lastTransitionTime: "2025-01-14T09:13:02Z"
`

// plannedDescheduler is the server-side-apply dry-run result of the load-aware plan on
// liveDescheduler: the ownership marks are added, the profiles, interval and mode change
// and profile customizations appear; the server-maintained metadata moved on.
const plannedDescheduler = `
apiVersion: operator.openshift.io/v1
kind: KubeDescheduler
metadata:
  name: cluster
  namespace: openshift-kube-descheduler-operator
  uid: 6f1c2b8e-3d0a-4c55-9a7e-2f4b1d9c8e01
  resourceVersion: "48290"
  generation: 5
  creationTimestamp: "2025-01-14T09:12:44Z"
  labels:
    advisor.kubevirt.io/managed-by: virt-advisor-operator
  annotations:
    advisor.kubevirt.io/profile.load-aware-rebalancing: managed
  managedFields:
  - manager: kubectl-edit
    operation: Update
    apiVersion: operator.openshift.io/v1
    time: "2025-01-14T09:12:44Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:profiles: {}
  - manager: virt-advisor-operator
    operation: Apply
    apiVersion: operator.openshift.io/v1
    time: "2025-01-15T10:00:00Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:deschedulingIntervalSeconds: {}
        f:mode: {}
        f:profileCustomizations: {}
        f:profiles: {}
spec:
  deschedulingIntervalSeconds: 60
  logLevel: Normal
  managementState: Managed
  mode: Automatic
  operatorLogLevel: Normal
  profileCustomizations:
    devDeviationThresholds: AsymmetricLow
    devEnableEvictionsInBackground: true
  profiles:
  - AffinityAndTaints
  - KubeVirtRelieveAndMigrate
status:
  observedGeneration: 4
  readyReplicas: 1
  conditions:
  - type: TargetConfigControllerDegraded
    status: "False"
    lastTransitionTime: "2025-01-14T09:13:02Z"
`

// plannedMachineConfig is the dry-run result of creating the PSI MachineConfig: the
// server filled in uid, resourceVersion, generation and creationTimestamp.
const plannedMachineConfig = `
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker-psi-karg
  uid: 0a6d7f52-1b9e-4d8c-8f61-3c2e5b7a9d40
  resourceVersion: "51002"
  generation: 1
  creationTimestamp: "2025-01-15T10:00:00Z"
  labels:
    advisor.kubevirt.io/managed-by: virt-advisor-operator
    machineconfiguration.openshift.io/role: worker
  annotations:
    advisor.kubevirt.io/profile.load-aware-rebalancing: managed
  managedFields:
  - manager: virt-advisor-operator
    operation: Apply
    apiVersion: machineconfiguration.openshift.io/v1
    time: "2025-01-15T10:00:00Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:kernelArguments: {}
spec:
  config:
    ignition:
      version: 3.2.0
  kernelArguments:
  - psi=1
`

// noiseFragments are the server-maintained metadata and status of the objects above;
// none of them may show in a diff.
var noiseFragments = []string{
	"managedFields", "kubectl-edit", "fieldsV1", "f:spec",
	"resourceVersion", "48213", "48290", "51002",
	"uid", "6f1c2b8e-3d0a-4c55-9a7e-2f4b1d9c8e01", "0a6d7f52-1b9e-4d8c-8f61-3c2e5b7a9d40",
	"generation", "creationTimestamp", "2025-01-14T09:12:44Z", "2025-01-15T10:00:00Z",
	"status:", "observedGeneration", "readyReplicas", "TargetConfigControllerDegraded",
}

func TestDiff(t *testing.T) {
	t.Run("of a KubeDescheduler update is the normalised unified diff from live to planned", func(t *testing.T) {
		g := NewWithT(t)
		diff, err := plan.Diff(object(liveDescheduler), object(plannedDescheduler))
		g.Expect(err).NotTo(HaveOccurred())
		expectGolden(t, "kubedescheduler-update.diff", diff)

		removed, added := changedLines(diff)
		g.Expect(removed).To(ConsistOf(loadAwareRemovedLines))
		g.Expect(added).To(ConsistOf(loadAwareAddedLines))
	})

	t.Run("never shows server-maintained metadata or status", func(t *testing.T) {
		g := NewWithT(t)
		for _, tc := range []struct{ name, live, planned string }{
			{"update", liveDescheduler, plannedDescheduler},
			{"create", "", plannedMachineConfig},
		} {
			var live *unstructured.Unstructured
			if tc.live != "" {
				live = object(tc.live)
			}
			diff, err := plan.Diff(live, object(tc.planned))
			g.Expect(err).NotTo(HaveOccurred())
			for _, f := range noiseFragments {
				g.Expect(diff).NotTo(ContainSubstring(f), "%s diff shows server-maintained %q", tc.name, f)
			}
		}
	})

	t.Run("does not modify the objects it compares", func(t *testing.T) {
		g := NewWithT(t)
		live, planned := object(liveDescheduler), object(plannedDescheduler)
		_, err := plan.Diff(live, planned)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(live).To(Equal(object(liveDescheduler)))
		g.Expect(planned).To(Equal(object(plannedDescheduler)))
	})

	t.Run("of a creation starts at /dev/null with one hunk adding every YAML line", func(t *testing.T) {
		g := NewWithT(t)
		diff, err := plan.Diff(nil, object(plannedMachineConfig))
		g.Expect(err).NotTo(HaveOccurred())
		expectGolden(t, "machineconfig-create.diff", diff)

		// The YAML the object renders to, without server-maintained metadata and the
		// profile's ownership annotation, built independently of the diff code.
		want := object(plannedMachineConfig).Object
		md := want["metadata"].(map[string]any)
		for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "annotations"} {
			delete(md, f)
		}
		text, err := yaml.Marshal(want)
		g.Expect(err).NotTo(HaveOccurred())
		yamlLines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")

		lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
		g.Expect(lines[0]).To(Equal("--- /dev/null"))
		g.Expect(lines[1]).To(Equal("+++ MachineConfig 99-worker-psi-karg (planned)"))
		g.Expect(lines[2]).To(Equal(fmt.Sprintf("@@ -0,0 +1,%d @@", len(yamlLines))))
		body := lines[3:]
		g.Expect(body).To(HaveLen(len(yamlLines)))
		for i, l := range body {
			g.Expect(l).To(Equal("+"+yamlLines[i]), "line %d of the created object", i+1)
		}
	})

	t.Run("is exactly NoChanges when the objects match after normalisation", func(t *testing.T) {
		g := NewWithT(t)
		// The live object carries noise and status the planned one does not.
		planned := object(liveDescheduler)
		unstructured.RemoveNestedField(planned.Object, "status")
		unstructured.RemoveNestedField(planned.Object, "metadata", "managedFields")
		unstructured.RemoveNestedField(planned.Object, "metadata", "uid")
		planned.SetResourceVersion("99999")
		planned.SetGeneration(9)

		diff, err := plan.Diff(object(liveDescheduler), planned)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(diff).To(Equal(plan.NoChanges))
	})

	t.Run("is not NoChanges when only a label differs", func(t *testing.T) {
		g := NewWithT(t)
		planned := object(liveDescheduler)
		planned.SetLabels(map[string]string{"team": "virt"})
		diff, err := plan.Diff(object(liveDescheduler), planned)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(diff).NotTo(Equal(plan.NoChanges))
		_, added := changedLines(diff)
		g.Expect(added).To(ConsistOf("+  labels:", "+    team: virt"))
	})
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)

// hunk is one parsed hunk of a unified diff.
type hunk struct {
	fromStart, fromLen, toStart, toLen int
	body                               []string
}

func parseHunks(t *testing.T, diff string) []hunk {
	t.Helper()
	var hunks []hunk
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		t.Fatalf("diff does not start with ---/+++ headers:\n%s", diff)
	}
	atoi := func(s string, def int) int {
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, l := range lines[2:] {
		if m := hunkHeader.FindStringSubmatch(l); m != nil {
			// A range without a length has length 1 (POSIX unified format).
			hunks = append(hunks, hunk{atoi(m[1], 0), atoi(m[2], 1), atoi(m[3], 0), atoi(m[4], 1), nil})
			continue
		}
		if len(hunks) == 0 || l == "" || !strings.ContainsAny(l[:1], " -+") {
			t.Fatalf("unexpected diff line %q:\n%s", l, diff)
		}
		hunks[len(hunks)-1].body = append(hunks[len(hunks)-1].body, l)
	}
	return hunks
}

// longObject has forty spec fields, so changes to field05 and field30 are far enough
// apart (more than twice the three context lines) to land in separate hunks.
func longObject(field05 string, field30 []string) *unstructured.Unstructured {
	spec := map[string]any{}
	for i := range 40 {
		spec[fmt.Sprintf("field%02d", i)] = fmt.Sprintf("value-%02d", i)
	}
	spec["field05"] = field05
	list := make([]any, len(field30))
	for i, v := range field30 {
		list[i] = v
	}
	spec["field30"] = list
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetName("long")
	u.SetResourceVersion("1")
	return u
}

func TestDiffHunkHeaders(t *testing.T) {
	t.Run("give each hunk's 1-based start and length in the live and planned YAML", func(t *testing.T) {
		g := NewWithT(t)
		live := longObject("old", []string{"a"})
		planned := longObject("new", []string{"a", "b", "c"})
		planned.SetResourceVersion("2")

		diff, err := plan.Diff(live, planned)
		g.Expect(err).NotTo(HaveOccurred())

		// The two texts, rendered independently of the diff code.
		render := func(u *unstructured.Unstructured) []string {
			m := u.DeepCopy().Object
			unstructured.RemoveNestedField(m, "metadata", "resourceVersion")
			text, err := yaml.Marshal(m)
			g.Expect(err).NotTo(HaveOccurred())
			return strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
		}
		from, to := render(live), render(planned)
		index := func(lines []string, want string) int {
			for i, l := range lines {
				if l == want {
					return i
				}
			}
			t.Fatalf("%q is not a line of\n%s", want, strings.Join(lines, "\n"))
			return -1
		}

		hunks := parseHunks(t, diff)
		g.Expect(hunks).To(HaveLen(2), "two distant changes make two hunks:\n%s", diff)

		// Hunk 1 replaces field05's line: three context lines either side.
		old05, new05 := index(from, "  field05: old"), index(to, "  field05: new")
		g.Expect(hunks[0].fromStart).To(Equal(old05-3+1), "hunk 1 live start")
		g.Expect(hunks[0].fromLen).To(Equal(3+1+3), "hunk 1 live length")
		g.Expect(hunks[0].toStart).To(Equal(new05-3+1), "hunk 1 planned start")
		g.Expect(hunks[0].toLen).To(Equal(3+1+3), "hunk 1 planned length")

		// Hunk 2 inserts "- b" and "- c" after field30's "- a": three context lines
		// before (up to and including "- a") and three after.
		oldA := index(from, "  - a")
		newA := index(to, "  - a")
		g.Expect(to[newA+1 : newA+3]).To(Equal([]string{"  - b", "  - c"}))
		g.Expect(hunks[1].fromStart).To(Equal(oldA-2+1), "hunk 2 live start")
		g.Expect(hunks[1].fromLen).To(Equal(3+3), "hunk 2 live length")
		g.Expect(hunks[1].toStart).To(Equal(newA-2+1), "hunk 2 planned start")
		g.Expect(hunks[1].toLen).To(Equal(3+2+3), "hunk 2 planned length")

		for i, h := range hunks {
			// The lengths count context+removed and context+added lines, and those lines
			// are exactly the live and planned lines the header points at.
			var fromLines, toLines []string
			for _, l := range h.body {
				switch l[0] {
				case ' ':
					fromLines = append(fromLines, l[1:])
					toLines = append(toLines, l[1:])
				case '-':
					fromLines = append(fromLines, l[1:])
				case '+':
					toLines = append(toLines, l[1:])
				}
			}
			g.Expect(fromLines).To(HaveLen(h.fromLen), "hunk %d: context+removed lines", i+1)
			g.Expect(toLines).To(HaveLen(h.toLen), "hunk %d: context+added lines", i+1)
			g.Expect(fromLines).To(Equal(from[h.fromStart-1:h.fromStart-1+h.fromLen]), "hunk %d: live lines", i+1)
			g.Expect(toLines).To(Equal(to[h.toStart-1:h.toStart-1+h.toLen]), "hunk %d: planned lines", i+1)
		}

		// Applying the hunks to the live text gives the planned text.
		var patched []string
		next := 0
		for _, h := range hunks {
			patched = append(patched, from[next:h.fromStart-1]...)
			for _, l := range h.body {
				if l[0] != '-' {
					patched = append(patched, l[1:])
				}
			}
			next = h.fromStart - 1 + h.fromLen
		}
		patched = append(patched, from[next:]...)
		g.Expect(patched).To(Equal(to))
	})
}
