package controller

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

func versioned(name, value, rv string) map[string]any {
	o := configMap(name, value)
	o["metadata"].(map[string]any)["resourceVersion"] = rv
	return o
}

func getConfigMap(t *testing.T, r client.Reader, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	if err := r.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, u); err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return u
}

// readerOfAB answers ConfigMaps a (at resourceVersion 10) and b (at 11).
func readerOfAB() *countingReader {
	return &countingReader{reads: map[string]int{}, objects: map[string]map[string]any{
		"a": versioned("a", "1", "10"), "b": versioned("b", "1", "11"),
	}}
}

// executing is a config in the middle of an execution.
func executing() *advisorv1alpha1.VirtPlatformConfig {
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	vpc.Name, vpc.UID, vpc.Generation = "c", types.UID("uid-1"), 3
	vpc.Status.Phase = advisorv1alpha1.PhaseInProgress
	vpc.Status.PlanHash = "plan-1"
	return vpc
}

// stepReads reads a and b through a fresh reconcile cache seeded with what the step before
// carried, and returns the cache.
func stepReads(t *testing.T, reader *countingReader, carried *carriedReads) *readCache {
	t.Helper()
	c := newReadCache(reader)
	if carried != nil {
		c.seed(carried.reads)
	}
	getConfigMap(t, c, "a")
	getConfigMap(t, c, "b")
	return c
}

func carriedFrom(vpc *advisorv1alpha1.VirtPlatformConfig, at time.Time, c *readCache) *carriedReads {
	return &carriedReads{at: at, uid: vpc.UID, generation: vpc.Generation, planHash: vpc.Status.PlanHash, reads: c.answers()}
}

func TestCarriedReadsServeTheNextStepOnlyWhileNothingChanged(t *testing.T) {
	reader := readerOfAB()
	m := &memory{}
	vpc := executing()
	now := time.Now()

	_, since := m.takeCarried(vpc, now)
	first := stepReads(t, reader, nil)
	m.carry(vpc.Name, carriedFrom(vpc, now, first), since)

	// The echo of a version already read changes nothing; b changed after it was read.
	m.changed(now, "ns", "a", "10", false)
	m.changed(now, "ns", "b", "12", false)
	reader.objects["b"] = versioned("b", "2", "12")

	carried, since := m.takeCarried(vpc, now.Add(10*time.Millisecond))
	if carried == nil {
		t.Fatal("the step right after an execution step did not get its reads")
	}
	second := stepReads(t, reader, carried)
	if got := reader.count("a"); got != 1 {
		t.Errorf("a was read %d times; want once: its read was carried", got)
	}
	if got := reader.count("b"); got != 2 {
		t.Errorf("b was read %d times; want twice: its watch reported a newer version", got)
	}
	if got := getConfigMap(t, second, "b").GetResourceVersion(); got != "12" {
		t.Errorf("b served at resourceVersion %s; want 12", got)
	}

	// Carried reads serve once.
	if again, _ := m.takeCarried(vpc, now.Add(20*time.Millisecond)); again != nil {
		t.Error("carried reads served a second step")
	}

	// An event that arrives while a step runs is applied to what that step carries.
	m.changed(now, "ns", "a", "10", true)
	m.carry(vpc.Name, carriedFrom(vpc, now, second), since)
	third, _ := m.takeCarried(vpc, now.Add(30*time.Millisecond))
	if third == nil {
		t.Fatal("no reads carried to the third step")
	}
	for k := range third.reads {
		if k.name == "a" {
			t.Error("a, deleted while the second step ran, was carried to the third step")
		}
	}
}

func TestCarriedReadsAreDroppedWhenTheExecutionIsNotTheSame(t *testing.T) {
	reader := readerOfAB()
	now := time.Now()
	cases := map[string]func(vpc *advisorv1alpha1.VirtPlatformConfig) time.Time{
		"the spec changed":          func(vpc *advisorv1alpha1.VirtPlatformConfig) time.Time { vpc.Generation++; return now },
		"the plan changed":          func(vpc *advisorv1alpha1.VirtPlatformConfig) time.Time { vpc.Status.PlanHash = "plan-2"; return now },
		"the config was re-created": func(vpc *advisorv1alpha1.VirtPlatformConfig) time.Time { vpc.UID = "uid-2"; return now },
		"the config left InProgress": func(vpc *advisorv1alpha1.VirtPlatformConfig) time.Time {
			vpc.Status.Phase = advisorv1alpha1.PhaseReviewRequired
			return now
		},
		"the reads are too old": func(*advisorv1alpha1.VirtPlatformConfig) time.Time { return now.Add(maxCarryAge + time.Millisecond) },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			m := &memory{}
			vpc := executing()
			_, since := m.takeCarried(vpc, now)
			m.carry(vpc.Name, carriedFrom(vpc, now, stepReads(t, reader, nil)), since)
			next := vpc.DeepCopy()
			if got, _ := m.takeCarried(next, change(next)); got != nil {
				t.Errorf("reads were carried although %s", name)
			}
		})
	}
}

func TestCarriedReadsAreNotKeptWhenEventsOfTheStepWereLost(t *testing.T) {
	reader := readerOfAB()
	m := &memory{}
	vpc := executing()
	now := time.Now()
	_, since := m.takeCarried(vpc, now)
	step := stepReads(t, reader, nil)
	for range maxEvents + 1 {
		m.changed(now, "ns", "other", "1", false)
	}
	m.carry(vpc.Name, carriedFrom(vpc, now, step), since)
	if got, _ := m.takeCarried(vpc, now); got != nil {
		t.Error("reads were carried although the events of their step were no longer all known")
	}
}

func TestEventsOfVersionsAConfigSawAreNoNews(t *testing.T) {
	reader := &countingReader{reads: map[string]int{}, objects: map[string]map[string]any{
		"a": versioned("a", "1", "10"),
	}}
	m := &memory{}
	c := newReadCache(reader)
	// b is only read ahead: no reader used it, so nothing was decided on it.
	c.prefetch(context.Background(), []readSpec{getSpec(client.ObjectKey{Namespace: "ns", Name: "b"}, configMapObject())})
	getConfigMap(t, c, "a")
	m.read("c", c)

	a := objectVersion{kind: "ConfigMap", namespace: "ns", name: "a"}
	b := objectVersion{kind: "ConfigMap", namespace: "ns", name: "b"}
	for _, tc := range []struct {
		what    string
		config  string
		obj     objectVersion
		version string
		want    bool
	}{
		{"the version read", "c", a, "10", false},
		{"a newer version", "c", a, "11", true},
		{"an object only read ahead", "c", b, "1", true},
		{"another config", "d", a, "10", true},
	} {
		if got := wakes(m, tc.config, tc.obj, tc.version); got != tc.want {
			t.Errorf("%s: wakes = %v, want %v", tc.what, got, tc.want)
		}
	}
	m.wrote("c", a, "12")
	if wakes(m, "c", a, "12") {
		t.Error("the echo of the config's own write woke it")
	}
}

// wakes tells whether a watch event of obj at version wakes the config.
func wakes(m *memory, config string, obj objectVersion, version string) bool {
	woke := false
	m.wake(config, obj, version, false, func() { woke = true })
	return woke
}

func configMapObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	return u
}
