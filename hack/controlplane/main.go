// Command controlplane runs a local control plane for the demo and the end-to-end test:
// the envtest kube-apiserver and etcd (built by hack/build-envtest-binaries.sh) with
// this project's CRD and the test CRDs installed. It writes an admin kubeconfig, prints
// "ready", and runs until interrupted.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

func main() {
	kubeconfig := flag.String("write-kubeconfig", "", "Where to write the admin kubeconfig (required).")
	crds := flag.String("crds", strings.Join(testenv.ClusterCRDs(), ","),
		"Comma-separated directories of CRDs to install.")
	flag.Parse()
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "controlplane: --write-kubeconfig is required")
		os.Exit(2)
	}
	if err := run(*kubeconfig, strings.Split(*crds, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, crdDirs []string) error {
	env, err := testenv.New(crdDirs...)
	if err != nil {
		return err
	}
	if _, err := env.Start(); err != nil {
		return fmt.Errorf("start the control plane: %w", err)
	}
	defer func() { _ = env.Stop() }()
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", kubeconfig, err)
	}
	fmt.Println("ready")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return nil
}
