package controller

import (
	"context"
	"fmt"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
)

// checkUpgrade compares what this operator version renders for a completed config with
// what an older version applied (rule 10). Only desired content counts: a new impact or
// message text is no upgrade. A different plan is offered as CompletedWithUpgrade: the
// applied items keep what they applied (drift is still watched), the changed ones wait
// for an approval.
func (r *VirtPlatformConfigReconciler) checkUpgrade(ctx context.Context, s *scope) (outcome, error) {
	st := &s.vpc.Status
	done := r.render(ctx, s)
	if done.err != nil {
		if profiles.IsPrerequisiteError(done.err) {
			// The cluster lost something the profile needs; the drift check shows what it
			// means for the targets. The upgrade check runs again on the next event.
			st.OperatorVersion = r.Version
			return goOn(watchHandler), nil
		}
		return outcome{}, fmt.Errorf("render profile %s for the upgrade check: %w", s.vpc.Spec.Profile, done.err)
	}
	p, err := r.Engine.Draft(ctx, plan.Request{
		Profile: s.profileName(), Items: done.items, Recorder: done.rec,
		Revision: st.PlanRevision + 1, Previous: st.Items,
	})
	if err != nil {
		return outcome{}, err
	}
	if plan.DesiredHash(p.Items) == plan.DesiredHash(st.Items) {
		st.OperatorVersion = r.Version
		return goOn(watchHandler), nil
	}
	p = plan.KeepCompleted(p, st.Items)
	r.install(s, p, st.PlanRevision+1)
	if err := r.forecast(ctx, s, nil); err != nil {
		return outcome{}, err
	}
	s.recordDrafter(byOperator, advisorv1alpha1.ReasonUpgradeAvailable)
	return outcome{then: settleHandler, drifted: nil}, nil
}
