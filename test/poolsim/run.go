package poolsim

import (
	"context"
	"errors"
	"os"
	"sync"

	"k8s.io/client-go/rest"
)

// Run starts a simulator for the cluster of cfg in the background, as New and Start do.
// It runs until ctx ends or stop is called; stop waits until it has stopped and returns
// what Start returned (calling it again returns the same).
func Run(ctx context.Context, cfg *rest.Config, opts Options) (sim *Simulator, stop func() error, err error) {
	sim, err = New(cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sim.Start(runCtx) }()
	return sim, sync.OnceValue(func() error {
		cancel()
		return <-done
	}), nil
}

// RunLogged is Run with the simulator's log (Options.Out) appended to the file logPath,
// created if need be; stop also closes the file.
func RunLogged(ctx context.Context, cfg *rest.Config, opts Options, logPath string) (sim *Simulator, stop func() error, err error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	opts.Out = log
	sim, stopSim, err := Run(ctx, cfg, opts)
	if err != nil {
		_ = log.Close()
		return nil, nil, err
	}
	return sim, sync.OnceValue(func() error {
		return errors.Join(stopSim(), log.Close())
	}), nil
}
