package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// planView is what `plan` prints.
type planView struct {
	vpc *advisorv1alpha1.VirtPlatformConfig
	// item limits the output to one item ("" for all).
	item  string
	color bool
}

// errNoPlan says why a config shows no plan, and what to do.
func errNoPlan(vpc *advisorv1alpha1.VirtPlatformConfig) error {
	name := vpc.Name
	switch {
	case vpc.Spec.Action == advisorv1alpha1.ActionIgnore || vpc.Status.Phase == advisorv1alpha1.PhaseIgnored:
		return fmt.Errorf("%s is Ignored (spec.action Ignore): it has no plan. Draft one with: kubectl %s dry-run %s",
			name, PluginName, name)
	case vpc.Status.Phase == advisorv1alpha1.PhaseReverted:
		_, msg := reasonAndMessage(vpc)
		return fmt.Errorf("%s is Reverted: %s. Draft the profile's plan again with: kubectl %s revert %s --cancel",
			name, msg, PluginName, name)
	case vpc.Status.Phase == advisorv1alpha1.PhasePrerequisiteFailed || vpc.Status.Phase == advisorv1alpha1.PhaseFailed:
		_, msg := reasonAndMessage(vpc)
		return fmt.Errorf("%s has no plan: it is %s: %s", name, vpc.Status.Phase, msg)
	}
	return fmt.Errorf("%s has no plan yet (phase %s): the operator is drafting it. Wait for it with: kubectl %s wait %s --for=ReviewRequired",
		name, orDash(string(vpc.Status.Phase)), PluginName, name)
}

// selectedItems returns the items to show and their positions (1-based) in the plan.
func (v planView) selectedItems() ([]advisorv1alpha1.PlanItem, []int, error) {
	items := v.vpc.Status.Items
	if v.item == "" {
		pos := make([]int, len(items))
		for i := range items {
			pos[i] = i + 1
		}
		return items, pos, nil
	}
	names := make([]string, 0, len(items))
	for i, it := range items {
		if it.Name == v.item {
			return []advisorv1alpha1.PlanItem{it}, []int{i + 1}, nil
		}
		names = append(names, it.Name)
	}
	return nil, nil, fmt.Errorf("the plan of %s has no item %q; its items: %s", v.vpc.Name, v.item, strings.Join(names, ", "))
}

// render writes the plan and returns whether it changes something (the exit code).
func (v planView) render(w io.Writer) (int, error) {
	vpc := v.vpc
	if vpc.Status.PlanHash == "" {
		return ExitError, errNoPlan(vpc)
	}
	items, pos, err := v.selectedItems()
	if err != nil {
		return ExitError, err
	}
	p := painter{on: v.color}
	var b strings.Builder
	reason, message := reasonAndMessage(vpc)
	revert := revertPlan(vpc)
	what := "Plan"
	if revert {
		what = "Revert plan"
	}
	b.WriteString(p.bold(fmt.Sprintf("%s of %s: phase %s, action %s, impact %s", what, vpc.Name,
		orDash(string(vpc.Status.Phase)), orDash(string(vpc.Spec.Action)), orDash(string(vpc.Status.ImpactSeverity)))) + "\n")
	if reason != "" {
		fmt.Fprintf(&b, "%s: %s\n", reason, sanitize(message))
	}
	b.WriteString(approvedBy(vpc))
	changing := 0
	for i, it := range items {
		if changes(it) {
			changing++
		}
		b.WriteString("\n")
		v.renderItem(&b, p, it, pos[i], len(vpc.Status.Items))
	}
	if v.item == "" {
		renderRollouts(&b, p, vpc.Status.Rollouts)
	}
	b.WriteString("\n")
	b.WriteString(p.bold("Plan hash: "+vpc.Status.PlanHash) + "\n")
	what = strings.ToLower(what)
	switch {
	case vpc.Status.Phase == advisorv1alpha1.PhaseReverted:
		fmt.Fprintf(&b, "Nothing of this profile is managed any more. To draft the profile's plan again, for review:\n"+
			"  kubectl %s revert %s --cancel\n", PluginName, vpc.Name)
	case changing == 0 && v.item != "":
		fmt.Fprintf(&b, "Item %s changes nothing.\n", v.item)
	case changing == 0:
		fmt.Fprintf(&b, "This %s changes nothing.\n", what)
	case approvalRequired(vpc):
		fmt.Fprintf(&b, "%d item(s) change their target. To approve exactly this %s:\n  kubectl %s approve %s --hash %s\n",
			changing, what, PluginName, vpc.Name, vpc.Status.PlanHash)
	default:
		fmt.Fprintf(&b, "%d item(s) still change their target. Follow the rollout with: kubectl %s wait %s --for=Completed\n",
			changing, PluginName, vpc.Name)
	}
	if revert && vpc.Status.Phase != advisorv1alpha1.PhaseReverted && v.item == "" {
		fmt.Fprintf(&b, "To draft the profile's plan again instead: kubectl %s revert %s --cancel\n", PluginName, vpc.Name)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return ExitError, err
	}
	if changing > 0 {
		return ExitChanges, nil
	}
	return ExitOK, nil
}

func (v planView) renderItem(b *strings.Builder, p painter, it advisorv1alpha1.PlanItem, pos, total int) {
	header := fmt.Sprintf("Item %d/%d: %s", pos, total, it.Name)
	if it.Action != "" && it.Action != advisorv1alpha1.ItemActionApply {
		header += " (" + strings.ToLower(string(it.Action)) + ")"
	}
	b.WriteString(p.bold(header) + "\n")
	if it.Action != "" && it.Action != advisorv1alpha1.ItemActionApply {
		fmt.Fprintf(b, "  action:  %s: %s\n", it.Action, actionMeaning[it.Action])
	}
	fmt.Fprintf(b, "  state:   %s\n", orDash(string(it.State)))
	fmt.Fprintf(b, "  impact:  %s\n", orDash(string(it.ImpactSeverity)))
	fmt.Fprintf(b, "  target:  %s\n", sanitize(describeTarget(it.TargetRef)))
	if it.Message != "" {
		fmt.Fprintf(b, "  message: %s\n", sanitize(it.Message))
	}
	for _, c := range it.Conflicts {
		if isRevertItem(it) {
			b.WriteString("  conflict: " + sanitize(revertConflict(c)) + "\n")
			continue
		}
		fmt.Fprintf(b, "  conflict: %s is owned by %s with %s; the plan sets %s\n",
			sanitize(c.Path), sanitize(c.Manager), orDash(sanitize(c.LiveValue)), orDash(sanitize(c.PlannedValue)))
	}
	switch {
	case it.State == advisorv1alpha1.ItemSkipped:
	case it.Diff == "" || it.Change == advisorv1alpha1.ChangeNone:
		b.WriteString("  (no changes)\n")
	default:
		if it.State == advisorv1alpha1.ItemCompleted || it.State == advisorv1alpha1.ItemInProgress {
			b.WriteString("  applied, with this change:\n")
		}
		d := p.diff(sanitize(it.Diff))
		b.WriteString(d)
		if !strings.HasSuffix(d, "\n") {
			b.WriteString("\n")
		}
	}
}

// revertConflict says what a revert item puts back on a field that changed since the
// apply it reverts.
func revertConflict(c advisorv1alpha1.FieldConflict) string {
	now := fmt.Sprintf("%s set it to %s", c.Manager, c.LiveValue)
	if c.LiveValue == "" {
		now = "it was removed"
	}
	back := "the revert puts back " + orDash(c.PlannedValue)
	if c.PlannedValue == "(absent)" {
		back = "the revert removes it, as it was absent before"
	}
	return fmt.Sprintf("%s changed since the apply (%s); %s", c.Path, now, back)
}

// actionMeaning says what approving an item of each action other than Apply does.
var actionMeaning = map[advisorv1alpha1.ItemAction]string{
	advisorv1alpha1.ItemActionRelease: "the target keeps its values; this profile's fields and marks are handed back",
	advisorv1alpha1.ItemActionDelete:  "the target, which this profile created, is deleted",
	advisorv1alpha1.ItemActionRestore: "the values this profile replaced are put back, the fields it added removed, its fields handed back",
}

// renderRollouts writes the disruption forecast: per MachineConfigPool, what approving
// the plan does to its nodes.
func renderRollouts(b *strings.Builder, p painter, rollouts []advisorv1alpha1.PoolRollout) {
	shown := false
	for _, ro := range rollouts {
		if len(ro.Items) == 0 {
			continue
		}
		if !shown {
			b.WriteString("\n" + p.bold("Disruption forecast (the items below roll out together, once per node):") + "\n")
			shown = true
		}
		what := "update (no reboot)"
		if ro.Reboot {
			what = "reboot once"
		}
		fmt.Fprintf(b, "  MachineConfigPool %s: %d node(s) %s, in %d wave(s) of at most %s; estimated duration %s\n",
			sanitize(ro.Pool), ro.Nodes, what, ro.Waves, orDash(sanitize(ro.MaxUnavailable)), orDash(sanitize(ro.EstimatedDuration)))
		if ro.Pause {
			fmt.Fprintf(b, "    the pool is paused while %s are applied, then resumed\n", sanitize(strings.Join(ro.Items, ", ")))
		}
		for _, why := range ro.Reasons {
			fmt.Fprintf(b, "    %s\n", sanitize(why))
		}
		if ro.PauseState != "" {
			fmt.Fprintf(b, "    pause: %s\n", ro.PauseState)
		}
		renderVMs(b, ro.VMs)
		renderVMsActual(b, ro.VMsActual)
	}
}

// renderVMsActual writes what the pool's rollout did to the VMs, once it finished.
func renderVMsActual(b *strings.Builder, a *advisorv1alpha1.VMActual) {
	switch {
	case a == nil:
		return
	case a.UnknownReason != "":
		fmt.Fprintf(b, "    VMs after the rollout unknown: %s\n", sanitize(a.UnknownReason))
		return
	}
	verdict := "as forecast"
	if !a.AsForecast {
		verdict = "NOT as forecast"
	}
	fmt.Fprintf(b, "    VMs after the rollout (%s): %s\n", verdict, sanitize(a.Summary))
	for _, l := range []struct {
		what  string
		names *advisorv1alpha1.VMNames
	}{{"moved more often than forecast", a.MovedMore}, {"blocked a drain", a.Blocking}} {
		if l.names != nil {
			fmt.Fprintf(b, "    %s: %s\n", l.what, sanitize(vmNameList(l.names)))
		}
	}
}

// vmNameList spells a bounded list of VMs.
func vmNameList(n *advisorv1alpha1.VMNames) string {
	line := strings.Join(n.Names, ", ")
	if n.More > 0 {
		line += fmt.Sprintf(" and %d more", n.More)
	}
	return line
}

// renderVMs writes what draining the pool's nodes does to the VMs on them.
func renderVMs(b *strings.Builder, vms *advisorv1alpha1.VMForecast) {
	switch {
	case vms == nil:
		return
	case vms.UnknownReason != "":
		fmt.Fprintf(b, "    VMs unknown: %s\n", sanitize(vms.UnknownReason))
		return
	}
	fmt.Fprintf(b, "    VMs: %s\n", sanitize(vms.Summary))
	if vms.MemoryToMigrate != nil {
		fmt.Fprintf(b, "    memory to migrate: %s\n", vms.MemoryToMigrate.String())
	}
	for _, l := range []struct {
		what  string
		names *advisorv1alpha1.VMNames
	}{{"block the drain", vms.Blocking}, {"restart", vms.Restarting}, {"may move more often than forecast", vms.MayExceed}} {
		if l.names == nil {
			continue
		}
		fmt.Fprintf(b, "    %s: %s\n", l.what, sanitize(vmNameList(l.names)))
	}
}

// sanitize shows control characters other than newline and tab as escapes, so text from
// the cluster cannot drive the terminal.
func sanitize(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			if r < utf8.RuneSelf {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}

func (o *Options) isTerminal() bool {
	if o.IsTerminal != nil {
		return o.IsTerminal()
	}
	f, ok := o.Streams.Out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (o *Options) getenv(key string) string {
	if o.Getenv != nil {
		return o.Getenv(key)
	}
	return os.Getenv(key)
}

func newPlanCommand(o *Options) *cobra.Command {
	var color, item string
	cmd := &cobra.Command{
		Use:   "plan PROFILE",
		Short: "Show the plan of a profile: each item's impact, message, target and diff, and the plan hash",
		Long: `Show the plan of a profile: each item with its state, impact, target, message, conflicts
with other field managers and its unified diff (live object to the server-side-apply dry-run
of what will be applied), followed by the plan hash that approve pins.

A revert plan (see revert) is shown the same way, under the header "Revert plan": each item
says its action (Delete, Restore or Release) and what approving it does, and its conflicts
are the fields changed since the apply it reverts.

Exit code: 0 when the plan changes nothing, 2 when it changes at least one target, 1 on error.`,
		Example: `  kubectl virt-advisor plan load-aware-rebalancing
  kubectl virt-advisor plan load-aware-rebalancing --item enable-psi-metrics --color=always | less -R`,
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
			vpc, err := getConfig(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if !fresh(vpc) {
				_, _ = fmt.Fprintf(o.Streams.ErrOut, "Note: the operator has not acted on the latest spec of %s yet "+
					"(generation %d, observed %d): the plan shown may be replaced.\n", vpc.Name, vpc.Generation, vpc.Status.ObservedGeneration)
			}
			code, err := planView{vpc: vpc, item: item, color: on}.render(o.Streams.Out)
			if err != nil {
				return err
			}
			if code != ExitOK {
				return &ExitCodeError{Code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&color, "color", ColorAuto,
		"Color the diffs: auto (when stdout is a terminal and NO_COLOR is unset), always or never.")
	cmd.Flags().StringVar(&item, "item", "", "Show only the item with this name.")
	return cmd
}

// approvedBy says who requested and who approved the last execution (status.approval), when
// one was approved.
func approvedBy(vpc *advisorv1alpha1.VirtPlatformConfig) string {
	a := vpc.Status.Approval
	if a == nil || a.ApprovedBy == "" {
		return ""
	}
	s := "Last execution approved by " + sanitize(a.ApprovedBy)
	if a.Via != "" {
		s += " (via " + sanitize(a.Via) + ")"
	}
	if a.ApprovedAt != nil {
		s += " at " + a.ApprovedAt.UTC().Format(time.RFC3339)
	}
	if a.RequestedBy != "" {
		s += ", requested by " + sanitize(a.RequestedBy)
	}
	return s + "\n"
}
