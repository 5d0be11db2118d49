package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// setAction sets spec.action of name with one merge patch. dry-run also creates the config
// of a known profile that does not exist (it was deleted).
func setAction(ctx context.Context, c client.Client, name string, action advisorv1alpha1.Action) (string, error) {
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, vpc)
	if apierrors.IsNotFound(err) && action == advisorv1alpha1.ActionDryRun && isProfile(name) {
		vpc = &advisorv1alpha1.VirtPlatformConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       advisorv1alpha1.VirtPlatformConfigSpec{Profile: advisorv1alpha1.ProfileName(name), Action: action},
		}
		if err := c.Create(ctx, vpc); err != nil {
			return "", explain(err)
		}
		return fmt.Sprintf("Created VirtPlatformConfig %s with spec.action %s.", name, action), nil
	}
	if err != nil {
		if _, gerr := getConfig(ctx, c, name); gerr != nil {
			return "", gerr
		}
		return "", explain(err)
	}
	if vpc.Spec.Action == action {
		return fmt.Sprintf("%s: spec.action is already %s.", name, action), nil
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"action": action}})
	if err != nil {
		return "", err
	}
	was := vpc.Spec.Action
	if err := c.Patch(ctx, vpc, client.RawPatch("application/merge-patch+json", body)); err != nil {
		return "", explain(err)
	}
	return fmt.Sprintf("%s: spec.action set to %s (was %s).", name, action, orDash(string(was))), nil
}

func newActionCommand(o *Options, use string, action advisorv1alpha1.Action, short string) *cobra.Command {
	long := short + "."
	next := ""
	switch action {
	case advisorv1alpha1.ActionDryRun:
		long += " Sets spec.action: DryRun; a profile whose config was deleted gets a new one."
		next = "Wait for the plan with: kubectl " + PluginName + " wait %s --for=ReviewRequired\n"
	case advisorv1alpha1.ActionIgnore:
		long += " Sets spec.action: Ignore; the plan is dropped and the targets keep their values."
	}
	return &cobra.Command{
		Use:   use + " PROFILE",
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			msg, err := setAction(cmd.Context(), c, args[0], action)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintln(o.Streams.Out, msg); err != nil {
				return err
			}
			if next != "" {
				_, err = fmt.Fprintf(o.Streams.Out, next, args[0])
			}
			return err
		},
	}
}
