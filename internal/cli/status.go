package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// StatusRow is one VirtPlatformConfig in `status -o json|yaml`. The field names are stable.
type StatusRow struct {
	Name             string `json:"name"`
	Profile          string `json:"profile"`
	Action           string `json:"action"`
	Revert           bool   `json:"revert"`
	RevertPlan       bool   `json:"revertPlan"`
	Phase            string `json:"phase"`
	Impact           string `json:"impact"`
	ItemsCompleted   int    `json:"itemsCompleted"`
	ItemsTotal       int    `json:"itemsTotal"`
	Reason           string `json:"reason"`
	Message          string `json:"message"`
	PlanHash         string `json:"planHash"`
	ApprovalRequired bool   `json:"approvalRequired"`
	// RequestedBy and ApprovedBy are status.approval's: who changed what the executed plan
	// was drafted from and who approved it ("unverified" without the admission policies).
	RequestedBy string    `json:"requestedBy,omitempty"`
	ApprovedBy  string    `json:"approvedBy,omitempty"`
	ApprovedVia string    `json:"approvedVia,omitempty"`
	Age         string    `json:"age"`
	Created     time.Time `json:"created"`
}

func statusRow(vpc *advisorv1alpha1.VirtPlatformConfig, now time.Time) StatusRow {
	done, total := itemCounts(vpc.Status.Items)
	reason, message := reasonAndMessage(vpc)
	row := StatusRow{
		Name:             vpc.Name,
		Profile:          string(vpc.Spec.Profile),
		Action:           string(vpc.Spec.Action),
		Revert:           vpc.Spec.Revert,
		RevertPlan:       revertPlan(vpc),
		Phase:            string(vpc.Status.Phase),
		Impact:           string(vpc.Status.ImpactSeverity),
		ItemsCompleted:   done,
		ItemsTotal:       total,
		Reason:           reason,
		Message:          message,
		PlanHash:         vpc.Status.PlanHash,
		ApprovalRequired: approvalRequired(vpc),
		Age:              duration.HumanDuration(now.Sub(vpc.CreationTimestamp.Time)),
		Created:          vpc.CreationTimestamp.UTC(),
	}
	if a := vpc.Status.Approval; a != nil {
		row.RequestedBy, row.ApprovedBy, row.ApprovedVia = a.RequestedBy, a.ApprovedBy, a.Via
	}
	return row
}

// statusRows are the rows of the configs, sorted by name.
func statusRows(items []advisorv1alpha1.VirtPlatformConfig, now time.Time) []StatusRow {
	rows := make([]StatusRow, 0, len(items))
	for i := range items {
		rows = append(rows, statusRow(&items[i], now))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return rows
}

// writeStructured prints v as JSON or YAML when output asks for either, and tells whether
// it did; "", "table" and "wide" are left to the caller's table.
func writeStructured(w io.Writer, v any, output string) (bool, error) {
	switch output {
	case "json":
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintln(w, string(data))
		return true, err
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(data)
		return true, err
	case "", "table", "wide":
		return false, nil
	}
	return false, fmt.Errorf("unknown output format %q: use json, yaml or leave -o out for a table", output)
}

// writeStatus prints rows as a table, JSON or YAML.
func writeStatus(w io.Writer, rows []StatusRow, output string) error {
	if written, err := writeStructured(w, rows, output); written || err != nil {
		return err
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "No VirtPlatformConfigs found. Is the virt-advisor-operator running? It creates one per profile: "+
			profileList())
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	wide := output == "wide"
	header := "PROFILE\tACTION\tPHASE\tIMPACT\tITEMS\tREASON\tAGE"
	if wide {
		header += "\tREQUESTED-BY\tAPPROVED-BY"
	}
	_, _ = fmt.Fprintln(tw, header)
	for _, r := range rows {
		action := orDash(r.Action)
		if r.Revert {
			// spec.revert: the config asks for (or ran) its revert plan.
			action += "+revert"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s", r.Name, action, orDash(r.Phase), orDash(r.Impact),
			r.ItemsCompleted, r.ItemsTotal, orDash(r.Reason), r.Age)
		if wide {
			approved := orDash(r.ApprovedBy)
			if r.ApprovedVia != "" {
				approved += " (" + r.ApprovedVia + ")"
			}
			_, _ = fmt.Fprintf(tw, "\t%s\t%s", orDash(r.RequestedBy), approved)
		}
		_, _ = fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func newStatusCommand(o *Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status [PROFILE]",
		Short: "List every VirtPlatformConfig with its phase, impact, items done and the reason of its state",
		Long: `List every VirtPlatformConfig with its action, phase, impact, items done and the reason of
its state. The action of a config that asks for its revert plan (spec.revert) reads e.g.
DryRun+revert; its phase is Reverted once the revert plan ran (or had nothing to do).
-o wide adds who requested and who approved the last execution (status.approval; "unverified"
when the operator's admission policies were not in place).`,
		Example: `  kubectl virt-advisor status
  kubectl virt-advisor status -o wide
  kubectl virt-advisor status load-aware-rebalancing -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			var items []advisorv1alpha1.VirtPlatformConfig
			if len(args) == 1 {
				vpc, err := getConfig(cmd.Context(), c, args[0])
				if err != nil {
					return err
				}
				items = append(items, *vpc)
			} else {
				list := &advisorv1alpha1.VirtPlatformConfigList{}
				if err := c.List(cmd.Context(), list); err != nil {
					return explain(err)
				}
				items = list.Items
			}
			return writeStatus(o.Streams.Out, statusRows(items, o.now()), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml (a list of objects) instead of a table.")
	return cmd
}
