package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fleetRollout approves one content on the waves of a rolloutPlan, one wave after the other,
// and stops at the first cluster that does not end healthy.
type fleetRollout struct {
	o       *Options
	out     io.Writer
	name    string
	plan    *rolloutPlan
	clients map[string]client.Client
	soak    time.Duration
	timeout time.Duration
	// done are the clusters whose wave ended healthy.
	done []string
}

func (r *fleetRollout) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(r.out, format+"\n", args...)
}

// run rolls the content out, wave by wave.
func (r *fleetRollout) run(ctx context.Context) error {
	short := shortHash(r.plan.Hash)
	waves := make([]string, 0, len(r.plan.Waves))
	for _, w := range r.plan.Waves {
		waves = append(waves, strings.Join(w, ", "))
	}
	r.printf("Rolling content %s of %s out in %d wave(s): %s.", short, r.name, len(waves), strings.Join(waves, "; then "))
	for _, s := range r.plan.Skipped {
		r.printf("%s: not approved: %s.", s.Context, s.Why)
	}
	for i, wave := range r.plan.Waves {
		if err := r.runWave(ctx, i, wave); err != nil {
			return fmt.Errorf("%w%s", err, r.untouched(i))
		}
		r.done = append(r.done, wave...)
	}
	r.printf("Content %s of %s is approved and Completed on %s.", short, r.name, strings.Join(r.done, ", "))
	if len(r.plan.Skipped) > 0 {
		names := make([]string, 0, len(r.plan.Skipped))
		for _, s := range r.plan.Skipped {
			names = append(names, s.Context)
		}
		r.printf("Not approved, their plans have other content: %s. Review them with: kubectl %s fleet status %s",
			strings.Join(names, ", "), PluginName, r.name)
	}
	return nil
}

// untouched says which clusters the rollout did not approve because it stopped at wave i.
func (r *fleetRollout) untouched(i int) string {
	var rest []string
	for _, w := range r.plan.Waves[i+1:] {
		rest = append(rest, w...)
	}
	if len(rest) == 0 {
		return ""
	}
	return fmt.Sprintf(". The rollout stopped: %s left untouched", strings.Join(rest, ", "))
}

// runWave approves the content on every cluster of a wave, then waits until each is
// Completed and stays so for the soak time.
func (r *fleetRollout) runWave(ctx context.Context, i int, wave []string) error {
	role := "canary"
	if i > 0 {
		role = fmt.Sprintf("wave %d", i)
	}
	generations := map[string]int64{}
	for _, name := range wave {
		gen, err := r.approveOn(ctx, name)
		if err != nil {
			return fmt.Errorf("%s %s: %w", role, name, err)
		}
		generations[name] = gen
		r.printf("%s (%s): approved content %s (spec.action Apply, spec.approvedContent).", name, role, shortHash(r.plan.Hash))
	}
	return r.watchWave(ctx, role, wave, generations)
}

// approveOn patches the approval of the content into one cluster's config and returns the
// generation of the spec that approves it.
func (r *fleetRollout) approveOn(ctx context.Context, name string) (int64, error) {
	c := r.clients[name]
	vpc, err := getConfig(ctx, c, r.name)
	if err != nil {
		return 0, err
	}
	if contentHashOf(vpc) != r.plan.Hash {
		return 0, fmt.Errorf("its plan changed to content %s since the rollout started; not approved",
			orDash(shortHash(contentHashOf(vpc))))
	}
	if contentApprovedOn(vpc, r.plan.Hash) {
		return vpc.Generation, nil
	}
	body, err := json.Marshal(approvedContentPatch(r.plan.Content))
	if err != nil {
		return 0, err
	}
	if err := c.Patch(ctx, vpc, client.RawPatch("application/merge-patch+json", body)); err != nil {
		return 0, explain(err)
	}
	return vpc.Generation, nil
}

// watchWave reads the wave's clusters until each has been healthy for the soak time, and
// fails at the first one that breaks or at the timeout.
func (r *fleetRollout) watchWave(ctx context.Context, role string, wave []string, generations map[string]int64) error {
	deadline := r.o.now().Add(r.timeout)
	healthySince := map[string]time.Time{}
	last := map[string]string{}
	for {
		now := r.o.now()
		settled, pending := true, ""
		for _, name := range wave {
			vpc, err := getConfig(ctx, r.clients[name], r.name)
			if err != nil {
				return fmt.Errorf("%s %s: %w", role, name, err)
			}
			health, state := judge(vpc, generations[name])
			if state != last[name] {
				r.printf("%s: %s", name, state)
				last[name] = state
			}
			switch health {
			case broken:
				return fmt.Errorf("%s %s did not end healthy: it is %s", role, name, state)
			case healthy:
				if healthySince[name].IsZero() {
					healthySince[name] = now
					if r.soak > 0 {
						r.printf("%s: Completed; watching it for %s before going on.", name, r.soak)
					}
				}
				if now.Sub(healthySince[name]) < r.soak {
					settled = false
				}
			default:
				delete(healthySince, name)
				settled, pending = false, name
			}
		}
		if settled {
			for _, name := range wave {
				r.printf("%s: healthy (Completed for %s).", name, r.soak)
			}
			return nil
		}
		if pending != "" && now.After(deadline) {
			return fmt.Errorf("%s %s did not complete within %s: it is %s", role, pending, r.timeout, last[pending])
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", role, ctx.Err())
		case <-time.After(r.o.PollInterval):
		}
	}
}

func newFleetApproveCommand(o *Options) *cobra.Command {
	var flags fleetFlags
	var content string
	var canaries []string
	var batch int
	var soak, timeout time.Duration
	cmd := &cobra.Command{
		Use:   "approve PROFILE --content HASH --canary CONTEXT[,CONTEXT]",
		Short: "Approve one plan content on a canary, then on the rest of the fleet, stopping at the first failure",
		Long: `Approve the plan content HASH (status.contentHash, as fleet status shows it; the start of
it is enough) of a profile on the clusters of the fleet, one wave at a time: the canary
clusters first, then the other clusters whose plans have that content, in the order of
--contexts, --batch clusters at a time.

On each cluster one merge patch sets spec.action: Apply and spec.approvedContent (the hash
and the items, copied from the status.content of a cluster whose plan has it), and drops
spec.approvedPlanHash. Each cluster still executes only through its own guards (a stale
plan, field conflicts, pool gates, maintenance windows).

A wave is done when each of its clusters is Completed and stays so for --soak. The rollout
stops at the first cluster that ends Failed, CompletedWithErrors, PrerequisiteFailed,
Drifted, waits in ReviewRequired (e.g. ContentMismatch, a conflict that needs a local
approval) or is not Completed within --timeout: it names the cluster, its phase and
message, and leaves the clusters of the later waves untouched. Clusters whose plans have
other content are not approved (they would wait with reason ContentMismatch): the output
names them and the items that differ.`,
		Example: `  kubectl virt-advisor fleet approve load-aware-rebalancing --content 3f1c9a2b7d4e --canary staging
  kubectl virt-advisor fleet approve load-aware-rebalancing --content 3f1c9a2b7d4e --canary staging \
    --contexts staging,prod-east,prod-west --batch 2 --soak 10m --timeout 1h`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			members, err := o.fleetMembers(flags.contexts)
			if err != nil {
				return err
			}
			p, err := planRollout(readFleet(cmd.Context(), members, args[0]), content, canaries, batch)
			if err != nil {
				return err
			}
			clients := map[string]client.Client{}
			for _, m := range members {
				clients[m.Context] = m.Client
			}
			r := &fleetRollout{o: o, out: o.Streams.Out, name: args[0], plan: p, clients: clients, soak: soak, timeout: timeout}
			return r.run(cmd.Context())
		},
	}
	flags.add(cmd)
	cmd.Flags().StringVar(&content, "content", "", "The content hash to approve (status.contentHash, or its start as fleet status prints it).")
	cmd.Flags().StringSliceVar(&canaries, "canary", nil, "The context(s) to approve first, comma-separated; each must have the content.")
	cmd.Flags().IntVar(&batch, "batch", 1, "How many clusters to approve at a time after the canary.")
	cmd.Flags().DurationVar(&soak, "soak", 2*time.Minute, "How long each wave must stay Completed before the next one is approved.")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "How long a wave may take to be Completed.")
	return cmd
}
