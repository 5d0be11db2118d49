package cli

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// writeHistory prints a config's status.history as a table, JSON or YAML (the entries as
// the API names their fields, newest first).
func writeHistory(w io.Writer, vpc *advisorv1alpha1.VirtPlatformConfig, output string) error {
	entries := vpc.Status.History
	if entries == nil {
		entries = []advisorv1alpha1.Execution{}
	}
	if written, err := writeStructured(w, entries, output); written || err != nil {
		return err
	}
	if len(entries) == 0 {
		_, err := fmt.Fprintf(w, "%s has executed no plan yet (status.history is empty).\n", vpc.Name)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	_, _ = fmt.Fprintln(tw, "STARTED\tFINISHED\tOUTCOME\tPLAN\tREQUESTED-BY\tAPPROVED-BY\tVIA\tAPPROVED-AT\tREBOOTS\tVM-MIGRATIONS")
	for _, e := range entries {
		outcome := string(e.Outcome)
		if e.FinishedAt == nil {
			outcome = "(running)"
		}
		migrations := "-"
		if e.VMMigrations != nil {
			migrations = strconv.Itoa(int(*e.VMMigrations))
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", timeOf(e.StartedAt), timeOf(e.FinishedAt), outcome,
			orDash(shortHash(e.PlanHash)), orDash(sanitize(e.RequestedBy)), orDash(sanitize(e.ApprovedBy)), orDash(sanitize(e.Via)),
			timeOf(e.ApprovedAt), e.Reboots, migrations)
	}
	return tw.Flush()
}

// timeOf prints a time of the history in UTC, "-" when it is not set.
func timeOf(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func newHistoryCommand(o *Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "history PROFILE",
		Short: "List the last executions of a VirtPlatformConfig's plans, newest first, with who approved them",
		Long: `List the last executions of a VirtPlatformConfig's plans (status.history, at most 10), newest
first: when each started and finished, the phase it ended in, the plan hash it executed, who
requested and who approved it and how, when the operator observed the approval, the node
reboots of its rollouts and the VM live migrations they made (where counted). An execution
still running shows (running). An approval that lapsed or was withdrawn before anything was
applied is no execution.`,
		Example: `  kubectl virt-advisor history load-aware-rebalancing
  kubectl virt-advisor history load-aware-rebalancing -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			vpc, err := getConfig(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			return writeHistory(o.Streams.Out, vpc, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml (the entries of status.history) instead of a table.")
	return cmd
}
