package plan

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// mergeFragments checks the rendered items and merges the fragments of one item (same
// name) into one: one item per target, so one field manager sends all its fields at once.
func mergeFragments(items []Item) ([]Item, error) {
	var order []string
	byName := map[string][]Item{}
	targetOf := map[advisorv1alpha1.TargetReference]string{}
	for _, it := range items {
		if it.Desired == nil {
			return nil, fmt.Errorf("%w: item %q has no desired state", ErrInvalidPlan, it.Name)
		}
		t := TargetOf(it.Desired)
		if other, dup := targetOf[t]; dup && other != it.Name {
			return nil, fmt.Errorf("%w: items %q and %q both target %s", ErrInvalidPlan, other, it.Name, describe(it.Desired))
		}
		targetOf[t] = it.Name
		if prev, ok := byName[it.Name]; ok {
			if TargetOf(prev[0].Desired) != t {
				return nil, fmt.Errorf("%w: two items are named %q", ErrInvalidPlan, it.Name)
			}
			if prev[0].Component == "" || it.Component == "" {
				return nil, fmt.Errorf("%w: two items are named %q", ErrInvalidPlan, it.Name)
			}
		} else {
			order = append(order, it.Name)
		}
		byName[it.Name] = append(byName[it.Name], it)
	}
	out := make([]Item, 0, len(order))
	for _, name := range order {
		merged, err := merge(byName[name])
		if err != nil {
			return nil, err
		}
		out = append(out, merged)
	}
	return out, nil
}

// merge folds the fragments of one item into one. Fragments that set one field to two
// values are a defect of the profile.
func merge(fragments []Item) (Item, error) {
	if len(fragments) == 1 {
		return fragments[0], nil
	}
	var active, skipped []Item
	for _, f := range fragments {
		if f.SkipReason != "" {
			skipped = append(skipped, f)
		} else {
			active = append(active, f)
		}
	}
	if len(active) == 0 {
		active, skipped = fragments, nil
	}
	out := Item{Name: active[0].Name, Desired: active[0].Desired.DeepCopy(), Impact: active[0].Impact}
	var messages, reasons []string
	for i, f := range active {
		if i > 0 {
			if err := mergeInto(out.Desired.Object, f.Desired.Object, nil); err != nil {
				return Item{}, fmt.Errorf("%w: item %q: components %s and %s: %v", ErrInvalidPlan, out.Name, active[0].Component, f.Component, err)
			}
			out.Impact = maxImpact(out.Impact, f.Impact)
		}
		out.Component = strings.Trim(out.Component+","+f.Component, ",")
		messages = append(messages, f.Component+": "+f.Message)
		if f.SkipReason != "" {
			reasons = append(reasons, f.Component+": "+f.SkipReason)
		}
	}
	for _, f := range skipped {
		messages = append(messages, f.Component+": not planned: "+f.SkipReason)
	}
	out.Message = strings.Join(messages, "; ")
	if len(reasons) == len(active) {
		out.SkipReason = strings.Join(reasons, "; ")
	}
	return out, nil
}

func mergeInto(dst, src map[string]any, path FieldPath) error {
	for k, v := range src {
		p := append(append(FieldPath(nil), path...), k)
		existing, ok := dst[k]
		if !ok {
			dst[k] = runtime.DeepCopyJSONValue(v)
			continue
		}
		dm, dok := existing.(map[string]any)
		sm, sok := v.(map[string]any)
		if dok && sok {
			if err := mergeInto(dm, sm, p); err != nil {
				return err
			}
			continue
		}
		if !jsonEqual(existing, v) {
			return fmt.Errorf("both set %s, to different values", p)
		}
	}
	return nil
}

func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

var impactRank = map[advisorv1alpha1.ImpactSeverity]int{
	advisorv1alpha1.ImpactLow: 1, advisorv1alpha1.ImpactMedium: 2, advisorv1alpha1.ImpactHigh: 3,
}

func maxImpact(a, b advisorv1alpha1.ImpactSeverity) advisorv1alpha1.ImpactSeverity {
	if impactRank[b] > impactRank[a] {
		return b
	}
	return a
}

// RenderedItem returns the item of that name among what a profile rendered, its fragments
// merged as a draft merges them; nil when the profile no longer renders it.
func RenderedItem(items []Item, name string) (*Item, error) {
	var fragments []Item
	for _, it := range items {
		if it.Name == name {
			fragments = append(fragments, it)
		}
	}
	if len(fragments) == 0 {
		return nil, nil
	}
	merged, err := merge(fragments)
	if err != nil {
		return nil, err
	}
	return &merged, nil
}
