package fleet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/cluster"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// The pool simulator of each control plane: two workers and a 1-second reboot.
const (
	fleetWorkers    = 2
	fleetRebootTime = time.Second
)

// controlPlane is one cluster of the fleet: a kube-apiserver and etcd, the operator's
// manager binary and the pool simulator.
type controlPlane struct {
	name       string
	env        *envtest.Environment
	manager    *cluster.Manager
	work       string
	poolSimLog string
	stopSim    func() error
}

// startControlPlane starts one cluster as the guide's test does: this project's CRD, the
// base and 4.20 descheduler CRDs, the upstream ones, the RBAC of dist/install.yaml and the
// manager running as its ServiceAccount. Whatever it started is recorded in cp, so that
// stop ends it even when a later step failed.
func startControlPlane(cp *controlPlane, managerBin string) error {
	env, err := testenv.New(append(testenv.ClusterCRDs(), testenv.KubeVirtCRDs)...)
	if err != nil {
		return err
	}
	upstream, err := cluster.UpstreamCRDs()
	if err != nil {
		return err
	}
	env.CRDs = append(env.CRDs, upstream...)
	env.ControlPlaneStartTimeout = time.Minute
	if _, err := env.Start(); err != nil {
		return fmt.Errorf("start control plane %s: %w", cp.name, err)
	}
	cp.env = env
	cp.poolSimLog = filepath.Join(cp.work, "poolsim.log")
	sim, stop, err := poolsim.RunLogged(context.Background(), env.Config, poolsim.Options{
		RenderDelay: poolsim.DefaultRenderDelay, RebootTime: fleetRebootTime,
	}, cp.poolSimLog)
	if err != nil {
		return err
	}
	cp.stopSim = stop
	if _, err := sim.CreateNodes(context.Background(), "worker", fleetWorkers); err != nil {
		return err
	}
	rbac, err := cluster.InstallRBAC()
	if err != nil {
		return err
	}
	path := filepath.Join(cp.work, "install-rbac.yaml")
	if err := os.WriteFile(path, rbac, 0o600); err != nil {
		return err
	}
	kubeconfig := filepath.Join(cp.work, "admin-kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return err
	}
	if out, err := exec.Command(kubectlBin(), "--kubeconfig", kubeconfig, "apply", "--server-side", "-f", path).CombinedOutput(); err != nil {
		return fmt.Errorf("apply the RBAC of dist/install.yaml on %s: %w\n%s", cp.name, err, out)
	}
	cp.manager, err = cluster.StartManager(context.Background(), env.Config, managerBin, cp.work)
	return err
}

// stop ends the manager, the pool simulator and the control plane, in that order.
func (cp *controlPlane) stop(t *testing.T) {
	if cp.manager != nil {
		if err := cp.manager.Stop(); err != nil {
			t.Errorf("%s: %v\n%s", cp.name, err, cp.manager.LogTail(30))
		}
	}
	if cp.stopSim != nil {
		if err := cp.stopSim(); err != nil {
			t.Errorf("%s: the pool simulator: %v", cp.name, err)
		}
	}
	if cp.env != nil {
		if err := cp.env.Stop(); err != nil {
			t.Errorf("%s: stop the control plane: %v", cp.name, err)
		}
	}
}

// startFleet starts one control plane per name, side by side, and writes a kubeconfig with
// one context per control plane, named after it.
func startFleet(t *testing.T, managerBin string, names ...string) (map[string]*controlPlane, string) {
	t.Helper()
	// The simulators' informers log through controller-runtime; what they do is in their logs.
	ctrllog.SetLogger(logr.Discard())
	planes := map[string]*controlPlane{}
	// The work directories are made first: they are removed after everything stopped.
	for _, name := range names {
		planes[name] = &controlPlane{name: name, work: t.TempDir()}
	}
	t.Cleanup(func() {
		for _, name := range names {
			planes[name].stop(t)
		}
	})
	// One after the other: three API servers starting at once on two loaded cores miss
	// their start timeout.
	for _, name := range names {
		if err := startControlPlane(planes[name], managerBin); err != nil {
			t.Fatalf("%v", err)
		}
	}
	merged := clientcmdapi.NewConfig()
	for _, name := range names {
		cfg, err := clientcmd.Load(planes[name].env.KubeConfig)
		if err != nil {
			t.Fatalf("%v", err)
		}
		current := cfg.Contexts[cfg.CurrentContext]
		merged.Clusters[name] = cfg.Clusters[current.Cluster]
		merged.AuthInfos[name] = cfg.AuthInfos[current.AuthInfo]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	merged.CurrentContext = names[0]
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*merged, path); err != nil {
		t.Fatalf("%v", err)
	}
	return planes, path
}

func kubectlBin() string { return filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl") }

// commander runs the real kubectl, with the plugin on PATH, against the fleet's kubeconfig.
type commander struct {
	t          *testing.T
	kubeconfig string
	pluginDir  string
	home       string
}

// run runs kubectl with args and returns its stdout, its stderr and how it ended.
func (c *commander) run(args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin(), args...)
	env := make([]string, 0, len(os.Environ())+3)
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		if key != "KUBECONFIG" && key != "PATH" && key != "HOME" && key != "KUBECTL" {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "KUBECONFIG="+c.kubeconfig, "HOME="+c.home,
		"PATH="+c.pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// must runs kubectl and fails the test when it fails.
func (c *commander) must(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// on runs kubectl on one context of the fleet and fails the test when it fails.
func (c *commander) on(ctx string, args ...string) string {
	c.t.Helper()
	return c.must(append([]string{"--context", ctx}, args...)...)
}
