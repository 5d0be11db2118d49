package poolsim

import (
	"context"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const zoneLabel = "topology.kubernetes.io/zone"

// targetNodes plays the node controller for one pool: unless the pool is paused, it points
// the desiredConfig of as many nodes at spec.configuration as maxUnavailable allows, and
// records them as a wave of the pool's roll-out.
func (s *Simulator) targetNodes(ctx context.Context, p *pass, pl *pool) {
	target := pl.Spec.Configuration.Name
	if pl.Spec.Paused || target == "" {
		return
	}
	nodes := p.snap.nodesOf[pl.Name]
	limit, err := maxUnavailable(pl, len(nodes))
	if err != nil {
		s.logf("MachineConfigPool %s: %v", pl.Name, err)
		return
	}
	unavailable := 0
	for _, n := range nodes {
		if isNodeUnavailable(n) {
			unavailable++
		}
	}
	if unavailable >= limit {
		return
	}
	capacity := limit - unavailable
	failing := 0
	var candidates []*corev1.Node
	for _, n := range nodes {
		if n.Annotations[DesiredConfigAnnotation] == target {
			if isNodeMCDFailing(n) {
				failing++
			}
			continue
		}
		// A node without currentConfig is still joining; one written this pass is busy.
		if n.Annotations[CurrentConfigAnnotation] == "" || p.nodesWritten[n.Name] {
			continue
		}
		candidates = append(candidates, n)
	}
	// Nodes failing on this configuration count against availability too.
	if failing >= capacity {
		return
	}
	capacity -= failing
	sortNodes(candidates)
	if len(candidates) > capacity {
		candidates = candidates[:capacity]
	}
	var wave []string
	for _, n := range candidates {
		if s.writeNode(ctx, p, n, map[string]any{DesiredConfigAnnotation: target}) {
			wave = append(wave, n.Name)
		}
	}
	if len(wave) == 0 {
		return
	}
	number := s.recordWave(pl.Name, target, wave)
	s.logf("MachineConfigPool %s: wave %d to %s: %s", pl.Name, number, target, strings.Join(wave, ", "))
}

// maxUnavailable is the pool's spec.maxUnavailable for that many nodes: 1 when unset, a
// percent rounded down, and never less than 1.
func maxUnavailable(pl *pool, nodes int) (int, error) {
	value := intstr.FromInt32(1)
	if pl.Spec.MaxUnavailable != nil {
		value = *pl.Spec.MaxUnavailable
	}
	limit, err := intstr.GetScaledValueFromIntOrPercent(&value, nodes, false)
	if err != nil {
		return 0, err
	}
	return max(limit, 1), nil
}

// sortNodes orders candidates as sortNodeList does: by zone, nodes without one last, then
// oldest first (then by name, for creation times of the same second).
func sortNodes(nodes []*corev1.Node) {
	sort.SliceStable(nodes, func(i, j int) bool {
		zi, iok := nodes[i].Labels[zoneLabel]
		zj, jok := nodes[j].Labels[zoneLabel]
		if iok != jok {
			return iok
		}
		if zi != zj {
			return zi < zj
		}
		ti, tj := nodes[i].CreationTimestamp, nodes[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return nodes[i].Name < nodes[j].Name
	})
}

// isNodeDone: the node runs its desiredConfig and its daemon is Done.
func isNodeDone(n *corev1.Node) bool {
	current, desired := n.Annotations[CurrentConfigAnnotation], n.Annotations[DesiredConfigAnnotation]
	return current != "" && desired != "" && current == desired && n.Annotations[StateAnnotation] == StateDone
}

// isNodeMCDFailing: the node does not run its desiredConfig and its daemon is Degraded or
// Unreconcilable.
func isNodeMCDFailing(n *corev1.Node) bool {
	if n.Annotations[CurrentConfigAnnotation] == n.Annotations[DesiredConfigAnnotation] {
		return false
	}
	state := n.Annotations[StateAnnotation]
	return state == StateDegraded || state == stateUnreconcilable
}

// isNodeReady follows checkNodeReady: Ready, no disk pressure, network available,
// schedulable.
func isNodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		switch {
		case c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue,
			c.Type == corev1.NodeDiskPressure && c.Status != corev1.ConditionFalse,
			c.Type == corev1.NodeNetworkUnavailable && c.Status != corev1.ConditionFalse:
			return false
		}
	}
	return !n.Spec.Unschedulable
}

// isNodeUnavailable: not ready, or not done and not failing (its daemon is working, or
// has not started).
func isNodeUnavailable(n *corev1.Node) bool {
	if !isNodeReady(n) {
		return true
	}
	if isNodeDone(n) {
		return false
	}
	return !isNodeMCDFailing(n)
}
