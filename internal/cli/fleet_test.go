package cli

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// Content hashes of the fleet tests: contentA and contentB differ in item descheduler.
var (
	contentA = strings.Repeat("c", 64)
	contentB = strings.Repeat("d", 64)
)

func content(hash, deschedulerHash string) *advisorv1alpha1.PlanContent {
	return &advisorv1alpha1.PlanContent{Hash: hash, Items: []advisorv1alpha1.ContentItem{
		{Name: "descheduler", Hash: deschedulerHash, Impact: advisorv1alpha1.ImpactLow},
		{Name: "psi-karg", Hash: strings.Repeat("9", 64), Impact: advisorv1alpha1.ImpactHigh, Skipped: true},
	}}
}

// fleetConfig is a config in ReviewRequired whose plan has content c.
func fleetConfig(ctx string, c *advisorv1alpha1.PlanContent, planHash string) memberConfig {
	vpc := &advisorv1alpha1.VirtPlatformConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "load-aware-rebalancing", Generation: 2},
		Status: advisorv1alpha1.VirtPlatformConfigStatus{
			Phase: advisorv1alpha1.PhaseReviewRequired, ObservedGeneration: 2, PlanHash: planHash,
			ImpactSeverity: advisorv1alpha1.ImpactLow,
		},
	}
	if c != nil {
		vpc.Status.Content, vpc.Status.ContentHash = c, c.Hash
	}
	return memberConfig{Context: ctx, Config: vpc}
}

func fleetOfFour() []memberConfig {
	return []memberConfig{
		fleetConfig("east", content(contentB, strings.Repeat("2", 64)), hashB),
		fleetConfig("north", content(contentA, strings.Repeat("1", 64)), hashA),
		fleetConfig("south", nil, ""),
		fleetConfig("west", content(contentA, strings.Repeat("1", 64)), hashB),
	}
}

func TestFleetGroupsClustersByContentLargestGroupFirst(t *testing.T) {
	fs := groupFleet("load-aware-rebalancing", fleetOfFour())
	var got [][]string
	for _, g := range fs.Groups {
		names := []string{g.ContentHash}
		for _, c := range g.Clusters {
			names = append(names, c.Context)
		}
		got = append(got, names)
	}
	want := [][]string{{contentA, "north", "west"}, {contentB, "east"}, {"", "south"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups = %v, want %v", got, want)
	}
}

func TestFleetGroupsNameTheItemsThatDiffer(t *testing.T) {
	fs := groupFleet("load-aware-rebalancing", fleetOfFour())
	if got := fs.Groups[0].Differences; len(got) != 1 || got[0].Name != "descheduler" || got[0].Hash != strings.Repeat("1", 64) {
		t.Errorf("differences of the first group = %+v, want descheduler only, with its hash there", got)
	}
	if got := fs.Groups[2].Differences; got != nil {
		t.Errorf("the clusters without a plan have no content to compare, got %+v", got)
	}
	header := groupHeader(fs.Groups[1])
	want := "CONTENT dddddddddddd: 1 cluster (east); differs from the other contents in: descheduler (222222222222, impact Low)"
	if header != want {
		t.Errorf("header = %q, want %q", header, want)
	}
}

func TestFleetItemsOnlyOneContentHasDiffer(t *testing.T) {
	withExtra := content(contentB, strings.Repeat("1", 64))
	withExtra.Items = append(withExtra.Items, advisorv1alpha1.ContentItem{Name: "extra", Hash: strings.Repeat("3", 64)})
	names := differingItems(map[string]*advisorv1alpha1.PlanContent{
		contentA: content(contentA, strings.Repeat("1", 64)), contentB: withExtra,
	})
	if !reflect.DeepEqual(names, []string{"extra"}) {
		t.Fatalf("differing items = %v, want [extra]", names)
	}
	if got := describeItem(groupItems(content(contentA, strings.Repeat("1", 64)), names)[0]); got != "extra (absent)" {
		t.Errorf("the item a content lacks reads %q", got)
	}
	if got := differingItems(map[string]*advisorv1alpha1.PlanContent{contentA: content(contentA, "x")}); got != nil {
		t.Errorf("one content differs from nothing, got %v", got)
	}
}

func TestFleetStatusTableAndJSON(t *testing.T) {
	fs := groupFleet("load-aware-rebalancing", fleetOfFour())
	var b strings.Builder
	if err := writeFleetStatus(&b, fs, ""); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 8 || !strings.HasPrefix(lines[0], "CONTEXT   PHASE") || !strings.HasPrefix(lines[1], "CONTENT cccccccccccc: 2 clusters (north, west)") ||
		!strings.HasPrefix(lines[2], "  north   ReviewRequired   cccccccccccc   "+hashA[:12]) || lines[6] != "NO PLAN: 1 cluster (south)" {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	if err := writeFleetStatus(&b, fs, "json"); err != nil {
		t.Fatal(err)
	}
	var back FleetStatus
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil || len(back.Groups) != 3 || back.Groups[0].Clusters[1].PlanHash != hashB {
		t.Errorf("json (%v):\n%s", err, b.String())
	}
}

func TestFleetContexts(t *testing.T) {
	known := []string{"west", "east", "north"}
	if got, _ := fleetContexts(nil, known); !reflect.DeepEqual(got, []string{"east", "north", "west"}) {
		t.Errorf("default = %v, want every context by name", got)
	}
	if got, _ := fleetContexts([]string{"west", " east"}, known); !reflect.DeepEqual(got, []string{"west", "east"}) {
		t.Errorf("asked = %v, want the order asked", got)
	}
	for _, asked := range [][]string{{"mars"}, {"east", "east"}, {""}} {
		if _, err := fleetContexts(asked, known); err == nil {
			t.Errorf("%v: want an error", asked)
		}
	}
}

func TestRolloutCanaryFirstThenBatchesInOrder(t *testing.T) {
	configs := append(fleetOfFour(), fleetConfig("zeta", content(contentA, strings.Repeat("1", 64)), hashA),
		fleetConfig("alpha", content(contentA, strings.Repeat("1", 64)), hashA))
	p, err := planRollout(configs, "cccccccccccc", []string{"west"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Hash != contentA || !reflect.DeepEqual(p.Waves, [][]string{{"west"}, {"north", "zeta"}, {"alpha"}}) {
		t.Errorf("hash %s, waves %v", p.Hash, p.Waves)
	}
	if len(p.Content.Items) != 2 || p.Content.Hash != contentA {
		t.Errorf("the approved content is copied with its items: %+v", p.Content)
	}
	if len(p.Skipped) != 2 || p.Skipped[0].Context != "east" || p.Skipped[1].Context != "south" ||
		!strings.Contains(p.Skipped[0].Why, "differs in descheduler (222222222222") ||
		!strings.Contains(p.Skipped[0].Why, "ContentMismatch") || !strings.Contains(p.Skipped[1].Why, "no plan") {
		t.Errorf("skipped = %+v", p.Skipped)
	}
}

func TestRolloutRefusesBeforeApprovingAnything(t *testing.T) {
	unreadable := append(fleetOfFour(), memberConfig{Context: "lost", Err: errors.New("connection refused")})
	for name, tc := range map[string]struct {
		configs  []memberConfig
		content  string
		canaries []string
		want     string
	}{
		"a canary with other content": {fleetOfFour(), contentA, []string{"east"}, "canary east cannot be approved"},
		"an unknown canary":           {fleetOfFour(), contentA, []string{"mars"}, "not a context"},
		"no canary":                   {fleetOfFour(), contentA, nil, "--canary is required"},
		"an unknown content":          {fleetOfFour(), "eeee", []string{"west"}, "no cluster of the fleet has a plan with content eeee"},
		"an unreadable cluster":       {unreadable, contentA, []string{"west"}, "lost: connection refused"},
	} {
		if _, err := planRollout(tc.configs, tc.content, tc.canaries, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
}

func TestJudgeStopsAtFailuresAndWaits(t *testing.T) {
	for phase, want := range map[advisorv1alpha1.Phase]clusterHealth{
		advisorv1alpha1.PhaseInProgress:          working,
		advisorv1alpha1.PhaseCompleted:           healthy,
		advisorv1alpha1.PhaseFailed:              broken,
		advisorv1alpha1.PhaseCompletedWithErrors: broken,
		advisorv1alpha1.PhasePrerequisiteFailed:  broken,
		advisorv1alpha1.PhaseReviewRequired:      broken,
		advisorv1alpha1.PhaseDrifted:             broken,
	} {
		vpc := fleetConfig("east", nil, hashA).Config
		vpc.Status.Phase = phase
		if got, _ := judge(vpc, 2); got != want {
			t.Errorf("%s: judged %d, want %d", phase, got, want)
		}
	}
	stale := fleetConfig("east", nil, hashA).Config
	stale.Generation = 3
	stale.Status.ObservedGeneration = 2
	if got, _ := judge(stale, 3); got != working {
		t.Errorf("a ReviewRequired the operator has not seen the approval in yet is not a failure")
	}
	if got, state := judge(stale, 2); got != broken || !strings.Contains(state, "spec changed") {
		t.Errorf("a spec changed by someone else during the rollout stops it: %s", state)
	}
}

func TestApprovedContentPatchDropsThePlanPin(t *testing.T) {
	data, err := json.Marshal(approvedContentPatch(content(contentA, "1")))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"action":"Apply","approvedContent":{"hash":"` + contentA + `","items":[{"name":"descheduler","hash":"1","impact":"Low"},` +
		`{"name":"psi-karg","hash":"` + strings.Repeat("9", 64) + `","impact":"High","skipped":true}]},"approvedPlanHash":null}}`
	if string(data) != want {
		t.Errorf("patch = %s\nwant %s", data, want)
	}
}
