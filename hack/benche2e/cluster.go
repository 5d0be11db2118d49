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
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
)

// clusterSetup is what a case's control plane holds before the manager starts.
type clusterSetup struct {
	// upstreamCRDs are the CRDs, besides the project's and the test CRDs, of the operators
	// the targets belong to, as "<group>/<plural>.yaml" of the upstream CRD directory.
	upstreamCRDs []string
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
	stopSim context.CancelFunc
	simDone chan error

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
	if c.cp, err = startControlPlane(opts, setup.upstreamCRDs, dir); err != nil {
		return c, err
	}
	if c.adminKubeconfig, err = c.cp.kubeconfig("virt-advisor-bench-admin", dir); err != nil {
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
		if err := c.startSimulator(ctx, setup.renderDelay, setup.simulatedWorkers); err != nil {
			return c, err
		}
	}
	return c, nil
}

// startSimulator runs the pool simulator with renderDelay, creating workers Nodes if the
// cluster has no worker, and waits until every pool is Updated on the rendered
// configuration of its MachineConfigs with all its Nodes.
func (c *cluster) startSimulator(ctx context.Context, renderDelay time.Duration, workers int) error {
	out, err := os.Create(filepath.Join(c.dir, "poolsim.log"))
	if err != nil {
		return err
	}
	c.sim, err = poolsim.New(c.cp.cfg, poolsim.Options{
		RenderDelay: renderDelay, RebootTime: c.opts.rebootTime, Out: out,
	})
	if err != nil {
		_ = out.Close()
		return err
	}
	existing, err := c.cp.dyn.Resource(nodeGVR).List(ctx, metav1.ListOptions{LabelSelector: workerRoleLabel})
	if err != nil {
		_ = out.Close()
		return err
	}
	if len(existing.Items) == 0 && workers > 0 {
		if _, err := c.sim.CreateNodes(ctx, "worker", workers); err != nil {
			_ = out.Close()
			return err
		}
	}
	simCtx, stop := context.WithCancel(ctx)
	c.stopSim, c.simDone = stop, make(chan error, 1)
	go func() {
		err := c.sim.Start(simCtx)
		_ = out.Close()
		c.simDone <- err
	}()
	pools, err := c.cp.dyn.Resource(mcpGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, pool := range pools.Items {
		if err := c.waitPoolUpdated(ctx, pool.GetName(), time.Minute); err != nil {
			return err
		}
	}
	return nil
}

const workerRoleLabel = "node-role.kubernetes.io/worker"

// waitPoolUpdated waits until the pool reports every one of its Nodes updated to the
// configuration its spec names.
func (c *cluster) waitPoolUpdated(ctx context.Context, pool string, timeout time.Duration) error {
	selector := metav1.ListOptions{LabelSelector: "node-role.kubernetes.io/" + pool}
	nodes, err := c.cp.dyn.Resource(nodeGVR).List(ctx, selector)
	if err != nil {
		return err
	}
	want := int64(len(nodes.Items))
	err = c.cp.waitFor(ctx, mcpGVR, pool, timeout, func(u *unstructured.Unstructured) bool {
		spec, _, _ := unstructured.NestedString(u.Object, "spec", "configuration", "name")
		status, _, _ := unstructured.NestedString(u.Object, "status", "configuration", "name")
		machines, _, _ := unstructured.NestedInt64(u.Object, "status", "machineCount")
		updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedMachineCount")
		return spec != "" && status == spec && machines == want && updated == want && conditionTrue(u, "Updated")
	})
	if err != nil {
		return fmt.Errorf("MachineConfigPool %s did not report its %d node(s) Updated: %w", pool, want, err)
	}
	return nil
}

func conditionTrue(u *unstructured.Unstructured, kind string) bool {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == kind {
			return m["status"] == "True"
		}
	}
	return false
}

// waitFor waits until the object name of the resource satisfies cond, from a watch.
func (cp *controlPlane) waitFor(ctx context.Context, gvr schema.GroupVersionResource, name string,
	timeout time.Duration, cond func(*unstructured.Unstructured) bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ri := cp.dyn.Resource(gvr)
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return ri.Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, nil, func(ev watch.Event) (bool, error) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		return ok && ev.Type != watch.Deleted && cond(u), nil
	})
	return err
}

// startManager starts the manager with the benchmark's flags and extra ones, and waits
// for its /readyz, then for the settle time.
func (c *cluster) startManager(ctx context.Context, extraArgs ...string) error {
	m, err := startManager(ctx, c.opts, c.cp, c.dir, extraArgs...)
	if err != nil {
		return err
	}
	c.m = m
	logf("%s: manager ready %.2fs after launch", c.name, m.ready.Sub(m.launched).Seconds())
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(c.opts.settle):
	}
	if m.exited() {
		return fmt.Errorf("the manager exited (%v):\n%s", m.exitErr, m.logTail())
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
	if count(reqs, c.m.launched, time.Now()).requests == 0 {
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
		c.stopSim()
		if err := <-c.simDone; err != nil {
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
