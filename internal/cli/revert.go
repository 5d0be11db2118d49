package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// revertPatch is the merge patch revert sends: spec.revert true together with spec.action
// DryRun, so the revert plan is drafted and shown and nothing runs before it is approved;
// with cancel, spec.revert false, so the profile's plan is drafted again for review.
func revertPatch(cancel bool) ([]byte, error) {
	if cancel {
		return json.Marshal(map[string]any{"spec": map[string]any{"revert": false}})
	}
	return json.Marshal(map[string]any{"spec": map[string]any{"revert": true, "action": advisorv1alpha1.ActionDryRun}})
}

// requestRevert asks for the revert plan of name (or, with cancel, for the profile's plan
// again) with one merge patch, and says what it changed.
func requestRevert(ctx context.Context, c client.Client, name string, cancel bool) (string, error) {
	vpc, err := getConfig(ctx, c, name)
	if err != nil {
		return "", err
	}
	switch {
	case cancel && !vpc.Spec.Revert:
		return fmt.Sprintf("%s: spec.revert is already false: the profile's plan is shown.", name), nil
	case !cancel && vpc.Spec.Revert && vpc.Spec.Action == advisorv1alpha1.ActionDryRun:
		return fmt.Sprintf("%s: spec.revert is already true and spec.action DryRun.", name), nil
	}
	body, err := revertPatch(cancel)
	if err != nil {
		return "", err
	}
	was := vpc.Spec.Action
	if err := c.Patch(ctx, vpc, client.RawPatch("application/merge-patch+json", body)); err != nil {
		return "", explain(err)
	}
	if cancel {
		return fmt.Sprintf("%s: spec.revert set to false: the operator drafts the profile's plan again, for review.", name), nil
	}
	return fmt.Sprintf("%s: spec.revert set to true and spec.action to DryRun (was %s): the operator drafts the revert plan, "+
		"for review; nothing is reverted before you approve it.", name, orDash(string(was))), nil
}

// revertShown tells whether vpc shows the revert plan asked for: waiting for its approval,
// or Reverted (nothing to revert, or reverted already). err is set when the config ended in
// a state it will not leave on its own.
func revertShown(vpc *advisorv1alpha1.VirtPlatformConfig) (bool, error) {
	if !fresh(vpc) || !vpc.Spec.Revert {
		return false, nil
	}
	switch vpc.Status.Phase {
	case advisorv1alpha1.PhaseFailed, advisorv1alpha1.PhasePrerequisiteFailed:
		_, msg := reasonAndMessage(vpc)
		return false, fmt.Errorf("%s is %s: %s", vpc.Name, vpc.Status.Phase, msg)
	case advisorv1alpha1.PhaseReverted, advisorv1alpha1.PhaseCompletedWithErrors, advisorv1alpha1.PhaseReviewRequired:
		return true, nil
	}
	return approvalRequired(vpc), nil
}

// profilePlanShown tells whether vpc shows the profile's plan again after a revert was
// cancelled: drafted, for review or, when it changes nothing, completed.
func profilePlanShown(vpc *advisorv1alpha1.VirtPlatformConfig) (bool, error) {
	if !fresh(vpc) || vpc.Spec.Revert {
		return false, nil
	}
	switch vpc.Status.Phase {
	case advisorv1alpha1.PhaseFailed, advisorv1alpha1.PhasePrerequisiteFailed:
		_, msg := reasonAndMessage(vpc)
		return false, fmt.Errorf("%s is %s: %s", vpc.Name, vpc.Status.Phase, msg)
	case "", advisorv1alpha1.PhasePending, advisorv1alpha1.PhaseDrafting, advisorv1alpha1.PhaseReverted:
		return false, nil
	}
	return true, nil
}

func newRevertCommand(o *Options) *cobra.Command {
	var color string
	var cancel bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "revert PROFILE [--cancel]",
		Short: "Ask for the revert plan of a profile, wait until it is shown, and print it for review",
		Long: `Ask for the plan that reverts what the profile's executions changed, and print it.

One merge patch sets spec.revert: true and spec.action: DryRun, so nothing runs before the
revert plan is reviewed and approved. The command then waits until the operator shows the
revert plan and prints it as plan does: each item with its action (Delete: an object the
profile created is deleted; Restore: the values the profile replaced are put back; Release:
an object the profile created and another field manager shares keeps its values, the profile
hands back its fields), its diff, its conflicts (fields changed since the apply), the
disruption forecast, the plan hash and the command that approves it. When there is nothing
to revert the config is Reverted at once, and the command says so.

With --cancel, spec.revert is set back to false: the operator drafts the profile's plan
again, which is shown for review like any plan; the command waits for it and prints it.

Exit code 0 when the plan is shown, 1 on error, on timeout, or when the config ends Failed
or PrerequisiteFailed.`,
		Example: `  kubectl virt-advisor revert load-aware-rebalancing
  kubectl virt-advisor approve load-aware-rebalancing --hash <the revert plan's hash>
  kubectl virt-advisor wait load-aware-rebalancing --for=Completed
  kubectl virt-advisor revert load-aware-rebalancing --cancel`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			on, err := useColor(color, o.isTerminal(), o.getenv)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			name := args[0]
			msg, err := requestRevert(cmd.Context(), c, name, cancel)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintln(o.Streams.Out, msg); err != nil {
				return err
			}
			w := waiter{c: c, name: name, target: ForReviewRequired, interval: o.PollInterval, out: o.Streams.ErrOut, now: o.now,
				until: revertShown, goal: "show its revert plan"}
			if cancel {
				w.until, w.goal = profilePlanShown, "show the profile's plan again"
			}
			if err := w.wait(cmd.Context(), timeout); err != nil {
				return err
			}
			vpc, err := getConfig(cmd.Context(), c, name)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintln(o.Streams.Out); err != nil {
				return err
			}
			if vpc.Status.PlanHash == "" && vpc.Status.Phase == advisorv1alpha1.PhaseReverted {
				reason, message := reasonAndMessage(vpc)
				_, err := fmt.Fprintf(o.Streams.Out, "%s is Reverted (%s): %s\nTo draft the profile's plan again, for review: kubectl %s revert %s --cancel\n",
					name, reason, sanitize(message), PluginName, name)
				return err
			}
			_, err = planView{vpc: vpc, color: on}.render(o.Streams.Out)
			return err
		},
	}
	cmd.Flags().BoolVar(&cancel, "cancel", false, "Set spec.revert back to false: the profile's plan is drafted again, for review.")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "How long to wait for the plan to be shown.")
	cmd.Flags().StringVar(&color, "color", ColorAuto,
		"Color the diffs: auto (when stdout is a terminal and NO_COLOR is unset), always or never.")
	return cmd
}
