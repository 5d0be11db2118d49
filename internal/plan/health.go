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

// RollsOut tells whether applying an item makes a MachineConfigPool roll a new
// configuration out to its nodes (a release writes no content and rolls nothing out).
func RollsOut(item advisorv1alpha1.PlanItem) bool {
	if item.Action == advisorv1alpha1.ItemActionRelease {
		return false
	}
	desired, err := DesiredObject(item)
	if err != nil {
		return false
	}
	return targets.RollsOut(desired.GroupVersionKind().GroupKind())
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
	if item.Action == advisorv1alpha1.ItemActionDelete {
		h, err := targets.RemovalCheck(ctx, e.reader(), desired)
		if err != nil || h.State != Waiting || timeout <= 0 || now.Sub(waitingSince) <= timeout {
			return h, err
		}
		return Health{State: Unhealthy, Message: fmt.Sprintf("rollout did not finish within waitTimeout %s: %s", timeout, h.Message)}, nil
	}
	h, err := targets.HealthCheckFor(desired.GroupVersionKind().GroupKind()).Check(ctx, e.reader(), desired)
	if err != nil || h.State != Waiting {
		return h, err
	}
	if timeout > 0 && now.Sub(waitingSince) > timeout {
		return Health{State: Unhealthy, Message: fmt.Sprintf("rollout did not finish within waitTimeout %s: %s", timeout, h.Message)}, nil
	}
	return h, nil
}
