package poolsim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// oneShotPasses bounds the passes of RollOutOnce and DegradeOnce: a pass that writes
// something, or fails to, is followed by another, until one finds nothing to do. A
// KubeletConfig takes three (its MachineConfig, the render of it, the pool's status), and
// one more per finalizer when it is being deleted.
const oneShotPasses = 30

// RollOutOnce plays the Machine Config Operator for the MachineConfigPool name in one go,
// for tests that decide themselves when a roll-out ends: the kubelet config controller
// and the render controller do what a running simulator does (the render at once, without
// RenderDelay), then the pool reports its status as the node controller computes it for
// machines Nodes that all run the configuration it renders, Ready: Updated on it, with
// machines machines updated and ready, for its latest generation. Those Nodes exist only
// in memory, named as CreateNodes names them: no Node is written, and Nodes of the pool,
// if it has any, count for nothing. It returns once a pass finds nothing left to write,
// with an error when the pool does not exist, cannot render (RenderDegraded, whose message
// it returns) or writes kept failing.
//
// A Simulator that Start runs must not be used for it; calls of RollOutOnce and
// DegradeOnce on one Simulator run one after the other.
func (s *Simulator) RollOutOnce(ctx context.Context, name string, machines int) error {
	s.oneShot.Lock()
	defer s.oneShot.Unlock()
	if err := s.lookUpKubeletConfigs(); err != nil {
		return err
	}
	return s.settle(ctx, name, func(p *pass, pl *pool) {
		s.syncKubeletConfigs(ctx, p)
		// No render delay: the render is due now.
		s.renderDue[pl.Name] = p.now
		s.render(ctx, p, pl)
		target := pl.Spec.Configuration.Name
		p.snap.nodesOf[pl.Name] = phantomNodes(pl.Name, slices.Repeat([]phantom{{current: target, desired: target}}, machines))
		s.writeStatus(ctx, p, pl)
	}, func(pl *pool) error {
		if c := findCondition(pl.Status.Conditions, conditionRenderDegraded); c != nil && c.Status == corev1.ConditionTrue {
			return fmt.Errorf("MachineConfigPool %s is RenderDegraded: %s", pl.Name, c.Message)
		}
		if pl.Spec.Configuration.Name == "" || pl.Status.Configuration.Name != pl.Spec.Configuration.Name {
			return fmt.Errorf("MachineConfigPool %s did not roll out %q (runs %q)",
				pl.Name, pl.Spec.Configuration.Name, pl.Status.Configuration.Name)
		}
		return nil
	})
}

// DegradeOnce reports the MachineConfigPool name Degraded in one go, as the node
// controller computes its status for machines Nodes of which the first, <name>-0, reports
// Degraded with reason (as Degrade has a Node report it) on the configuration the pool
// targets, while the others still run the one it reported last: NodeDegraded and Degraded
// name that Node and its reason, and Updated is False. Nothing is rendered, and, as for
// RollOutOnce, no Node is written or counts. It fails for a pool that has rendered no
// configuration yet.
func (s *Simulator) DegradeOnce(ctx context.Context, name string, machines int, reason string) error {
	s.oneShot.Lock()
	defer s.oneShot.Unlock()
	return s.settle(ctx, name, func(p *pass, pl *pool) {
		target, current := pl.Spec.Configuration.Name, pl.Status.Configuration.Name
		phantoms := []phantom{{current: current, desired: target, state: StateDegraded, reason: reason}}
		for range machines - 1 {
			phantoms = append(phantoms, phantom{current: current, desired: current})
		}
		p.snap.nodesOf[pl.Name] = phantomNodes(pl.Name, phantoms)
		s.writeStatus(ctx, p, pl)
	}, func(pl *pool) error {
		if pl.Spec.Configuration.Name == "" {
			return fmt.Errorf("MachineConfigPool %s has rendered no configuration its nodes could fail to apply", pl.Name)
		}
		if c := findCondition(pl.Status.Conditions, conditionDegraded); c == nil || c.Status != corev1.ConditionTrue {
			return fmt.Errorf("MachineConfigPool %s does not report Degraded", pl.Name)
		}
		return nil
	})
}

// settle runs step, a pass over the pool read from the API server, until a pass writes
// nothing and no write fails, then judges the pool as that last pass read it with check.
func (s *Simulator) settle(ctx context.Context, name string, step func(*pass, *pool), check func(*pool) error) error {
	// What a one-shot pass writes is read back from the API server, not awaited in a cache.
	defer clear(s.expectations)
	var failures []error
	for range oneShotPasses {
		clear(s.expectations)
		snap, err := s.read(ctx, s.client)
		if err != nil {
			return err
		}
		var pl *pool
		for i := range snap.pools {
			if snap.pools[i].Name == name {
				pl = &snap.pools[i]
			}
		}
		if pl == nil {
			return fmt.Errorf("there is no MachineConfigPool %s", name)
		}
		p := &pass{
			now: time.Now(), snap: snap,
			resourceVersions: map[string]string{},
			nodesWritten:     map[string]bool{},
			renderConditions: map[string]condition{},
		}
		step(p, pl)
		failures = p.failures
		if len(failures) == 0 && len(s.expectations) == 0 {
			return check(pl)
		}
		if retry := failedOtherThanConflict(failures); retry {
			select {
			case <-ctx.Done():
				return errors.Join(append(failures, ctx.Err())...)
			case <-time.After(retryInterval):
			}
		}
	}
	err := fmt.Errorf("MachineConfigPool %s: still changing after %d passes", name, oneShotPasses)
	return errors.Join(append([]error{err}, failures...)...)
}

// failedOtherThanConflict tells whether a write failed for another reason than a conflict
// (which a new pass, reading what changed, resolves at once).
func failedOtherThanConflict(failures []error) bool {
	for _, err := range failures {
		if !apierrors.IsConflict(err) {
			return true
		}
	}
	return false
}

// phantom is what a Node that exists only in memory reports: its currentConfig and
// desiredConfig, its daemon's state (Done when empty) and the reason of a Degraded one.
type phantom struct{ current, desired, state, reason string }

// phantomNodes are Ready Nodes of the pool that exist only in memory, one per phantom,
// named <pool>-0, <pool>-1... as CreateNodes names them.
func phantomNodes(pool string, phantoms []phantom) []*corev1.Node {
	nodes := make([]*corev1.Node, 0, len(phantoms))
	for i, ph := range phantoms {
		state := ph.state
		if state == "" {
			state = StateDone
		}
		annotations := map[string]string{
			CurrentConfigAnnotation: ph.current, DesiredConfigAnnotation: ph.desired, StateAnnotation: state,
		}
		if ph.reason != "" {
			annotations[ReasonAnnotation] = ph.reason
		}
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", pool, i), Annotations: annotations},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			}}},
		})
	}
	return nodes
}
