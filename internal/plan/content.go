package plan

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// ContentOf is what the plan's items would write, independent of the cluster (see
// advisorv1alpha1.PlanContent): per item, in name order, its name, target, action, desired
// state, impact and whether it is skipped. impacts, when it has an item's name, is the
// impact the profile rendered for it, which the draft lowers where the target already holds
// the desired state; the content keeps the rendered one, so a cluster that holds the
// content already has the same hash as one that does not.
func ContentOf(items []advisorv1alpha1.PlanItem, impacts map[string]advisorv1alpha1.ImpactSeverity) *advisorv1alpha1.PlanContent {
	type entry struct {
		Target  advisorv1alpha1.TargetReference `json:"target"`
		Action  advisorv1alpha1.ItemAction      `json:"action,omitempty"`
		Desired json.RawMessage                 `json:"desired,omitempty"`
		Impact  advisorv1alpha1.ImpactSeverity  `json:"impact,omitempty"`
		Skipped bool                            `json:"skipped,omitempty"`
	}
	c := &advisorv1alpha1.PlanContent{Items: make([]advisorv1alpha1.ContentItem, 0, len(items))}
	for _, it := range items {
		impact, ok := impacts[it.Name]
		if !ok {
			impact = it.ImpactSeverity
		}
		e := entry{Target: it.TargetRef, Action: it.Action, Impact: impact, Skipped: it.State == advisorv1alpha1.ItemSkipped}
		if it.DesiredState != nil {
			e.Desired = canonicalJSON(it.DesiredState.Raw)
		}
		c.Items = append(c.Items, advisorv1alpha1.ContentItem{
			Name: it.Name, Hash: HashJSON(e), Impact: impact, Skipped: e.Skipped,
		})
	}
	sort.Slice(c.Items, func(i, j int) bool { return c.Items[i].Name < c.Items[j].Name })
	c.Hash = contentHash(c.Items)
	return c
}

// contentHash is the hash of a content's items, whatever order they are listed in.
func contentHash(items []advisorv1alpha1.ContentItem) string {
	sorted := append([]advisorv1alpha1.ContentItem(nil), items...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	return HashJSON(sorted)
}

// ContentHolds tells whether c's items hash to c.hash: only then do they say what content
// the hash approved.
func ContentHolds(c *advisorv1alpha1.PlanContent) bool {
	return c != nil && len(c.Items) > 0 && contentHash(c.Items) == c.Hash
}

// ContentDiff says, item by item, how the content here differs from the approved content:
// items only one of them has, items skipped in one of them, impacts and desired states
// that differ. approved.items may be missing (a pin of the hash alone) or not hash to
// approved.hash; then only the hashes are compared, and the difference says so.
func ContentDiff(approved, here *advisorv1alpha1.PlanContent) []string {
	if here == nil {
		return []string{"this cluster has no plan"}
	}
	if approved == nil || approved.Hash == here.Hash {
		return nil
	}
	if len(approved.Items) == 0 {
		return []string{fmt.Sprintf("spec.approvedContent names only the hash %s; copy the whole status.content of the "+
			"reviewed cluster into spec.approvedContent to see which items differ", short(approved.Hash))}
	}
	if !ContentHolds(approved) {
		return []string{fmt.Sprintf("spec.approvedContent.items do not hash to spec.approvedContent.hash %s, so they do not "+
			"say what was approved; copy the whole status.content of the reviewed cluster", short(approved.Hash))}
	}
	theirs := map[string]advisorv1alpha1.ContentItem{}
	for _, it := range approved.Items {
		theirs[it.Name] = it
	}
	var out []string
	for _, it := range here.Items {
		a, ok := theirs[it.Name]
		delete(theirs, it.Name)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("item %s is only here (%s)", it.Name, state(it)))
		case a.Hash == it.Hash:
		case a.Skipped != it.Skipped:
			out = append(out, fmt.Sprintf("item %s is %s here, %s in the approved content", it.Name, state(it), state(a)))
		case a.Impact != it.Impact:
			out = append(out, fmt.Sprintf("item %s has impact %s here, %s in the approved content", it.Name, it.Impact, a.Impact))
		default:
			out = append(out, fmt.Sprintf("item %s writes another desired state or target here (content %s, approved %s)",
				it.Name, short(it.Hash), short(a.Hash)))
		}
	}
	rest := make([]string, 0, len(theirs))
	for name := range theirs {
		rest = append(rest, name)
	}
	sort.Strings(rest)
	for _, name := range rest {
		out = append(out, fmt.Sprintf("item %s is only in the approved content (%s there)", name, state(theirs[name])))
	}
	return out
}

// state says whether a content item writes.
func state(it advisorv1alpha1.ContentItem) string {
	if it.Skipped {
		return "skipped"
	}
	return "written, impact " + string(it.Impact)
}

// short is the first 12 characters of a hash, as the CLI prints them.
func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// DescribeContentDiff joins ContentDiff into one sentence.
func DescribeContentDiff(approved, here *advisorv1alpha1.PlanContent) string {
	return strings.Join(ContentDiff(approved, here), "; ")
}
