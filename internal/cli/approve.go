package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// conflictRetries is how often approve reads the config again when it changed between the
// read and the patch (a status write), as long as the plan stays the one approved.
const conflictRetries = 5

// approvalHash decides what approve pins: the hash of the plan shown now, which must be
// wanted when it is set. It refuses, with the reason, when there is nothing to approve.
func approvalHash(vpc *advisorv1alpha1.VirtPlatformConfig, wanted string) (string, error) {
	name, shown := vpc.Name, vpc.Status.PlanHash
	if shown == "" {
		return "", fmt.Errorf("nothing to approve: %w", errNoPlan(vpc))
	}
	if wanted != "" && wanted != shown {
		return "", fmt.Errorf("the plan of %s changed since it was reviewed: --hash is %s, but the plan shown now "+
			"has hash %s. Nothing was changed. Review the plan again: kubectl %s plan %s",
			name, wanted, shown, PluginName, name)
	}
	if !approvalRequired(vpc) {
		reason, msg := reasonAndMessage(vpc)
		why := string(vpc.Status.Phase)
		if reason != "" {
			why += " (" + reason + ")"
		}
		switch vpc.Status.Phase {
		case advisorv1alpha1.PhaseInProgress:
			return "", fmt.Errorf("nothing to approve: %s is %s: the plan %s is approved and being applied. "+
				"Follow it with: kubectl %s wait %s --for=Completed", name, why, shown, PluginName, name)
		case advisorv1alpha1.PhaseDrafting, advisorv1alpha1.PhasePending:
			return "", fmt.Errorf("nothing to approve yet: %s is %s. Wait for the plan with: kubectl %s wait %s --for=ReviewRequired",
				name, why, PluginName, name)
		}
		if msg != "" {
			why += ": " + msg
		}
		return "", fmt.Errorf("nothing to approve: %s is %s, and no plan waits for an approval", name, why)
	}
	return shown, nil
}

// approvePatch is the merge patch approve sends: the approval command of status
// (spec.action Apply, spec.approvedPlanHash the plan's hash), guarded by the
// resourceVersion of the read it was decided on.
func approvePatch(resourceVersion, hash string) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": resourceVersion},
		"spec": map[string]any{
			"action":           advisorv1alpha1.ActionApply,
			"approvedPlanHash": hash,
		},
	})
}

// approve pins the approval of name to the plan shown now (wanted: the hash reviewed, when
// given). A config that changes between the read and the patch is read again; the patch is
// retried only while the plan is still the one approved.
func approve(ctx context.Context, c client.Client, name, wanted string) (string, error) {
	for attempt := 0; ; attempt++ {
		vpc, err := getConfig(ctx, c, name)
		if err != nil {
			return "", err
		}
		hash, err := approvalHash(vpc, wanted)
		if err != nil {
			return "", err
		}
		body, err := approvePatch(vpc.ResourceVersion, hash)
		if err != nil {
			return "", err
		}
		err = c.Patch(ctx, vpc, client.RawPatch("application/merge-patch+json", body))
		switch {
		case err == nil:
			return hash, nil
		case apierrors.IsConflict(err) && attempt < conflictRetries:
			// Approve the plan read next only if it is the one decided on here.
			wanted = hash
			continue
		case apierrors.IsConflict(err):
			return "", errors.New("the config kept changing while it was approved; nothing was changed. Try again")
		}
		return "", explain(err)
	}
}

func newApproveCommand(o *Options) *cobra.Command {
	var hash string
	cmd := &cobra.Command{
		Use:   "approve PROFILE",
		Short: "Approve exactly the plan shown: set spec.action Apply and pin spec.approvedPlanHash to its hash",
		Long: `Approve the plan of a profile that waits for an approval. One merge patch sets
spec.action: Apply and spec.approvedPlanHash: <status.planHash>, the same change as the
approval command the status gives; the operator executes only the plan with that hash.

With --hash, approve the plan you reviewed earlier: when the plan shown now has another hash,
nothing is changed. The patch carries the resourceVersion it was decided on, so a plan that
changes in between is never approved unseen.`,
		Example: `  kubectl virt-advisor approve load-aware-rebalancing
  kubectl virt-advisor approve load-aware-rebalancing --hash 3f1c...`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			approved, err := approve(cmd.Context(), c, args[0], hash)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(o.Streams.Out, "Approved plan %s of %s (spec.action Apply, spec.approvedPlanHash %s).\n"+
				"Follow the rollout with: kubectl %s wait %s --for=Completed\n", approved, args[0], approved, PluginName, args[0])
			return err
		},
	}
	cmd.Flags().StringVar(&hash, "hash", "", "The plan hash you reviewed (from plan); approve fails, changing nothing, if the plan shown now has another.")
	return cmd
}
