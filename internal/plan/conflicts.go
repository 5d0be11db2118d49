package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// fieldConflicts reads the conflicts of a server-side apply refused without force: each
// field another manager owns with another value. ok is false for any other error.
func fieldConflicts(err error, live, desired *unstructured.Unstructured) ([]advisorv1alpha1.FieldConflict, bool) {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return nil, false
	}
	var out []advisorv1alpha1.FieldConflict
	for _, c := range status.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		fc := advisorv1alpha1.FieldConflict{Path: strings.TrimPrefix(c.Field, "."), Manager: conflictManager(c.Message)}
		if p, ok := conflictPath(c.Field); ok {
			if live != nil {
				fc.LiveValue = jsonValue(live.Object, p)
			}
			fc.PlannedValue = jsonValue(desired.Object, p)
		}
		out = append(out, fc)
	}
	if len(out) == 0 {
		return nil, false
	}
	sortConflicts(out)
	return out, true
}

func sortConflicts(cs []advisorv1alpha1.FieldConflict) {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Path != cs[j].Path {
			return cs[i].Path < cs[j].Path
		}
		return cs[i].Manager < cs[j].Manager
	})
}

// conflictManager takes the manager out of a conflict message: conflict with "argocd" using v1.
func conflictManager(msg string) string {
	if _, rest, ok := strings.Cut(msg, `"`); ok {
		if name, _, ok := strings.Cut(rest, `"`); ok {
			return name
		}
	}
	return msg
}

// conflictPath reads a conflict's field (.spec.mode) as a FieldPath; paths into lists by
// key or index are not followed.
func conflictPath(field string) (FieldPath, bool) {
	field = strings.TrimPrefix(field, ".")
	if field == "" || strings.ContainsAny(field, "[]") {
		return nil, false
	}
	return strings.Split(field, "."), true
}

func jsonValue(obj map[string]any, p FieldPath) string {
	v, ok := valueAt(obj, p)
	if !ok {
		return ""
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

// conflictsCovered tells whether every conflict now was shown in the reviewed plan.
func conflictsCovered(now, shown []advisorv1alpha1.FieldConflict) bool {
	seen := map[[2]string]bool{}
	for _, c := range shown {
		seen[[2]string{c.Path, c.Manager}] = true
	}
	for _, c := range now {
		if !seen[[2]string{c.Path, c.Manager}] {
			return false
		}
	}
	return true
}

// DescribeConflict says in words what one conflict means.
func DescribeConflict(c advisorv1alpha1.FieldConflict) string {
	owner, _ := describeManager(c.Manager)
	return fmt.Sprintf("%s is owned by %s with value %s; the plan sets %s", c.Path, owner, orAbsent(c.LiveValue), orAbsent(c.PlannedValue))
}

// describeManager names a field manager in words: "profile X" for a profile of this
// operator (ours), `field manager "M"` for any other.
func describeManager(manager string) (name string, ours bool) {
	if profile, ours := ProfileOfManager(manager); ours {
		return "profile " + profile, true
	}
	return fmt.Sprintf("field manager %q", manager), false
}

func orAbsent(v string) string {
	if v == "" {
		return "(unset)"
	}
	return v
}

// ConflictOwners names, once each and sorted, the other field managers whose fields the
// pending items take over: "profile X" for another profile of this operator, `field
// manager "M"` for any other. With profilesOnly, only the other profiles.
func ConflictOwners(items []advisorv1alpha1.PlanItem, profilesOnly bool) []string {
	var out []string
	for _, it := range items {
		if it.State != advisorv1alpha1.ItemPending {
			continue
		}
		for _, c := range it.Conflicts {
			owner, ours := describeManager(c.Manager)
			if (ours || !profilesOnly) && !slices.Contains(out, owner) {
				out = append(out, owner)
			}
		}
	}
	slices.Sort(out)
	return out
}
