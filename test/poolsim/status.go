package poolsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// writeStatus writes the pool's status as the node controller computes it from its nodes,
// with the RenderDegraded condition the render step of this pass decided. A pool that has
// not rendered a configuration yet gets only that condition, as the node controller waits
// for the first render.
func (s *Simulator) writeStatus(ctx context.Context, p *pass, pl *pool) {
	status := pl.Status
	status.Conditions = append([]condition(nil), pl.Status.Conditions...)
	if c, ok := p.renderConditions[pl.Name]; ok {
		status.Conditions = setCondition(status.Conditions, c)
	}
	if pl.Spec.Configuration.Name != "" {
		status = calculateStatus(pl, p.snap.nodesOf[pl.Name], status.Conditions)
	}
	if sameJSON(normalized(status), normalized(pl.Status)) {
		return
	}
	if err := s.patch(ctx, p, poolGVK, pl.Name, pl.ResourceVersion, map[string]any{"status": status}, true); err != nil {
		s.report(p, err)
		return
	}
	s.logStatusChange(pl, status)
}

// sameJSON tells whether a and b encode alike (times compare at the API's precision).
func sameJSON(a, b any) bool {
	da, errA := json.Marshal(a)
	db, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(da, db)
}

// normalized is a status with empty lists as nil, for comparing a computed status with a
// read one.
func normalized(st poolStatus) poolStatus {
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
	if len(st.Configuration.Source) == 0 {
		st.Configuration.Source = nil
	}
	return st
}

func (s *Simulator) logStatusChange(pl *pool, status poolStatus) {
	if status.Configuration.Name != pl.Status.Configuration.Name && status.Configuration.Name != "" {
		s.logf("MachineConfigPool %s: Updated, all %d nodes run %s", pl.Name, status.MachineCount, status.Configuration.Name)
	}
	was, is := findCondition(pl.Status.Conditions, conditionDegraded), findCondition(status.Conditions, conditionDegraded)
	if is != nil && is.Status == corev1.ConditionTrue && (was == nil || was.Status != corev1.ConditionTrue || was.Message != is.Message) {
		s.logf("MachineConfigPool %s: Degraded: %s", pl.Name, is.Message)
	}
	if is != nil && is.Status == corev1.ConditionFalse && was != nil && was.Status == corev1.ConditionTrue {
		s.logf("MachineConfigPool %s: no longer Degraded", pl.Name)
	}
}

// calculateStatus follows calculateStatus of pkg/controller/node/status.go, from the nodes'
// annotations (the path the operator takes without MachineConfigNodes).
func calculateStatus(pl *pool, nodes []*corev1.Node, conditions []condition) poolStatus {
	target := pl.Spec.Configuration.Name
	var updated, ready, unavailable, degraded int32
	var reasons []string
	for _, n := range nodes {
		if isNodeDone(n) && n.Annotations[CurrentConfigAnnotation] == target {
			updated++
			if isNodeReady(n) {
				ready++
			}
		}
		if isNodeUnavailable(n) {
			unavailable++
		}
		state := n.Annotations[StateAnnotation]
		if n.Annotations[DesiredConfigAnnotation] != "" && (state == StateDegraded || state == stateUnreconcilable) {
			degraded++
			if reason := n.Annotations[ReasonAnnotation]; reason != "" {
				reasons = append(reasons, fmt.Sprintf("Node %s is reporting: %q", n.Name, reason))
			}
		}
	}
	machines := int32(len(nodes))
	status := poolStatus{
		ObservedGeneration:      pl.Generation,
		Configuration:           pl.Status.Configuration,
		MachineCount:            machines,
		UpdatedMachineCount:     updated,
		ReadyMachineCount:       ready,
		UnavailableMachineCount: unavailable,
		DegradedMachineCount:    degraded,
		Conditions:              conditions,
	}
	line := "MachineConfig " + target
	if updated == machines && ready == machines && unavailable == 0 {
		status.Conditions = setCondition(status.Conditions, condition{
			Type: conditionUpdated, Status: corev1.ConditionTrue, Message: "All nodes are updated with " + line,
		})
		status.Conditions = setCondition(status.Conditions, condition{Type: conditionUpdating, Status: corev1.ConditionFalse})
		if status.Configuration.Name != target || !sameSources(status.Configuration.Source, pl.Spec.Configuration.Source) {
			status.Configuration = pl.Spec.Configuration
		}
	} else {
		status.Conditions = setCondition(status.Conditions, condition{Type: conditionUpdated, Status: corev1.ConditionFalse})
		if pl.Spec.Paused {
			status.Conditions = setCondition(status.Conditions, condition{
				Type: conditionUpdating, Status: corev1.ConditionFalse, Message: "Pool is paused; will not update to " + line,
			})
		} else {
			status.Conditions = setCondition(status.Conditions, condition{
				Type: conditionUpdating, Status: corev1.ConditionTrue, Message: "All nodes are updating to " + line,
			})
		}
	}
	nodeDegraded := condition{Type: conditionNodeDegraded, Status: corev1.ConditionFalse}
	if degraded > 0 {
		nodeDegraded = condition{
			Type: conditionNodeDegraded, Status: corev1.ConditionTrue,
			Reason:  fmt.Sprintf("%d nodes are reporting degraded status on sync", degraded),
			Message: strings.Join(reasons, ", "),
		}
	}
	status.Conditions = setCondition(status.Conditions, nodeDegraded)
	renderDegraded := findCondition(status.Conditions, conditionRenderDegraded)
	poolDegraded := condition{Type: conditionDegraded, Status: corev1.ConditionFalse}
	if degraded > 0 || (renderDegraded != nil && renderDegraded.Status == corev1.ConditionTrue) {
		poolDegraded.Status = corev1.ConditionTrue
		if degraded > 0 {
			poolDegraded.Message = nodeDegraded.Message
		}
	}
	status.Conditions = setCondition(status.Conditions, poolDegraded)
	return status
}
