// Command kubectl-virt_advisor is the kubectl plugin `kubectl virt-advisor`: it shows the
// plans of the virt-advisor-operator, approves exactly the plan reviewed and follows its
// rollout.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/kubevirt/virt-advisor-operator/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	opts := &cli.Options{Streams: genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}}
	err := cli.NewRootCommand(opts).ExecuteContext(ctx)
	stop()
	if msg := cli.Message(err); msg != "" {
		_, _ = fmt.Fprintln(os.Stderr, "error: "+msg)
	}
	os.Exit(cli.ExitCode(err))
}
