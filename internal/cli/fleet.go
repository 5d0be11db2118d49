package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// member is one cluster of a fleet: a kubeconfig context and the client that talks to it.
type member struct {
	Context string
	Client  client.Client
}

// fleetFlags are what every fleet command shares: the kubeconfig contexts it acts on.
type fleetFlags struct {
	contexts []string
}

func (f *fleetFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&f.contexts, "contexts", nil,
		"The kubeconfig contexts of the fleet, comma-separated, in rollout order (default: every context of the kubeconfig, by name).")
}

// fleetContexts are the contexts to act on: the ones asked for, in that order, each once,
// every one of them in the kubeconfig; else every context of the kubeconfig, by name.
func fleetContexts(asked, known []string) ([]string, error) {
	if len(asked) == 0 {
		if len(known) == 0 {
			return nil, fmt.Errorf("the kubeconfig has no contexts: name the clusters with --contexts")
		}
		sorted := slices.Clone(known)
		slices.Sort(sorted)
		return sorted, nil
	}
	var out []string
	for _, name := range asked {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			continue
		case !slices.Contains(known, name):
			return nil, fmt.Errorf("context %q is not in the kubeconfig (it has: %s)", name, strings.Join(known, ", "))
		case slices.Contains(out, name):
			return nil, fmt.Errorf("context %q is named twice", name)
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--contexts names no context")
	}
	return out, nil
}

// fleetMembers builds a client for each context of the fleet from the kubeconfig the
// plugin's flags select (--kubeconfig, KUBECONFIG, ~/.kube/config).
func (o *Options) fleetMembers(asked []string) ([]member, error) {
	raw, err := o.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("read the kubeconfig: %w", err)
	}
	known := make([]string, 0, len(raw.Contexts))
	for name := range raw.Contexts {
		known = append(known, name)
	}
	slices.Sort(known)
	names, err := fleetContexts(asked, known)
	if err != nil {
		return nil, err
	}
	members := make([]member, 0, len(names))
	for _, name := range names {
		var c client.Client
		if o.NewContextClient != nil {
			c, err = o.NewContextClient(name)
		} else {
			c, err = contextClient(raw, name)
		}
		if err != nil {
			return nil, fmt.Errorf("context %s: %w", name, err)
		}
		members = append(members, member{Context: name, Client: c})
	}
	return members, nil
}

func contextClient(raw clientcmdapi.Config, name string) (client.Client, error) {
	cfg, err := clientcmd.NewNonInteractiveClientConfig(raw, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: Scheme()})
}

// memberConfig is one cluster's config as read, or why it could not be read.
type memberConfig struct {
	Context string
	Config  *advisorv1alpha1.VirtPlatformConfig
	Err     error
}

// readFleet reads the config name on every member, in the members' order.
func readFleet(ctx context.Context, members []member, name string) []memberConfig {
	out := make([]memberConfig, len(members))
	for i, m := range members {
		vpc, err := getConfig(ctx, m.Client, name)
		out[i] = memberConfig{Context: m.Context, Config: vpc, Err: err}
	}
	return out
}

func newFleetCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Show and roll out one plan content over the clusters of several kubeconfig contexts",
		Long: `Show one profile's plan on every cluster of a small fleet (the contexts of your kubeconfig),
grouped by the content the plans would write (status.contentHash), and approve one content
on a canary first, then on the rest, a batch at a time, stopping at the first cluster that
does not end healthy. Without a fleet engine (OCM/RHACM, Argo CD), this is how one review
approves the same change on many clusters.`,
		Example: `  kubectl virt-advisor fleet status load-aware-rebalancing
  kubectl virt-advisor fleet status load-aware-rebalancing --contexts prod-east,prod-west,staging
  kubectl virt-advisor fleet approve load-aware-rebalancing --content 3f1c... --canary staging --soak 2m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newFleetStatusCommand(o), newFleetApproveCommand(o))
	return cmd
}
