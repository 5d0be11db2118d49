// Package cli implements `kubectl virt-advisor`, the kubectl plugin that shows, approves and
// follows the plans of VirtPlatformConfigs, and asks for their revert plans.
package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/version"
)

const (
	// PluginName is the name kubectl knows the plugin by: `kubectl virt-advisor`.
	PluginName = "virt-advisor"
	// BinaryName is the executable kubectl finds on PATH for PluginName.
	BinaryName = "kubectl-virt_advisor"
)

// The exit codes of the plugin. `plan` exits ExitChanges when the plan changes something
// (like `terraform plan -detailed-exitcode`).
const (
	ExitOK      = 0
	ExitError   = 1
	ExitChanges = 2
)

// ExitCodeError ends the command with Code; Err, when set, is printed.
type ExitCodeError struct {
	Code int
	Err  error
}

func (e *ExitCodeError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitCodeError) Unwrap() error { return e.Err }

// ExitCode is the process exit code for the error a command returned.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ec *ExitCodeError
	if errors.As(err, &ec) {
		return ec.Code
	}
	return ExitError
}

// Message is what to print for the error a command returned ("" for none).
func Message(err error) string {
	if err == nil {
		return ""
	}
	var ec *ExitCodeError
	if errors.As(err, &ec) && ec.Err == nil {
		return ""
	}
	return err.Error()
}

// Options are the settings every command shares.
type Options struct {
	Streams     genericiooptions.IOStreams
	ConfigFlags *genericclioptions.ConfigFlags
	// NewClient returns the client the commands use (a real one from ConfigFlags unless set).
	NewClient func() (client.Client, error)
	// NewContextClient returns the client of one kubeconfig context for the fleet commands
	// (a real one from the kubeconfig unless set).
	NewContextClient func(context string) (client.Client, error)
	// Now is the clock (time.Now unless set).
	Now func() time.Time
	// PollInterval is how often `wait` reads the config.
	PollInterval time.Duration
	// IsTerminal tells whether stdout is a terminal (for --color auto).
	IsTerminal func() bool
	// Getenv reads the environment (os.Getenv unless set).
	Getenv func(string) string
}

// Scheme holds the VirtPlatformConfig types.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := advisorv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

func (o *Options) client() (client.Client, error) {
	if o.NewClient != nil {
		return o.NewClient()
	}
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: Scheme()})
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// NewRootCommand returns `kubectl virt-advisor` with its subcommands.
func NewRootCommand(o *Options) *cobra.Command {
	// The client libraries log through controller-runtime; the plugin speaks through its
	// output and errors only.
	ctrllog.SetLogger(logr.Discard())
	if o.ConfigFlags == nil {
		o.ConfigFlags = genericclioptions.NewConfigFlags(true)
	}
	if o.PollInterval == 0 {
		o.PollInterval = time.Second
	}
	root := &cobra.Command{
		Use:   PluginName,
		Short: "Review, approve and follow the plans of the virt-advisor-operator",
		Long: `kubectl virt-advisor shows the plans the virt-advisor-operator drafts for each
VirtPlatformConfig (one per tuning profile), approves exactly the plan you reviewed, and
follows its rollout.

A typical session:

  kubectl virt-advisor status
  kubectl virt-advisor dry-run load-aware-rebalancing
  kubectl virt-advisor wait load-aware-rebalancing --for=ReviewRequired
  kubectl virt-advisor plan load-aware-rebalancing
  kubectl virt-advisor approve load-aware-rebalancing --hash <the plan hash shown>
  kubectl virt-advisor wait load-aware-rebalancing --for=Completed
  kubectl virt-advisor history load-aware-rebalancing

To undo what a profile's executions changed, review and approve its revert plan:

  kubectl virt-advisor revert load-aware-rebalancing
  kubectl virt-advisor approve load-aware-rebalancing --hash <the revert plan hash shown>
  kubectl virt-advisor wait load-aware-rebalancing --for=Completed`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl " + PluginName},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(o.Streams.In)
	root.SetOut(o.Streams.Out)
	root.SetErr(o.Streams.ErrOut)
	o.ConfigFlags.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newStatusCommand(o),
		newPlanCommand(o),
		newHistoryCommand(o),
		newApproveCommand(o),
		newActionCommand(o, "dry-run", advisorv1alpha1.ActionDryRun,
			"Draft the plan of a profile and show it in status; nothing outside the VirtPlatformConfig is written"),
		newActionCommand(o, "ignore", advisorv1alpha1.ActionIgnore,
			"Pause a profile: no plan, no writes to its targets, no drift handling"),
		newWaitCommand(o),
		newRevertCommand(o),
		newFleetCommand(o),
		&cobra.Command{
			Use:   "version",
			Short: "Print the plugin's version",
			Args:  cobra.NoArgs,
			Run: func(cmd *cobra.Command, _ []string) {
				_, _ = fmt.Fprintln(o.Streams.Out, version.Version)
			},
		},
	)
	return root
}
