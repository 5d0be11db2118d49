package plan

import (
	"context"
	"fmt"
	"time"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// Health is the verdict of checking whether an applied item took effect.
type Health = targets.Health

// The health states.
const (
	Healthy   = targets.Healthy
	Waiting   = targets.Waiting
	Unhealthy = targets.Unhealthy
)

// HealthBaseline reads, before the apply, what each pool that rolls the item out targets
// (see targets.HealthCheck); it is persisted with the item and names the pools in the
// message shown right after the apply. The health check judges by content and does not
// need it.
func (e *Engine) HealthBaseline(ctx context.Context, item advisorv1alpha1.PlanItem) (string, error) {
	if item.Action == advisorv1alpha1.ItemActionRelease {
		return "", nil
	}
	desired, err := DesiredObject(item)
	if err != nil {
		return "", err
	}
	return targets.HealthCheckFor(desired.GroupVersionKind().GroupKind()).Baseline(ctx, e.reader(), desired)
}

// NeedsBaseline tells whether an item rolls out to nodes, so that its baseline is taken
// before its apply.
func NeedsBaseline(item advisorv1alpha1.PlanItem) bool {
	if item.Action == advisorv1alpha1.ItemActionRelease {
		return false
	}
	desired, err := DesiredObject(item)
	if err != nil {
		return false
	}
	return targets.RollsOut(desired.GroupVersionKind().GroupKind())
}

// AwaitingRollout is the health message of a rollout item the moment after an apply that
// changed its spec, judged from its baseline without a read (see targets.AwaitingRender); ok
// is false for any other item.
func AwaitingRollout(item advisorv1alpha1.PlanItem) (string, bool) {
	if item.Action == advisorv1alpha1.ItemActionRelease {
		return "", false
	}
	desired, err := DesiredObject(item)
	if err != nil {
		return "", false
	}
	return targets.AwaitingRender(desired, item.HealthBaseline)
}

// CheckHealth tells whether an applied item took effect (see targets.HealthCheckFor). A
// wait that lasts longer than timeout (when > 0) since waitingSince makes it Unhealthy.
func (e *Engine) CheckHealth(ctx context.Context, item advisorv1alpha1.PlanItem, waitingSince time.Time, timeout time.Duration, now time.Time) (Health, error) {
	if item.Action == advisorv1alpha1.ItemActionRelease {
		return Health{State: Healthy, Message: "released: " + describeRef(item.TargetRef) + " is left as it is and no longer watched"}, nil
	}
	desired, err := DesiredObject(item)
	if err != nil {
		return Health{}, err
	}
	h, err := targets.HealthCheckFor(desired.GroupVersionKind().GroupKind()).Check(ctx, e.reader(), desired, item.HealthBaseline)
	if err != nil || h.State != Waiting {
		return h, err
	}
	if timeout > 0 && now.Sub(waitingSince) > timeout {
		return Health{State: Unhealthy, Message: fmt.Sprintf("rollout did not finish within waitTimeout %s: %s", timeout, h.Message)}, nil
	}
	return h, nil
}
