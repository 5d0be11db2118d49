package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// Plane is one cluster of a fleet on this machine: a kube-apiserver and etcd with the CRDs
// the guide's control plane has, the RBAC of dist/install.yaml, the operator's manager binary
// running as its ServiceAccount, and the pool simulator with its workers.
type Plane struct {
	// Name names the cluster, and its context in a fleet's kubeconfig.
	Name string
	// Env is the control plane.
	Env *envtest.Environment
	// Manager is the operator.
	Manager *Manager
	// Work holds the plane's files: its kubeconfig, the manager's log, the simulator's.
	Work string
	// PoolSimLog is the pool simulator's log.
	PoolSimLog string

	stopSim func() error
}

// PlaneOptions are the pool simulator's workers and reboot time.
type PlaneOptions struct {
	Workers    int
	RebootTime time.Duration
}

// StartPlane starts the cluster name with its files in work. What it started is in the
// returned Plane even when a later step failed, so that Stop ends it.
func StartPlane(name, work, managerBin string, o PlaneOptions) (*Plane, error) {
	p := &Plane{Name: name, Work: work, PoolSimLog: filepath.Join(work, "poolsim.log")}
	env, err := testenv.New(append(testenv.ClusterCRDs(), testenv.KubeVirtCRDs)...)
	if err != nil {
		return p, err
	}
	upstream, err := UpstreamCRDs()
	if err != nil {
		return p, err
	}
	env.CRDs = append(env.CRDs, upstream...)
	if _, err := env.Start(); err != nil {
		return p, fmt.Errorf("start the control plane of %s: %w", name, err)
	}
	p.Env = env
	sim, stop, err := poolsim.RunLogged(context.Background(), env.Config, poolsim.Options{
		RenderDelay: poolsim.DefaultRenderDelay, RebootTime: o.RebootTime,
	}, p.PoolSimLog)
	if err != nil {
		return p, err
	}
	p.stopSim = stop
	if _, err := sim.CreateNodes(context.Background(), "worker", o.Workers); err != nil {
		return p, err
	}
	rbac, err := InstallRBAC()
	if err != nil {
		return p, err
	}
	path := filepath.Join(work, "install-rbac.yaml")
	if err := os.WriteFile(path, rbac, 0o600); err != nil {
		return p, err
	}
	kubeconfig := filepath.Join(work, "admin-kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return p, err
	}
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-f", path).CombinedOutput(); err != nil {
		return p, fmt.Errorf("apply the RBAC of dist/install.yaml on %s: %w\n%s", name, err, out)
	}
	p.Manager, err = StartManager(context.Background(), env.Config, managerBin, work)
	return p, err
}

// Stop ends the manager, the pool simulator and the control plane, in that order.
func (p *Plane) Stop() error {
	var errs []error
	if p.Manager != nil {
		if err := p.Manager.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w\n%s", p.Name, err, p.Manager.LogTail(30)))
		}
	}
	if p.stopSim != nil {
		if err := p.stopSim(); err != nil {
			errs = append(errs, fmt.Errorf("%s: the pool simulator: %w", p.Name, err))
		}
	}
	if p.Env != nil {
		if err := p.Env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("%s: stop the control plane: %w", p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// AddContexts adds one context per plane, named after it, to the kubeconfig at path (a new
// one when it does not exist), keeping its current context, or making the first plane's
// the current one when it has none.
func AddContexts(path string, planes ...*Plane) error {
	merged := clientcmdapi.NewConfig()
	if _, err := os.Stat(path); err == nil {
		if merged, err = clientcmd.LoadFromFile(path); err != nil {
			return err
		}
	}
	for _, p := range planes {
		cfg, err := clientcmd.Load(p.Env.KubeConfig)
		if err != nil {
			return err
		}
		current := cfg.Contexts[cfg.CurrentContext]
		merged.Clusters[p.Name] = cfg.Clusters[current.Cluster]
		merged.AuthInfos[p.Name] = cfg.AuthInfos[current.AuthInfo]
		merged.Contexts[p.Name] = &clientcmdapi.Context{Cluster: p.Name, AuthInfo: p.Name}
	}
	if merged.CurrentContext == "" && len(planes) > 0 {
		merged.CurrentContext = planes[0].Name
	}
	return clientcmd.WriteToFile(*merged, path)
}
