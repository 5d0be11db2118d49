package poolsim

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"time"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	corev1 "k8s.io/api/core/v1"
)

// nodeUpdate is a node's update in progress: to target, done at until.
type nodeUpdate struct {
	target string
	until  time.Time
	reboot bool
	// drain: the node is cordoned and drained before its reboot (VMs only); drained once
	// no VM is left on it, which starts the reboot.
	drain, drained bool
}

// The files the daemon applies without a reboot (calculatePostConfigChangeActionFromMCDiffs
// in pkg/daemon/update.go): none needed, a CRI-O reload or a CRI-O restart.
var (
	filesWithoutReboot = []string{
		"/etc/kubernetes/kubelet-ca.crt",
		"/var/lib/kubelet/config.json",
		"/etc/containers/registries.conf",
		"/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
		"/etc/containers/policy.json",
		"/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
	}
	directoriesWithoutReboot = []string{
		"/etc/nmstate/openshift",
		"/etc/containers/registries.d",
	}
)

// runDaemons plays the Machine Config Daemon of each node of a pool: a new node starts on
// the pool's configuration; a node whose desiredConfig differs from its currentConfig goes
// Working and, after its reboot (RebootTime) or at once when the change needs none, runs it
// and is Done. A Degraded node is left alone.
func (s *Simulator) runDaemons(ctx context.Context, p *pass) {
	for _, n := range p.snap.nodes {
		pl := p.snap.poolOf[n.Name]
		if pl == nil {
			continue
		}
		current := n.Annotations[CurrentConfigAnnotation]
		desired := n.Annotations[DesiredConfigAnnotation]
		state := n.Annotations[StateAnnotation]
		switch {
		case current == "":
			s.joinPool(ctx, p, n, pl)
		case state == StateDegraded || state == stateUnreconcilable:
			delete(s.updates, n.Name)
		case desired == "" || desired == current:
			delete(s.updates, n.Name)
			if state != StateDone {
				s.writeNode(ctx, p, n, map[string]any{StateAnnotation: StateDone})
			}
		default:
			s.updateNode(ctx, p, n, current, desired, state)
		}
	}
}

// joinPool starts a new node on the configuration its pool runs (the one the Machine
// Config Server serves), or targets if the pool has not run one yet.
func (s *Simulator) joinPool(ctx context.Context, p *pass, n *corev1.Node, pl *pool) {
	config := pl.Status.Configuration.Name
	if config == "" {
		config = pl.Spec.Configuration.Name
	}
	if config == "" {
		return
	}
	if s.writeNode(ctx, p, n, map[string]any{
		CurrentConfigAnnotation: config, DesiredConfigAnnotation: config, StateAnnotation: StateDone,
	}) {
		s.logf("node %s: joined MachineConfigPool %s on %s", n.Name, pl.Name, config)
	}
}

// updateNode moves a node toward its desiredConfig.
func (s *Simulator) updateNode(ctx context.Context, p *pass, n *corev1.Node, current, desired, state string) {
	u := s.updates[n.Name]
	if u == nil || u.target != desired {
		reboot := s.rebootRequired(p.snap, current, desired)
		u = &nodeUpdate{target: desired, until: p.now, reboot: reboot, drain: reboot && s.opts.VMs}
		u.drained = !u.drain
		if reboot {
			u.until = p.now.Add(s.opts.RebootTime)
		}
		s.updates[n.Name] = u
		switch {
		case u.drain && (state != StateWorking || !n.Spec.Unschedulable):
			s.writeNodeWith(ctx, p, n, map[string]any{StateAnnotation: StateWorking}, map[string]any{"unschedulable": true})
		case state != StateWorking:
			s.writeNode(ctx, p, n, map[string]any{StateAnnotation: StateWorking})
		}
		switch {
		case u.drain:
			s.logf("node %s: cordoned, draining to reboot into %s", n.Name, desired)
		case reboot:
			s.logf("node %s: rebooting into %s", n.Name, desired)
		default:
			s.logf("node %s: applying %s without a reboot", n.Name, desired)
		}
		s.wakeAt(u.until)
		return
	}
	if !u.drained {
		if !n.Spec.Unschedulable {
			// Cordoned again, should the first write have been left for a later pass.
			s.writeNodeWith(ctx, p, n, map[string]any{StateAnnotation: StateWorking}, map[string]any{"unschedulable": true})
			return
		}
		if !s.drainNode(ctx, p, n) {
			return
		}
		u.drained, u.until = true, p.now.Add(s.opts.RebootTime)
		s.logf("node %s: drained, rebooting into %s", n.Name, desired)
		s.wakeAt(u.until)
		return
	}
	if p.now.Before(u.until) {
		s.wakeAt(u.until)
		return
	}
	var spec map[string]any
	if u.drain {
		spec = map[string]any{"unschedulable": nil}
	}
	if !s.writeNodeWith(ctx, p, n, map[string]any{
		CurrentConfigAnnotation: desired, StateAnnotation: StateDone, ReasonAnnotation: nil,
	}, spec) {
		return
	}
	delete(s.updates, n.Name)
	if !u.reboot {
		s.logf("node %s: runs %s", n.Name, desired)
		return
	}
	s.mu.Lock()
	s.reboots[n.Name]++
	count := s.reboots[n.Name]
	s.mu.Unlock()
	s.logf("node %s: rebooted into %s (reboot %d)", n.Name, desired, count)
}

// writeNode merge-patches the node's annotations (nil removes one) and tells whether it
// did; a node is written once per pass.
func (s *Simulator) writeNode(ctx context.Context, p *pass, n *corev1.Node, annotations map[string]any) bool {
	return s.writeNodeWith(ctx, p, n, annotations, nil)
}

// writeNodeWith is writeNode with fields of the node's spec to merge too (cordoning).
func (s *Simulator) writeNodeWith(ctx context.Context, p *pass, n *corev1.Node, annotations, spec map[string]any) bool {
	if p.nodesWritten[n.Name] {
		return false
	}
	p.nodesWritten[n.Name] = true
	body := map[string]any{"metadata": map[string]any{"annotations": annotations}}
	if spec != nil {
		body["spec"] = spec
	}
	if err := s.patch(ctx, p, nodeGVK, n.Name, n.ResourceVersion, body, false); err != nil {
		s.report(p, err)
		return false
	}
	return true
}

// rebootRequired tells whether moving from the rendered configuration from to to reboots
// the node; a configuration the cache does not hold is taken to need one.
func (s *Simulator) rebootRequired(snap *snapshot, from, to string) bool {
	a, b := snap.configs[from], snap.configs[to]
	if a == nil || b == nil {
		return true
	}
	return rebootRequired(a.Spec, b.Spec)
}

// rebootRequired follows calculatePostConfigChangeAction (pkg/daemon/update.go): a change
// of the OS image, kernel arguments, FIPS, kernel type, extensions or systemd units
// reboots; so does a change of any file but those applied without one, and (simplified:
// the daemon refuses them) of any other Ignition section than files, units and SSH keys.
func rebootRequired(from, to machineConfigSpec) bool {
	if from.OSImageURL != to.OSImageURL || from.FIPS != to.FIPS ||
		kernelType(from.KernelType) != kernelType(to.KernelType) ||
		!slices.Equal(from.KernelArguments, to.KernelArguments) || !slices.Equal(from.Extensions, to.Extensions) {
		return true
	}
	a, _, errA := ignitionOf(from.Config)
	b, _, errB := ignitionOf(to.Config)
	if errA != nil || errB != nil {
		return true
	}
	if !reflect.DeepEqual(a.Systemd, b.Systemd) {
		return true
	}
	for _, path := range changedFiles(a.Storage.Files, b.Storage.Files) {
		if !slices.Contains(filesWithoutReboot, path) && !slices.Contains(directoriesWithoutReboot, filepath.Dir(path)) {
			return true
		}
	}
	// Anything else but files, units, SSH keys and the Ignition version.
	a.Storage.Files, b.Storage.Files = nil, nil
	a.Passwd, b.Passwd = igntypes.Passwd{}, igntypes.Passwd{}
	a.Ignition.Version, b.Ignition.Version = "", ""
	return !reflect.DeepEqual(a, b)
}

func kernelType(t string) string {
	if t == "" {
		return "default"
	}
	return t
}

// changedFiles are the paths of the files added, removed or changed from a to b.
func changedFiles(a, b []igntypes.File) []string {
	index := func(files []igntypes.File) map[string]string {
		out := map[string]string{}
		for _, f := range files {
			data, _ := json.Marshal(f)
			out[f.Path] = string(data)
		}
		return out
	}
	before, after := index(a), index(b)
	var changed []string
	for path, content := range after {
		if before[path] != content {
			changed = append(changed, path)
		}
	}
	for path := range before {
		if _, kept := after[path]; !kept {
			changed = append(changed, path)
		}
	}
	return changed
}
