// Package poolsim plays the Machine Config Operator on a control plane without machines
// (envtest, the demo's control plane): it renders the MachineConfigs each
// MachineConfigPool selects, turns each KubeletConfig into MachineConfigs, moves the pool's
// Nodes to the new configuration a few at a time, "reboots" them and reports the pool's
// status as the operator does, so that tests, the demo and the benchmark see pools behave
// as on OpenShift.
//
// Which behaviour follows which source of openshift/machine-config-operator:
//
//   - render.go, pkg/controller/render/render_controller.go: syncMachineConfigPool,
//     syncGeneratedMachineConfig and generateRenderedMachineConfig. A pool's MachineConfigs
//     (those its machineConfigSelector selects; an empty selector selects none) are merged
//     into rendered-<pool>-<hash of the merged spec>, so the same content always renders the
//     same name; spec.configuration names it and lists the sources. The render waits
//     Options.RenderDelay after the first change it sees (renderDelay, 5 s, in the
//     operator); a paused pool renders too. No MachineConfig, or an invalid Ignition config,
//     sets RenderDegraded (syncFailingStatus). The merge follows MergeMachineConfigs of
//     pkg/controller/common/helpers.go: sorted by name, Ignition configs merged in order
//     (Ignition's own Merge), kernel arguments and extensions concatenated, FIPS if any asks,
//     a realtime kernel type wins.
//   - kubeletconfig.go, pkg/controller/kubelet-config/kubelet_config_controller.go:
//     syncKubeletConfig, addAnnotation, addFinalizerToKubeletConfig, cascadeDelete and
//     syncStatusOnly, with getManagedKubeletConfigKey and wrapErrorWithCondition of
//     helpers.go. A KubeletConfig is synced when it has a generation not reported yet,
//     oldest first. For each pool its machineConfigPoolSelector selects it gets its own
//     MachineConfig, 99-<pool>-generated-kubelet, or 99-<pool>-generated-kubelet-<suffix>
//     when its mc-name-suffix annotation is not empty, labelled with the pool's name as
//     role, annotated generated-by-controller-version, with the KubeletConfig as its
//     controller owner, and holding /etc/kubernetes/kubelet.conf. A KubeletConfig without
//     the annotation gets one, in place of all its annotations: "" when it is the only
//     KubeletConfig that selects its pool; for one a later KubeletConfig followed, the
//     suffix of the generated MachineConfig its finalizers name; otherwise one more than
//     the highest suffix of the KubeletConfigs that select the pool (at most 9: past it,
//     Failure). The MachineConfigs' names become its finalizers (a finalizer without
//     "kubelet" in its name clears the list first), then it gets a Success condition
//     (status True, message "Success") and its observedGeneration; one that selects no pool
//     gets Failure (status False, "Error: could not find any MachineConfigPool set for
//     KubeletConfig"). A KubeletConfig being deleted has the MachineConfig its first
//     finalizer names deleted and that finalizer removed, one per pass, until it is gone.
//   - nodes.go, pkg/controller/node/node_controller.go: syncMachineConfigPool,
//     getAllCandidateMachines, updateCandidateMachines, sortNodeList and maxUnavailable.
//     A paused pool's nodes are left alone; otherwise at most maxUnavailable nodes (an
//     integer or a percent of the pool's nodes rounded down, at least 1, default 1) are
//     unavailable at a time, where nodes that are not done, and nodes failing on the
//     target, count; candidates go in zone order, then oldest first. The desiredConfig
//     annotation is the only thing it writes to a node.
//   - status.go, pkg/controller/node/status.go: calculateStatus with getUpdatedMachines,
//     getReadyMachines, getUnavailableMachines, getDegradedMachines, isNodeDone and
//     isNodeMCDFailing: the machine counts, status.configuration copied from
//     spec.configuration once every node is updated and ready, Updated/Updating (a paused
//     pool says so), NodeDegraded and Degraded naming each degraded node and its reason
//     annotation ("Node <name> is reporting: \"<reason>\""), observedGeneration.
//   - daemon.go, the Machine Config Daemon (pkg/daemon/update.go:
//     calculatePostConfigChangeAction and calculatePostConfigChangeActionFromMCDiffs; the
//     annotations of pkg/daemon/constants): a node whose desiredConfig differs from its
//     currentConfig goes Working, applies the configuration, and reports currentConfig =
//     desiredConfig, state Done. It reboots (taking Options.RebootTime, counted per node)
//     when the OS image, kernel arguments, FIPS, kernel type, extensions or systemd units
//     change, or a file other than those the daemon applies without a reboot (the pull
//     secret, the kubelet CA, registries and policy files, the user CA bundle, nmstate's
//     first-boot files).
//   - With Options.VMs, KubeVirt's VMs on the nodes (docs/vm-forecast.md has the details):
//     drain.go and vms.go. The node controller's taint (updatePools and
//     setUpdateInProgressTaint of pkg/controller/node/node_controller.go,
//     NodeUpdateInProgressTaint of pkg/constants): UpdateInProgress:PreferNoSchedule on every
//     node of an unpaused pool whose desiredConfig is not the pool's, none on the others. The
//     drain (pkg/controller/drain/drain_controller.go): a node whose update reboots it is
//     cordoned and its reboot waits until no VirtualMachineInstance is left on it; it is
//     uncordoned when it runs the new configuration. The eviction of each VM as KubeVirt
//     answers it (admitLauncherPod of pkg/virt-api/webhooks/validating-webhook/admitters/
//     pod-eviction-admitter.go, VMIEvictionStrategy of pkg/util/migrations/migrations.go,
//     KubeVirt's default None from pkg/virt-config/configuration.go): its own
//     evictionStrategy, else the KubeVirt CR's spec.configuration.evictionStrategy, else
//     None. LiveMigrate and LiveMigrateIfPossible migrate a LiveMigratable VM; LiveMigrate
//     refuses the others and External every VM (the drain is blocked, the node stays
//     cordoned, the pool stalls, until the VM is gone); None, and LiveMigrateIfPossible for a
//     VM that cannot migrate, shut it down. The
//     migration (pkg/virt-controller/watch/drain/evacuation/evacuation.go and
//     pkg/virt-controller/watch/migration/migration.go): one VirtualMachineInstanceMigration
//     per move, at most parallelMigrationsPerCluster (5) in the cluster and
//     parallelOutboundMigrationsPerNode (2) per source node, never to the source node,
//     taking Options.MigrationTime. A model of kube-scheduler picks the target (and the node
//     of a restarted VM): filter out cordoned and not Ready nodes, untolerated NoSchedule
//     and NoExecute taints, nodes the node selector or required node affinity exclude, and
//     nodes without room in their allocatable memory; score 3 x TaintToleration (the
//     untolerated PreferNoSchedule taints, reverse-normalized to 0-100) + 1 x LeastAllocated
//     on memory, the default weights of pkg/scheduler/apis/config/v1/default_plugins.go and
//     pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go of
//     kubernetes/kubernetes; ties go by name. The VirtualMachine controller (syncRunStrategy
//     of pkg/virt-controller/watch/vm/vm.go): Always starts a VM whose instance is gone again,
//     Halted stops one that runs; the other run strategies leave a shut-down VM stopped.
//
// What it simplifies:
//   - The operator's ControllerConfig, templates and OS image are absent: a rendered
//     configuration holds only what the pool's MachineConfigs hold, its hash is not the
//     operator's (md5 with a salt), a MachineConfig without an Ignition config (or with an
//     empty one) is merged as if it had none, and Ignition spec 2 configs (which the
//     operator translates) do not render: only 3.0 to 3.5.
//   - Rendering compares the merged content and writes only on a change, where the operator
//     re-renders on every event; the RenderDelay counts from the first change seen.
//   - KubeletConfigs: the kubelet.conf of a generated MachineConfig is the KubeletConfig's
//     spec (without its pool selector) as JSON, not the pool's kubelet configuration merged
//     with it, and it is the only file (no log level or node sizing file); no validation of
//     the kubelet settings; a KubeletConfig waits until every pool it selects has rendered
//     a configuration, where the operator waits for its ControllerConfig. A MachineConfig is
//     written (only when it differs) when the KubeletConfig's generation is synced; the
//     operator also resyncs on feature gate, node config and API server changes, and
//     retries a Failure, which here waits for the KubeletConfig to change. No garbage
//     collector: a generated MachineConfig goes with its KubeletConfig only through the
//     finalizer, so a KubeletConfig deleted while the simulator does not run waits for it.
//   - Nodes: no NotReady while rebooting (and without Options.VMs no drain, no cordon, no
//     taint); a node without
//     currentConfig (a new node) starts on the pool's current configuration without a
//     reboot; a node in several custom pools is left alone. Layered pools (on-cluster
//     builds), MachineConfigNodes, pinned image sets and node disruption policies are not
//     modelled.
//   - Degraded: only by Degrade (or writing the state and reason annotations); Repair, or
//     writing state Done, ends it.
//   - VMs: there are no pods. The VirtualMachineInstance stands for its virt-launcher pod: an
//     eviction that shuts it down removes it at once (graceful shutdown, Succeeded, and the
//     VirtualMachine controller's removal in one step); a migration moves its
//     status.nodeName when it ends and never fails. LiveMigratable comes from the
//     NotMigratableAnnotation, not from disks and devices. Memory is the VM's memory request,
//     without KubeVirt's overhead; CPU, BalancedAllocation, pod topology spread and
//     inter-pod affinity are not scored. The drain retries on every change it sees instead of
//     every 5 s. Nothing about VMs happens without Options.VMs: no taint, no cordon, no drain
//     (and a Node that CreateNodes makes keeps the API server's not-ready taint).
//
// The simulator reads through a controller-runtime cache and acts on its events (and on
// its own timers for the render delay and reboots), never by polling; before it judges
// anything it waits until its cache shows its own last writes. RollOutOnce and DegradeOnce
// instead play one pool's roll-out, or its failure, at once, on Nodes that exist only in
// memory, reading the API server directly: for tests that decide when a roll-out ends.
package poolsim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultRenderDelay is the Machine Config Operator's render delay.
const DefaultRenderDelay = 5 * time.Second

// retryInterval is the wait before a failed write is tried again.
const retryInterval = time.Second

// Options tune the simulator.
type Options struct {
	// RenderDelay is how long the render controller waits after a change of a pool's
	// MachineConfigs before it renders (DefaultRenderDelay on OpenShift; 0 renders at once).
	RenderDelay time.Duration
	// RebootTime is how long a node takes to reboot into a new configuration.
	RebootTime time.Duration
	// Out receives a line per render, node update, reboot and pool status change (nil: none).
	Out io.Writer
	// VMs makes the simulator play KubeVirt's VMs on the nodes (the cluster must serve the
	// kubevirt.io CRDs): the node controller's UpdateInProgress taint, the drain of a node
	// that reboots, the eviction, migration and restart of its VMs. Off, no node is
	// cordoned, tainted or drained.
	VMs bool
	// MigrationTime is how long a live migration takes (VMs only).
	MigrationTime time.Duration
}

// Rollout is one roll-out of a pool to a rendered configuration: the nodes the node
// controller targeted together, wave after wave.
type Rollout struct {
	// Target is the rendered configuration.
	Target string
	// Waves are the names of the nodes targeted together, in order.
	Waves [][]string
}

// Simulator plays the Machine Config Operator for every MachineConfigPool of a cluster.
type Simulator struct {
	cfg    *rest.Config
	opts   Options
	client client.Client
	cache  cache.Cache
	// kubeletConfigs tells whether the cluster serves KubeletConfigs.
	kubeletConfigs bool

	kick chan struct{}
	// oneShot makes calls of RollOutOnce and DegradeOnce run one after the other.
	oneShot sync.Mutex

	// The loop's own state.
	expectations map[string]expectation
	renderDue    map[string]time.Time
	updates      map[string]*nodeUpdate
	wake         time.Time
	// migrations are the live migrations in flight, by VM (namespace/name).
	migrations map[string]*migration

	// What tests read while the loop runs.
	mu       sync.Mutex
	reboots  map[string]int
	rollouts map[string][]Rollout
	out      io.Writer
	// migrated and shutdowns count, by VM, its migrations and its shutdowns by a drain;
	// blocking are the VMs whose eviction each node's drain was last refused.
	migrated, shutdowns map[string]int
	blocking            map[string]map[string]bool
}

// New returns a simulator for the cluster of cfg; Start runs it.
func New(cfg *rest.Config, opts Options) (*Simulator, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	s := &Simulator{
		opts: opts, out: out,
		kick:         make(chan struct{}, 1),
		expectations: map[string]expectation{},
		renderDue:    map[string]time.Time{},
		updates:      map[string]*nodeUpdate{},
		reboots:      map[string]int{},
		rollouts:     map[string][]Rollout{},
		migrations:   map[string]*migration{},
		migrated:     map[string]int{},
		shutdowns:    map[string]int{},
		blocking:     map[string]map[string]bool{},
	}
	s.cfg = rest.CopyConfig(cfg)
	s.cfg.WarningHandlerWithContext = apiWarnings{s}
	c, err := client.New(s.cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("pool simulator client: %w", err)
	}
	s.client = c
	return s, nil
}

// apiWarnings writes the API server's warnings to the simulator's log (for example the one
// on the kubelet config controller's finalizers, MachineConfig names without a domain).
type apiWarnings struct{ s *Simulator }

func (w apiWarnings) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, message string) {
	if code == 299 && message != "" {
		w.s.logf("warning from the API server: %s", message)
	}
}

// Start runs the simulator until ctx ends (it is a controller-runtime Runnable). It fails
// when the cluster serves no MachineConfigPools or MachineConfigs; KubeletConfigs are
// handled when the cluster serves them.
func (s *Simulator) Start(ctx context.Context) error {
	if err := s.startCache(ctx); err != nil {
		return err
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.sync(ctx)
		var tick <-chan time.Time
		if !s.wake.IsZero() {
			timer.Reset(time.Until(s.wake))
			tick = timer.C
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.kick:
		case <-tick:
		}
		timer.Stop()
	}
}

// startCache starts informers on the kinds the simulator reads and waits until they hold
// what the API server holds.
func (s *Simulator) startCache(ctx context.Context) error {
	c, err := cache.New(s.cfg, cache.Options{Scheme: s.client.Scheme(), Mapper: s.client.RESTMapper()})
	if err != nil {
		return fmt.Errorf("pool simulator cache: %w", err)
	}
	s.cache = c
	if err := s.lookUpKubeletConfigs(); err != nil {
		return err
	}
	kinds := []client.Object{newObject(poolGVK, ""), newObject(machineConfigGVK, ""), &corev1.Node{}}
	if s.kubeletConfigs {
		kinds = append(kinds, newObject(kubeletConfigGVK, ""))
	}
	if s.opts.VMs {
		for _, gvk := range []schema.GroupVersionKind{vmiGVK, vmGVK, migrationGVK, kubeVirtGVK} {
			kinds = append(kinds, newObject(gvk, ""))
		}
	}
	notify := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.notify() },
		UpdateFunc: func(any, any) { s.notify() },
		DeleteFunc: func(any) { s.notify() },
	}
	for _, obj := range kinds {
		informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("pool simulator informer for %T: %w", obj, err)
		}
		if _, err := informer.AddEventHandler(notify); err != nil {
			return err
		}
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			s.logf("error: the cache stopped: %v", err)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("pool simulator: the informers did not sync: %w", ctx.Err())
	}
	return nil
}

// lookUpKubeletConfigs finds out whether the cluster serves KubeletConfigs.
func (s *Simulator) lookUpKubeletConfigs() error {
	_, err := s.client.RESTMapper().RESTMapping(kubeletConfigGVK.GroupKind(), kubeletConfigGVK.Version)
	switch {
	case meta.IsNoMatchError(err):
		s.kubeletConfigs = false
	case err != nil:
		return fmt.Errorf("look up KubeletConfigs: %w", err)
	default:
		s.kubeletConfigs = true
	}
	return nil
}

func (s *Simulator) notify() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// wakeAt asks for a pass at t at the latest.
func (s *Simulator) wakeAt(t time.Time) {
	if s.wake.IsZero() || t.Before(s.wake) {
		s.wake = t
	}
}

func (s *Simulator) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = fmt.Fprintf(s.out, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// sync is one pass: once the cache shows the simulator's last writes, it plays the
// kubelet config controller, the render controller, the daemon of each node and the node
// controller of each pool, then writes each pool's status.
func (s *Simulator) sync(ctx context.Context) {
	s.wake = time.Time{}
	if waiting, until := s.awaitingCache(ctx); waiting {
		s.wakeAt(until)
		return
	}
	snap, err := s.read(ctx, s.cache)
	if err != nil {
		s.logf("error: %v (retrying)", err)
		s.wakeAt(time.Now().Add(retryInterval))
		return
	}
	s.forgetGone(snap)
	p := &pass{
		now: time.Now(), snap: snap,
		resourceVersions: map[string]string{},
		nodesWritten:     map[string]bool{},
		renderConditions: map[string]condition{},
	}
	if s.opts.VMs {
		p.vmMemory, p.migrated = s.vmMemory(snap), map[string]bool{}
		s.completeMigrations(ctx, p)
		s.runVMControllers(ctx, p)
	}
	s.syncKubeletConfigs(ctx, p)
	for i := range snap.pools {
		s.render(ctx, p, &snap.pools[i])
	}
	s.runDaemons(ctx, p)
	for i := range snap.pools {
		s.taintNodes(ctx, p, &snap.pools[i])
		s.targetNodes(ctx, p, &snap.pools[i])
	}
	for i := range snap.pools {
		s.writeStatus(ctx, p, &snap.pools[i])
	}
}

// forgetGone drops what the loop keeps of pools and nodes that no longer exist.
func (s *Simulator) forgetGone(snap *snapshot) {
	pools := map[string]bool{}
	for _, pl := range snap.pools {
		pools[pl.Name] = true
	}
	for name := range s.renderDue {
		if !pools[name] {
			delete(s.renderDue, name)
		}
	}
	nodes := map[string]bool{}
	for _, n := range snap.nodes {
		nodes[n.Name] = true
	}
	for name := range s.updates {
		if !nodes[name] {
			delete(s.updates, name)
		}
	}
}

// snapshot is what the cache holds at the start of a pass.
type snapshot struct {
	pools          []pool
	configs        map[string]*machineConfig
	configList     []*machineConfig
	kubeletConfigs []kubeletConfig
	nodes          []*corev1.Node
	// poolOf is the pool each node belongs to; nodesOf the nodes of each pool, by name.
	poolOf  map[string]*pool
	nodesOf map[string][]*corev1.Node
	// With VMs: the VirtualMachineInstances by node and by namespace/name, the
	// VirtualMachines by namespace/name, and the KubeVirt CR's configuration.
	vmisOn   map[string][]*vmInstance
	vmiByKey map[string]*vmInstance
	vms      map[string]*virtualMachine
	kubeVirt kubeVirtConfig
}

// read takes a snapshot of what r (the cache, or the API server for a one-shot pass) holds.
func (s *Simulator) read(ctx context.Context, r client.Reader) (*snapshot, error) {
	snap := &snapshot{configs: map[string]*machineConfig{}, poolOf: map[string]*pool{}, nodesOf: map[string][]*corev1.Node{}}
	pools, err := s.list(ctx, r, poolGVK)
	if err != nil {
		return nil, err
	}
	for i := range pools {
		var p pool
		if err := decode(&pools[i], &p); err != nil {
			return nil, err
		}
		snap.pools = append(snap.pools, p)
	}
	configs, err := s.list(ctx, r, machineConfigGVK)
	if err != nil {
		return nil, err
	}
	for i := range configs {
		mc := &machineConfig{}
		if err := decode(&configs[i], mc); err != nil {
			return nil, err
		}
		snap.configs[mc.Name] = mc
		snap.configList = append(snap.configList, mc)
	}
	if s.kubeletConfigs {
		kcs, err := s.list(ctx, r, kubeletConfigGVK)
		if err != nil {
			return nil, err
		}
		for i := range kcs {
			var kc kubeletConfig
			if err := decode(&kcs[i], &kc); err != nil {
				return nil, err
			}
			kc.spec, _, _ = unstructured.NestedMap(kcs[i].Object, "spec")
			snap.kubeletConfigs = append(snap.kubeletConfigs, kc)
		}
	}
	nodes := &corev1.NodeList{}
	if err := r.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	for i := range nodes.Items {
		snap.nodes = append(snap.nodes, &nodes.Items[i])
	}
	if s.opts.VMs {
		if err := s.readVMs(ctx, r, snap); err != nil {
			return nil, err
		}
	}
	sort.Slice(snap.pools, func(i, j int) bool { return snap.pools[i].Name < snap.pools[j].Name })
	sort.Slice(snap.configList, func(i, j int) bool { return snap.configList[i].Name < snap.configList[j].Name })
	sort.Slice(snap.kubeletConfigs, func(i, j int) bool { return snap.kubeletConfigs[i].Name < snap.kubeletConfigs[j].Name })
	sort.Slice(snap.nodes, func(i, j int) bool { return snap.nodes[i].Name < snap.nodes[j].Name })
	for _, n := range snap.nodes {
		if p := primaryPool(snap.pools, n); p != nil {
			snap.poolOf[n.Name] = p
			snap.nodesOf[p.Name] = append(snap.nodesOf[p.Name], n)
		}
	}
	return snap, nil
}

func (s *Simulator) list(ctx context.Context, r client.Reader, gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list %ss: %w", gvk.Kind, err)
	}
	return list.Items, nil
}

// primaryPool is the pool whose node controller manages the node, as GetPoolsForNode
// (pkg/helpers) chooses it: of the pools whose nodeSelector matches the node's labels
// (an empty selector matches none), master before anything, a custom pool before worker;
// a node in two custom pools belongs to none.
func primaryPool(pools []pool, n *corev1.Node) *pool {
	var master, worker *pool
	var custom []*pool
	for i := range pools {
		sel, err := metav1.LabelSelectorAsSelector(pools[i].Spec.NodeSelector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		switch pools[i].Name {
		case "master":
			master = &pools[i]
		case "worker":
			worker = &pools[i]
		default:
			custom = append(custom, &pools[i])
		}
	}
	switch {
	case master != nil:
		return master
	case len(custom) == 1:
		return custom[0]
	case len(custom) == 0:
		return worker
	}
	return nil
}

// Reboots is how many times the node rebooted into a new configuration since the
// simulator started.
func (s *Simulator) Reboots(node string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reboots[node]
}

// Rollouts are the pool's roll-outs since the simulator started, oldest first. Nodes that
// join a pool start on its configuration and make no roll-out.
func (s *Simulator) Rollouts(pool string) []Rollout {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Rollout, 0, len(s.rollouts[pool]))
	for _, r := range s.rollouts[pool] {
		waves := make([][]string, 0, len(r.Waves))
		for _, w := range r.Waves {
			waves = append(waves, append([]string(nil), w...))
		}
		out = append(out, Rollout{Target: r.Target, Waves: waves})
	}
	return out
}

// Waves is the number of waves of the pool's latest roll-out: ceil(nodes/maxUnavailable)
// for a roll-out nothing interrupted (0 before any roll-out).
func (s *Simulator) Waves(pool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rollouts := s.rollouts[pool]
	if len(rollouts) == 0 {
		return 0
	}
	return len(rollouts[len(rollouts)-1].Waves)
}

// recordWave adds the nodes targeted together at target to the pool's roll-out to it.
func (s *Simulator) recordWave(pool, target string, nodes []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rollouts := s.rollouts[pool]
	if len(rollouts) == 0 || rollouts[len(rollouts)-1].Target != target {
		rollouts = append(rollouts, Rollout{Target: target})
	}
	last := &rollouts[len(rollouts)-1]
	last.Waves = append(last.Waves, nodes)
	s.rollouts[pool] = rollouts
	return len(last.Waves)
}

// Degrade reports the node Degraded with reason, as the Machine Config Daemon does when it
// cannot apply a configuration: its pool reports NodeDegraded and Degraded, naming the node
// and the reason, and the node counts against maxUnavailable until Repair.
func (s *Simulator) Degrade(ctx context.Context, node, reason string) error {
	return s.annotateNode(ctx, node, map[string]any{StateAnnotation: StateDegraded, ReasonAnnotation: reason})
}

// Repair ends a Degrade: the node is Done again, and its daemon applies its desiredConfig
// if it does not run it yet.
func (s *Simulator) Repair(ctx context.Context, node string) error {
	return s.annotateNode(ctx, node, map[string]any{StateAnnotation: StateDone, ReasonAnnotation: nil})
}

func (s *Simulator) annotateNode(ctx context.Context, node string, annotations map[string]any) error {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	patch := client.RawPatch(types.MergePatchType, data)
	if err := s.client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, patch,
		client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("annotate node %s: %w", node, err)
	}
	s.notify()
	return nil
}

// CreateNodes creates n Ready Nodes for the pool (with VMs, also without the not-ready
// taint the API server gives a new Node, which the node lifecycle controller removes once
// the node is Ready), <pool>-0 to <pool>-<n-1>, labelled
// node-role.kubernetes.io/<pool> (the label the worker and master pools select); Nodes
// that exist are kept. It returns their names.
func (s *Simulator) CreateNodes(ctx context.Context, pool string, n int) ([]string, error) {
	names := make([]string, 0, n)
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s-%d", pool, i),
			Labels: map[string]string{"node-role.kubernetes.io/" + pool: "", "kubernetes.io/os": "linux"},
		}}
		names = append(names, node.Name)
		err := s.client.Create(ctx, node, client.FieldOwner(fieldOwner))
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return names, fmt.Errorf("create node %s: %w", node.Name, err)
		}
		// The Node may change between its creation and this write (the simulator's own
		// loop marks new Nodes): report it Ready on the Node as it is now.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := s.client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
				return err
			}
			node.Status.Conditions = []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "simulated", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}}
			return s.client.Status().Update(ctx, node, client.FieldOwner(fieldOwner))
		})
		if err != nil {
			return names, fmt.Errorf("report node %s Ready: %w", node.Name, err)
		}
		if s.opts.VMs {
			if err := s.clearNotReadyTaint(ctx, node); err != nil {
				return names, err
			}
		}
	}
	s.notify()
	return names, nil
}
