package cli

import (
	"fmt"
	"slices"
	"strings"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// rolloutPlan is what `fleet approve` does, decided before it changes anything: the content
// it approves, the waves of clusters it approves it on (the canaries first, then the rest,
// a batch at a time), and the clusters it leaves alone, with why.
type rolloutPlan struct {
	Hash string
	// Content is the approved content, with its items, copied from a cluster whose plan has it.
	Content *advisorv1alpha1.PlanContent
	Waves   [][]string
	Skipped []skippedCluster
}

// skippedCluster is a cluster `fleet approve` does not approve, and why.
type skippedCluster struct {
	Context string
	Why     string
}

// resolveContentHash finds the full content hash that wanted names (a hash, or the start
// of one as the tables print it) among the plans of the fleet.
func resolveContentHash(configs []memberConfig, wanted string) (string, error) {
	wanted = strings.ToLower(strings.TrimSpace(wanted))
	if wanted == "" {
		return "", fmt.Errorf("--content is required: the content hash to approve (status.contentHash, from fleet status)")
	}
	var found []string
	for _, mc := range configs {
		if h := contentHashOf(mc.Config); h != "" && strings.HasPrefix(h, wanted) && !slices.Contains(found, h) {
			found = append(found, h)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no cluster of the fleet has a plan with content %s; see kubectl %s fleet status", wanted, PluginName)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("--content %s names several contents (%s): give more of the hash", wanted, strings.Join(found, ", "))
}

// planRollout decides the rollout of content wanted over the fleet's configs (read in the
// fleet's order): the canaries first, then the other clusters with that content in order,
// batch at a time. A cluster that cannot be read stops it before anything is approved; a
// canary must have the content.
func planRollout(configs []memberConfig, wanted string, canaries []string, batch int) (*rolloutPlan, error) {
	if batch < 1 {
		return nil, fmt.Errorf("--batch must be at least 1")
	}
	if len(canaries) == 0 {
		return nil, fmt.Errorf("--canary is required: the cluster(s) to approve first")
	}
	for _, mc := range configs {
		if mc.Err != nil {
			return nil, fmt.Errorf("%s: %w; nothing was approved", mc.Context, mc.Err)
		}
	}
	hash, err := resolveContentHash(configs, wanted)
	if err != nil {
		return nil, err
	}
	p := &rolloutPlan{Hash: hash}
	byContext := map[string]memberConfig{}
	for _, mc := range configs {
		byContext[mc.Context] = mc
		if c := mc.Config.Status.Content; p.Content == nil && contentHashOf(mc.Config) == hash && c != nil && c.Hash == hash {
			p.Content = c.DeepCopy()
		}
	}
	if p.Content == nil {
		return nil, fmt.Errorf("no cluster shows the items of content %s (status.content); nothing was approved", shortHash(hash))
	}
	var canaryWave []string
	for _, name := range canaries {
		mc, ok := byContext[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("canary %s is not a context of the fleet", name)
		case slices.Contains(canaryWave, name):
			return nil, fmt.Errorf("canary %s is named twice", name)
		case contentHashOf(mc.Config) != hash:
			return nil, fmt.Errorf("canary %s cannot be approved: %s; nothing was approved", name, p.otherContent(mc.Config))
		}
		canaryWave = append(canaryWave, name)
	}
	p.Waves = append(p.Waves, canaryWave)
	var rest []string
	for _, mc := range configs {
		switch {
		case slices.Contains(canaryWave, mc.Context):
		case contentHashOf(mc.Config) != hash:
			p.Skipped = append(p.Skipped, skippedCluster{Context: mc.Context, Why: p.otherContent(mc.Config)})
		default:
			rest = append(rest, mc.Context)
		}
	}
	for len(rest) > 0 {
		n := min(batch, len(rest))
		p.Waves = append(p.Waves, rest[:n])
		rest = rest[n:]
	}
	return p, nil
}

// otherContent says why a cluster's plan is not the approved content, and which items differ.
func (p *rolloutPlan) otherContent(vpc *advisorv1alpha1.VirtPlatformConfig) string {
	here := contentHashOf(vpc)
	if here == "" {
		phase := orDash(string(vpc.Status.Phase))
		return fmt.Sprintf("it has no plan (phase %s)", phase)
	}
	names := differingItems(map[string]*advisorv1alpha1.PlanContent{p.Hash: p.Content, here: vpc.Status.Content})
	items := make([]string, 0, len(names))
	for _, it := range groupItems(vpc.Status.Content, names) {
		items = append(items, describeItem(it))
	}
	why := fmt.Sprintf("its plan has content %s", shortHash(here))
	if len(items) > 0 {
		why += ", which differs in " + strings.Join(items, ", ")
	}
	return why + " (approved, it would wait in ReviewRequired with reason " + advisorv1alpha1.ReasonContentMismatch + ")"
}

// approvedContentPatch is the merge patch that approves content: spec.action Apply and
// spec.approvedContent, without spec.approvedPlanHash, which may not be set with it.
func approvedContentPatch(content *advisorv1alpha1.PlanContent) map[string]any {
	return map[string]any{"spec": map[string]any{
		"action":           advisorv1alpha1.ActionApply,
		"approvedPlanHash": nil,
		"approvedContent":  content,
	}}
}

// contentApprovedOn tells whether the spec already approves content hash.
func contentApprovedOn(vpc *advisorv1alpha1.VirtPlatformConfig, hash string) bool {
	return vpc.Spec.Action == advisorv1alpha1.ActionApply && vpc.Spec.ApprovedPlanHash == "" &&
		vpc.Spec.ApprovedContent != nil && vpc.Spec.ApprovedContent.Hash == hash
}

// clusterHealth is what one read of an approved cluster says.
type clusterHealth int

const (
	// working: the operator has not acted on the approval yet, or is executing it.
	working clusterHealth = iota
	// healthy: the plan ran and the cluster is Completed.
	healthy
	// broken: the cluster ended in a state the rollout stops at.
	broken
)

// judge reads the state of a cluster approved at generation: a failure, a wait for
// something else than this approval, drift or any other way out of Completed is broken.
func judge(vpc *advisorv1alpha1.VirtPlatformConfig, generation int64) (clusterHealth, string) {
	phase := vpc.Status.Phase
	reason, msg := reasonAndMessage(vpc)
	state := orDash(string(phase))
	if reason != "" {
		state += " (" + reason + ")"
	}
	if msg != "" {
		state += ": " + sanitize(msg)
	}
	if vpc.Generation != generation {
		return broken, fmt.Sprintf("its spec changed during the rollout (generation %d, approved at %d); it is %s",
			vpc.Generation, generation, state)
	}
	if vpc.Status.ObservedGeneration < generation {
		return working, "approved; the operator has not acted on the approval yet"
	}
	switch phase {
	case advisorv1alpha1.PhaseCompleted, advisorv1alpha1.PhaseCompletedWithUpgrade:
		return healthy, state
	case advisorv1alpha1.PhasePending, advisorv1alpha1.PhaseDrafting, advisorv1alpha1.PhaseInProgress:
		return working, state
	}
	return broken, state
}
