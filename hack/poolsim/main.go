// Command poolsim plays the Machine Config Operator on the cluster of the current
// kubeconfig, for the demo and for trying the operator on a control plane without
// machines: it creates the worker and master Nodes asked for, then generates a
// MachineConfig per pool from each KubeletConfig, renders the MachineConfigPools'
// MachineConfigs, rolls the nodes out to them maxUnavailable at a time, "reboots" them and
// reports the pools' status, printing a line per render, node update, reboot and pool
// status change, until interrupted. See package test/poolsim for what it follows of the
// operator and what it simplifies.
//
//	go run ./hack/poolsim --workers 3 --masters 3 --render-delay 5s --reboot-time 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

func main() {
	workers := flag.Int("workers", 3, "Worker Nodes to create (worker-0 ...), labelled node-role.kubernetes.io/worker.")
	masters := flag.Int("masters", 0, "Master Nodes to create (master-0 ...), labelled node-role.kubernetes.io/master.")
	renderDelay := flag.Duration("render-delay", poolsim.DefaultRenderDelay,
		"How long a pool's MachineConfigs must rest before they are rendered.")
	rebootTime := flag.Duration("reboot-time", 5*time.Second, "How long a node takes to reboot.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *workers, *masters, poolsim.Options{
		RenderDelay: *renderDelay, RebootTime: *rebootTime, Out: os.Stdout,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "poolsim:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, workers, masters int, opts poolsim.Options) error {
	cfg, err := ctrlconfig.GetConfig()
	if err != nil {
		return fmt.Errorf("read the kubeconfig: %w", err)
	}
	sim, err := poolsim.New(cfg, opts)
	if err != nil {
		return err
	}
	for _, nodes := range []struct {
		pool  string
		count int
	}{{"worker", workers}, {"master", masters}} {
		if nodes.count == 0 {
			continue
		}
		names, err := sim.CreateNodes(ctx, nodes.pool, nodes.count)
		if err != nil {
			return err
		}
		fmt.Printf("nodes of MachineConfigPool %s: %v\n", nodes.pool, names)
	}
	return sim.Start(ctx)
}
