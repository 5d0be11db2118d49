package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// The states `wait --for` accepts.
const (
	ForCompleted      = "Completed"
	ForReviewRequired = "ReviewRequired"
	ForReady          = "Ready"
)

var machineConfigPoolGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}

// reached tells whether vpc is in the state waited for; err is set when it ended in a state
// it will not leave on its own (Failed, PrerequisiteFailed, CompletedWithErrors).
func reached(vpc *advisorv1alpha1.VirtPlatformConfig, target string) (bool, error) {
	if !fresh(vpc) {
		return false, nil
	}
	phase := vpc.Status.Phase
	_, msg := reasonAndMessage(vpc)
	switch phase {
	case advisorv1alpha1.PhaseFailed, advisorv1alpha1.PhasePrerequisiteFailed:
		return false, fmt.Errorf("%s is %s: %s", vpc.Name, phase, msg)
	case advisorv1alpha1.PhaseCompletedWithErrors:
		if target != ForReviewRequired {
			return false, fmt.Errorf("%s is %s: %s", vpc.Name, phase, msg)
		}
	}
	switch target {
	case ForCompleted:
		// An approved revert plan ends Reverted.
		return phase == advisorv1alpha1.PhaseCompleted || phase == advisorv1alpha1.PhaseCompletedWithUpgrade ||
			(phase == advisorv1alpha1.PhaseReverted && vpc.Spec.Revert), nil
	case ForReviewRequired:
		return phase == advisorv1alpha1.PhaseReviewRequired || approvalRequired(vpc), nil
	case ForReady:
		c := meta.FindStatusCondition(vpc.Status.Conditions, advisorv1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= vpc.Generation, nil
	}
	return false, fmt.Errorf("--for must be %s, %s or %s, not %q", ForCompleted, ForReviewRequired, ForReady, target)
}

// activeItem is the item the execution is at: the first InProgress one, else the first
// Pending one; -1 when there is none.
func activeItem(items []advisorv1alpha1.PlanItem) int {
	for i, it := range items {
		if it.State == advisorv1alpha1.ItemInProgress {
			return i
		}
	}
	for i, it := range items {
		if it.State == advisorv1alpha1.ItemPending {
			return i
		}
	}
	return -1
}

// baselinePools are the MachineConfigPools an item's health baseline records
// ("pool=rendered-config,...") with the rendered configuration each targeted before the apply.
func baselinePools(baseline string) [][2]string {
	var pools [][2]string
	for _, pair := range strings.Split(baseline, ",") {
		name, rendered, _ := strings.Cut(strings.TrimSpace(pair), "=")
		if name != "" {
			pools = append(pools, [2]string{name, rendered})
		}
	}
	return pools
}

// poolProgress says how far a MachineConfigPool rolled out, e.g. "pool worker 1/3 updated".
// before is the rendered configuration the pool targeted before the apply.
func poolProgress(pool *unstructured.Unstructured, before string) string {
	name := pool.GetName()
	conditions, _, _ := unstructured.NestedSlice(pool.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Degraded" && m["status"] == "True" {
			return fmt.Sprintf("pool %s is Degraded: %v", name, m["message"])
		}
	}
	target, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	machines := count(pool.Object, "status", "machineCount")
	updated := count(pool.Object, "status", "updatedMachineCount")
	if paused, _, _ := unstructured.NestedBool(pool.Object, "spec", "paused"); paused {
		return fmt.Sprintf("pool %s is paused, %d/%d updated", name, updated, machines)
	}
	if before != "" && target == before {
		return fmt.Sprintf("pool %s 0/%d updated (the new configuration is not rendered yet)", name, machines)
	}
	return fmt.Sprintf("pool %s %d/%d updated to %s", name, updated, machines, orDash(target))
}

// count reads a number of machines, whichever way it was decoded.
func count(obj map[string]any, path ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, path...)
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

// progress is one line on where vpc is; pools reads the rollout of the item's pools.
func progress(vpc *advisorv1alpha1.VirtPlatformConfig, target string, pools func(*advisorv1alpha1.VirtPlatformConfig, advisorv1alpha1.PlanItem) []string) string {
	reason, msg := reasonAndMessage(vpc)
	head := fmt.Sprintf("%s: %s", vpc.Name, orDash(string(vpc.Status.Phase)))
	if reason != "" {
		head += " (" + reason + ")"
	}
	if !fresh(vpc) {
		return fmt.Sprintf("%s, waiting for the operator to act on generation %d", head, vpc.Generation)
	}
	items := vpc.Status.Items
	switch phase := vpc.Status.Phase; {
	case phase == advisorv1alpha1.PhaseInProgress:
		i := activeItem(items)
		if i < 0 {
			return head
		}
		it := items[i]
		line := fmt.Sprintf("%s, item %d/%d %s %s", head, i+1, len(items), it.Name, orDash(string(it.State)))
		if it.Message != "" {
			line += ": " + it.Message
		}
		if it.State == advisorv1alpha1.ItemInProgress && pools != nil {
			if p := pools(vpc, it); len(p) > 0 {
				line += "; " + strings.Join(p, "; ")
			}
		}
		return sanitize(line)
	case approvalRequired(vpc) && target != ForReviewRequired:
		done, total := itemCounts(items)
		return fmt.Sprintf("%s, %d/%d items, plan %s waits for approval: kubectl %s approve %s --hash %s",
			head, done, total, shortHash(vpc.Status.PlanHash), PluginName, vpc.Name, vpc.Status.PlanHash)
	case msg != "":
		return sanitize(head + ": " + msg)
	}
	return head
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// readPools returns the rollout of the MachineConfigPools an item rolls out in, as the
// config's status.rollouts (or, for a status written by an older operator, the item's
// health baseline) records them; pools that cannot be read are left out.
func readPools(ctx context.Context, c client.Client) func(*advisorv1alpha1.VirtPlatformConfig, advisorv1alpha1.PlanItem) []string {
	return func(vpc *advisorv1alpha1.VirtPlatformConfig, it advisorv1alpha1.PlanItem) []string {
		var out []string
		pools := baselinePools(it.HealthBaseline)
		for _, ro := range vpc.Status.Rollouts {
			if slices.Contains(ro.Items, it.Name) && !slices.ContainsFunc(pools, func(p [2]string) bool { return p[0] == ro.Pool }) {
				pools = append(pools, [2]string{ro.Pool, ""})
			}
		}
		for _, p := range pools {
			pool := &unstructured.Unstructured{}
			pool.SetGroupVersionKind(machineConfigPoolGVK)
			if err := c.Get(ctx, client.ObjectKey{Name: p[0]}, pool); err != nil {
				continue
			}
			out = append(out, poolProgress(pool, p[1]))
		}
		return out
	}
}

// waiter follows one config until it reaches a state.
type waiter struct {
	c        client.Client
	name     string
	target   string
	interval time.Duration
	out      io.Writer
	now      func() time.Time
	// until decides whether the config is where it is waited for (reached with target
	// unless set); goal says where that is, for the timeout (target unless set).
	until func(*advisorv1alpha1.VirtPlatformConfig) (bool, error)
	goal  string
}

func (w waiter) wait(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	say := func(line string) {
		if line != last {
			last = line
			_, _ = fmt.Fprintf(w.out, "%s %s\n", w.now().Format("15:04:05"), line)
		}
	}
	until, goal := w.until, w.goal
	if until == nil {
		until = func(vpc *advisorv1alpha1.VirtPlatformConfig) (bool, error) { return reached(vpc, w.target) }
	}
	if goal == "" {
		goal = "be " + w.target
	}
	var vpc *advisorv1alpha1.VirtPlatformConfig
	for {
		got, err := getConfig(ctx, w.c, w.name)
		switch {
		case err == nil:
			vpc = got
			done, failed := until(vpc)
			say(progress(vpc, w.target, readPools(ctx, w.c)))
			if failed != nil {
				return &ExitCodeError{Code: ExitError, Err: failed}
			}
			if done {
				return nil
			}
		case ctx.Err() != nil:
		case errors.Is(err, errNotInstalled) || isNotFound(err):
			return err
		default:
			say("cannot read " + w.name + ", retrying: " + err.Error())
		}
		select {
		case <-ctx.Done():
			state := "it could not be read"
			if vpc != nil {
				reason, msg := reasonAndMessage(vpc)
				state = fmt.Sprintf("it is %s", orDash(string(vpc.Status.Phase)))
				if reason != "" {
					state += fmt.Sprintf(" (%s): %s", reason, msg)
				}
			}
			return &ExitCodeError{Code: ExitError, Err: fmt.Errorf("timed out after %s waiting for %s to %s; %s",
				timeout, w.name, goal, sanitize(state))}
		case <-time.After(w.interval):
		}
	}
}

func newWaitCommand(o *Options) *cobra.Command {
	var forState string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait PROFILE --for=Completed|ReviewRequired|Ready",
		Short: "Wait until a profile's config is Completed, waits for review, or is Ready, printing its progress",
		Long: `Wait until the config of a profile reaches a state, printing a line whenever its progress
changes: the item being applied, what it waits for and, for a MachineConfig, how far its
MachineConfigPool rolled out.

  --for=Completed       the approved plan is applied (phase Completed; Reverted for a revert plan)
  --for=ReviewRequired  a plan waits for an approval (a new plan, a drift correction, an upgrade)
  --for=Ready           the Ready condition is True: completed and in sync

Only a status that reflects the latest spec counts. Exit code 0 when the state is reached,
1 on timeout or when the config ends Failed, PrerequisiteFailed or CompletedWithErrors.`,
		Example: `  kubectl virt-advisor wait load-aware-rebalancing --for=Completed --timeout 30m`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch forState {
			case ForCompleted, ForReviewRequired, ForReady:
			default:
				return fmt.Errorf("--for must be %s, %s or %s, not %q", ForCompleted, ForReviewRequired, ForReady, forState)
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			w := waiter{c: c, name: args[0], target: forState, interval: o.PollInterval, out: o.Streams.Out, now: o.now}
			return w.wait(cmd.Context(), timeout)
		},
	}
	cmd.Flags().StringVar(&forState, "for", "", "The state to wait for: Completed, ReviewRequired or Ready.")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "How long to wait.")
	_ = cmd.MarkFlagRequired("for")
	return cmd
}
