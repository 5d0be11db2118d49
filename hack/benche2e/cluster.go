package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// clusterSetup is what a case's control plane holds before the manager starts.
type clusterSetup struct {
	// upstreamCRDs installs, besides the project's and the test CRDs, the upstream CRDs of
	// the operators the targets of every profile belong to (testcluster.UpstreamCRDFiles).
	upstreamCRDs bool
	// kubeVirt installs KubeVirt's CRDs (testenv.KubeVirtCRDs).
	kubeVirt bool
	// manifests are applied in order, relative to the repository root.
	manifests []string
	// nodes are created with their Node Feature Discovery labels and annotations.
	nodes []nodeSet
	// simulate runs the pool simulator, with renderDelay: it creates simulatedWorkers worker
	// Nodes when the cluster has no worker yet, renders every pool and waits until each is
	// Updated.
	simulate         bool
	renderDelay      time.Duration
	simulatedWorkers int
	// vms makes the simulator play KubeVirt's VMs, each live migration taking
	// migrationTime (poolsim.Options.VMs); it needs kubeVirt.
	vms           bool
	migrationTime time.Duration
	// bulk are unrelated objects created before the manager starts (nil: none).
	bulk *bulkObjects
}

// nodeSet is count Nodes of a kind.
type nodeSet struct {
	kind  nodeKind
	count int
}

// cluster is one fresh control plane of a case, with the pool simulator and the manager.
type cluster struct {
	opts *options
	name string
	dir  string
	cp   *controlPlane
	// adminKubeconfig is a kubeconfig of the benchmark's own user, for the commands it runs.
	adminKubeconfig string

	sim     *poolsim.Simulator
	stopSim func() error

	m *managerProc
}

// newCluster starts a control plane for the case name in a directory of its own and sets
// it up; the manager is not started yet.
func newCluster(ctx context.Context, opts *options, name string, setup clusterSetup) (c *cluster, err error) {
	dir, err := os.MkdirTemp("", "benche2e-"+name+"-")
	if err != nil {
		return nil, err
	}
	c = &cluster{opts: opts, name: name, dir: dir}
	defer func() {
		if err != nil {
			c.close(true)
		}
	}()
	if c.cp, err = startControlPlane(opts, setup.upstreamCRDs, setup.kubeVirt, dir); err != nil {
		return c, err
	}
	if c.adminKubeconfig, err = c.cp.userKubeconfig("virt-advisor-bench-admin", dir); err != nil {
		return c, err
	}
	if err := c.cp.createNamespace(ctx, opts.managerNS); err != nil {
		return c, err
	}
	for _, manifest := range append([]string{commonBaseline}, setup.manifests...) {
		if err := c.cp.applyFile(ctx, filepath.Join(opts.root, filepath.FromSlash(manifest))); err != nil {
			return c, err
		}
	}
	for _, set := range setup.nodes {
		if err := c.cp.createNodes(ctx, set.kind, set.count); err != nil {
			return c, err
		}
	}
	if setup.bulk != nil {
		start := time.Now()
		if err := setup.bulk.create(ctx, c.cp); err != nil {
			return c, err
		}
		logf("%s: created %s in %.1fs", name, setup.bulk, time.Since(start).Seconds())
	}
	if setup.simulate {
		if err := c.startSimulator(ctx, setup); err != nil {
			return c, err
		}
	}
	return c, nil
}

// startSimulator runs the pool simulator with the setup's render delay (and VMs, if set),
// creating its simulatedWorkers worker Nodes if the cluster has no worker, and waits until
// every pool has rolled out the configuration rendered from its MachineConfigs to all its
// Nodes.
func (c *cluster) startSimulator(ctx context.Context, setup clusterSetup) error {
	var err error
	workers := setup.simulatedWorkers
	c.sim, c.stopSim, err = poolsim.RunLogged(ctx, c.cp.cfg, poolsim.Options{
		RenderDelay: setup.renderDelay, RebootTime: c.opts.rebootTime,
		VMs: setup.vms, MigrationTime: setup.migrationTime,
	}, filepath.Join(c.dir, "poolsim.log"))
	if err != nil {
		return err
	}
	existing, err := c.cp.dyn.Resource(nodeGVR).List(ctx, metav1.ListOptions{LabelSelector: workerRoleLabel})
	if err != nil {
		return err
	}
	if len(existing.Items) == 0 && workers > 0 {
		if _, err := c.sim.CreateNodes(ctx, "worker", workers); err != nil {
			return err
		}
	}
	reader, err := client.New(c.cp.cfg, client.Options{})
	if err != nil {
		return err
	}
	pools, err := c.cp.dyn.Resource(mcpGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, pool := range pools.Items {
		var last error
		rolledOut := func(ctx context.Context) (bool, error) {
			last = poolsim.RolledOut(ctx, reader, pool.GetName())
			return last == nil, nil
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, rolledOut); err != nil {
			return fmt.Errorf("MachineConfigPool %s did not roll out: %w", pool.GetName(), errors.Join(err, last))
		}
	}
	return nil
}

const workerRoleLabel = "node-role.kubernetes.io/worker"

// startManager starts the manager with the benchmark's flags and extra ones, and waits
// for its /readyz, then for the settle time.
func (c *cluster) startManager(ctx context.Context, extraArgs ...string) error {
	m, err := startManager(ctx, c.opts, c.cp, c.dir, extraArgs...)
	if err != nil {
		return err
	}
	c.m = m
	logf("%s: manager ready %.2fs after launch", c.name, m.ready.Sub(m.Launched).Seconds())
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(c.opts.settle):
	}
	if m.Exited() {
		return fmt.Errorf("the manager exited (%v):\n%s", m.ExitErr(), m.logTail())
	}
	return nil
}

// managerRequests stops the manager and reads its requests, and the benchmark's, from the
// audit log: once the manager has stopped, every request it sent has its audit event.
func (c *cluster) managerRequests() ([]request, error) {
	c.m.stop()
	reqs, err := readRequests(c.cp.auditLog, c.opts.operatorUser)
	if err != nil {
		return nil, err
	}
	if count(reqs, c.m.Launched, time.Now()).requests == 0 {
		return nil, fmt.Errorf("the audit log %s has no request of user %s", c.cp.auditLog, c.opts.operatorUser)
	}
	return reqs, nil
}

// close stops the manager, the simulator and the control plane; the case's directory is
// kept when keep or -keep is set.
func (c *cluster) close(keep bool) {
	if c.m != nil {
		c.m.stop()
	}
	if c.stopSim != nil {
		if err := c.stopSim(); err != nil {
			logf("%s: the pool simulator stopped: %v", c.name, err)
		}
	}
	if c.cp != nil {
		c.cp.stop()
	}
	if keep || c.opts.keep {
		logf("logs and audit log of %s kept in %s", c.name, c.dir)
		return
	}
	_ = os.RemoveAll(c.dir)
}

// vpcPhase is the phase of the VirtPlatformConfig name.
func (c *cluster) vpcPhase(ctx context.Context, name string) (string, error) {
	u, err := c.cp.dyn.Resource(vpcGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return phase, nil
}

// approvalCommand is the command the status of the VirtPlatformConfig gives to approve
// its plan.
func (c *cluster) approvalCommand(ctx context.Context, name string) (string, error) {
	u, err := c.cp.dyn.Resource(vpcGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	command, _, _ := unstructured.NestedString(u.Object, "status", "approval", "command")
	if command == "" {
		return "", errors.New("VirtPlatformConfig " + name + " gives no approval command")
	}
	return command, nil
}

var nodeGVR = corev1.SchemeGroupVersion.WithResource("nodes")
