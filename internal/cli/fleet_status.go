package cli

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// FleetStatus is `fleet status -o json|yaml`: one profile's config on every cluster of the
// fleet, grouped by the content its plan would write. The field names are stable.
type FleetStatus struct {
	Name   string       `json:"name"`
	Groups []FleetGroup `json:"groups"`
}

// FleetGroup is the clusters whose plans have one content hash. ContentHash is empty for
// the clusters that have no plan, or could not be read.
type FleetGroup struct {
	ContentHash string         `json:"contentHash"`
	Clusters    []FleetCluster `json:"clusters"`
	// Differences are the items whose content is not the same in every group, as this
	// group's plans have them.
	Differences []FleetItem `json:"differences,omitempty"`
}

// FleetItem is one item of a group's content.
type FleetItem struct {
	Name string `json:"name"`
	// Absent is true when this group's plans have no item of that name.
	Absent  bool   `json:"absent,omitempty"`
	Hash    string `json:"hash,omitempty"`
	Impact  string `json:"impact,omitempty"`
	Skipped bool   `json:"skipped,omitempty"`
}

// FleetCluster is one cluster's config.
type FleetCluster struct {
	Context     string `json:"context"`
	Phase       string `json:"phase,omitempty"`
	Reason      string `json:"reason,omitempty"`
	Message     string `json:"message,omitempty"`
	ContentHash string `json:"contentHash,omitempty"`
	PlanHash    string `json:"planHash,omitempty"`
	Impact      string `json:"impact,omitempty"`
	// Disruption is the forecast of what the plan does to the nodes (status.disruption).
	Disruption  string `json:"disruption,omitempty"`
	ApprovedBy  string `json:"approvedBy,omitempty"`
	ApprovedVia string `json:"approvedVia,omitempty"`
	// ApprovedContent is spec.approvedContent.hash: the content approved on this cluster.
	ApprovedContent string `json:"approvedContent,omitempty"`
	// Error says why the config could not be read.
	Error string `json:"error,omitempty"`
}

// contentHashOf is the content hash of the plan in status ("" for none).
func contentHashOf(vpc *advisorv1alpha1.VirtPlatformConfig) string {
	if vpc == nil || vpc.Status.PlanHash == "" {
		return ""
	}
	if vpc.Status.ContentHash != "" {
		return vpc.Status.ContentHash
	}
	if vpc.Status.Content != nil {
		return vpc.Status.Content.Hash
	}
	return ""
}

func fleetCluster(mc memberConfig) FleetCluster {
	row := FleetCluster{Context: mc.Context}
	if mc.Err != nil {
		row.Error = mc.Err.Error()
		return row
	}
	vpc := mc.Config
	row.Phase, row.ContentHash, row.PlanHash = string(vpc.Status.Phase), contentHashOf(vpc), vpc.Status.PlanHash
	row.Reason, row.Message = reasonAndMessage(vpc)
	row.Impact, row.Disruption = string(vpc.Status.ImpactSeverity), vpc.Status.Disruption
	if a := vpc.Status.Approval; a != nil {
		row.ApprovedBy, row.ApprovedVia = a.ApprovedBy, a.Via
	}
	if vpc.Spec.ApprovedContent != nil {
		row.ApprovedContent = vpc.Spec.ApprovedContent.Hash
	}
	return row
}

// groupFleet groups the clusters by content hash: the largest group first (ties: the group
// whose first cluster comes first), the clusters of a group in the fleet's order, and the
// clusters without a plan last.
func groupFleet(name string, configs []memberConfig) FleetStatus {
	var groups []FleetGroup
	contents := map[string]*advisorv1alpha1.PlanContent{}
	index := map[string]int{}
	for _, mc := range configs {
		row := fleetCluster(mc)
		i, ok := index[row.ContentHash]
		if !ok {
			i = len(groups)
			index[row.ContentHash] = i
			groups = append(groups, FleetGroup{ContentHash: row.ContentHash})
		}
		groups[i].Clusters = append(groups[i].Clusters, row)
		if mc.Config != nil && row.ContentHash != "" && contents[row.ContentHash] == nil {
			contents[row.ContentHash] = mc.Config.Status.Content
		}
	}
	sort.SliceStable(groups, func(i, j int) bool {
		gi, gj := groups[i], groups[j]
		if (gi.ContentHash == "") != (gj.ContentHash == "") {
			return gj.ContentHash == ""
		}
		return len(gi.Clusters) > len(gj.Clusters)
	})
	differing := differingItems(contents)
	for i := range groups {
		if groups[i].ContentHash == "" {
			continue
		}
		groups[i].Differences = groupItems(contents[groups[i].ContentHash], differing)
	}
	if groups == nil {
		groups = []FleetGroup{}
	}
	return FleetStatus{Name: name, Groups: groups}
}

// differingItems are the names, sorted, of the items whose content is not the same in every
// content: an item some contents lack, or whose hash differs.
func differingItems(contents map[string]*advisorv1alpha1.PlanContent) []string {
	if len(contents) < 2 {
		return nil
	}
	hashes := map[string]map[string]bool{}
	present := map[string]int{}
	for _, c := range contents {
		if c == nil {
			continue
		}
		for _, it := range c.Items {
			if hashes[it.Name] == nil {
				hashes[it.Name] = map[string]bool{}
			}
			hashes[it.Name][it.Hash] = true
			present[it.Name]++
		}
	}
	var out []string
	for name, hs := range hashes {
		if len(hs) > 1 || present[name] < len(contents) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// groupItems are the items named names, as content c has them.
func groupItems(c *advisorv1alpha1.PlanContent, names []string) []FleetItem {
	if len(names) == 0 {
		return nil
	}
	out := make([]FleetItem, 0, len(names))
	for _, name := range names {
		item := FleetItem{Name: name, Absent: true}
		if c != nil {
			if i := slices.IndexFunc(c.Items, func(it advisorv1alpha1.ContentItem) bool { return it.Name == name }); i >= 0 {
				it := c.Items[i]
				item = FleetItem{Name: name, Hash: it.Hash, Impact: string(it.Impact), Skipped: it.Skipped}
			}
		}
		out = append(out, item)
	}
	return out
}

// describeItem says how a group has an item that differs between groups.
func describeItem(it FleetItem) string {
	switch {
	case it.Absent:
		return it.Name + " (absent)"
	case it.Skipped:
		return fmt.Sprintf("%s (%s, skipped)", it.Name, shortHash(it.Hash))
	}
	return fmt.Sprintf("%s (%s, impact %s)", it.Name, shortHash(it.Hash), orDash(it.Impact))
}

// groupHeader is the line above a group's clusters.
func groupHeader(g FleetGroup) string {
	contexts := make([]string, 0, len(g.Clusters))
	for _, c := range g.Clusters {
		contexts = append(contexts, c.Context)
	}
	count := fmt.Sprintf("%d cluster", len(g.Clusters))
	if len(g.Clusters) != 1 {
		count += "s"
	}
	if g.ContentHash == "" {
		return fmt.Sprintf("NO PLAN: %s (%s)", count, strings.Join(contexts, ", "))
	}
	line := fmt.Sprintf("CONTENT %s: %s (%s)", shortHash(g.ContentHash), count, strings.Join(contexts, ", "))
	if len(g.Differences) > 0 {
		items := make([]string, 0, len(g.Differences))
		for _, it := range g.Differences {
			items = append(items, describeItem(it))
		}
		line += "; differs from the other contents in: " + strings.Join(items, ", ")
	}
	return line
}

// writeFleetStatus prints the fleet as one table, a header line above each group, or as
// JSON or YAML.
func writeFleetStatus(w io.Writer, fs FleetStatus, output string) error {
	if written, err := writeStructured(w, fs, output); written || err != nil {
		return err
	}
	header := []string{"CONTEXT", "PHASE", "CONTENT", "PLAN", "IMPACT", "DISRUPTION", "APPROVED-BY", "REASON"}
	var lines [][]string
	for _, g := range fs.Groups {
		lines = append(lines, []string{groupHeader(g)})
		for _, c := range g.Clusters {
			if c.Error != "" {
				lines = append(lines, []string{"  " + c.Context, "-", "-", "-", "-", "-", "-", "error: " + sanitize(c.Error)})
				continue
			}
			approved := sanitize(c.ApprovedBy)
			if c.ApprovedVia != "" {
				approved = orDash(approved) + " (" + sanitize(c.ApprovedVia) + ")"
			}
			lines = append(lines, []string{"  " + c.Context, orDash(c.Phase), orDash(shortHash(c.ContentHash)),
				orDash(shortHash(c.PlanHash)), orDash(c.Impact), orDash(sanitize(c.Disruption)), orDash(approved), orDash(c.Reason)})
		}
	}
	return writeColumns(w, header, lines)
}

// writeColumns prints header and lines in aligned columns; a line of one cell (a group's
// header) is printed whole and does not widen the columns.
func writeColumns(w io.Writer, header []string, lines [][]string) error {
	widths := make([]int, len(header))
	for _, row := range append([][]string{header}, lines...) {
		if len(row) == 1 {
			continue
		}
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	for _, row := range append([][]string{header}, lines...) {
		for i, cell := range row {
			if i == len(row)-1 {
				b.WriteString(cell)
				break
			}
			b.WriteString(cell + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+3))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func newFleetStatusCommand(o *Options) *cobra.Command {
	var output string
	var flags fleetFlags
	cmd := &cobra.Command{
		Use:   "status PROFILE",
		Short: "Show a profile's plan on every cluster of the fleet, grouped by the content it would write",
		Long: `Show one profile's config on every cluster of the fleet (the contexts of the kubeconfig,
or --contexts): its phase, content hash, plan hash, impact, node disruption forecast and who
approved it. Clusters are grouped by status.contentHash: the clusters of one group would
write the same content, so one approval of that content (fleet approve) covers them all.
Each group's header names the items whose content differs between the groups.`,
		Example: `  kubectl virt-advisor fleet status load-aware-rebalancing
  kubectl virt-advisor fleet status load-aware-rebalancing --contexts prod-east,prod-west -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			members, err := o.fleetMembers(flags.contexts)
			if err != nil {
				return err
			}
			fs := groupFleet(args[0], readFleet(cmd.Context(), members, args[0]))
			return writeFleetStatus(o.Streams.Out, fs, output)
		},
	}
	flags.add(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml (the groups and their clusters) instead of a table.")
	return cmd
}
