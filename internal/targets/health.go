package targets

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HealthState is the verdict of a health check.
type HealthState string

const (
	// Healthy: the applied object took effect.
	Healthy HealthState = "Healthy"
	// Waiting: it is still taking effect; check again later.
	Waiting HealthState = "Waiting"
	// Unhealthy: it will not take effect without help.
	Unhealthy HealthState = "Unhealthy"
)

// Health is the result of a health check, with a message for the item.
type Health struct {
	State   HealthState
	Message string
}

// HealthCheck tells whether an applied object of one kind took effect.
type HealthCheck interface {
	// Check judges the object now: for a rollout, by what the nodes of its pools run.
	Check(ctx context.Context, reader client.Reader, desired *unstructured.Unstructured) (Health, error)
}

// HealthCheckFor returns the health check of a kind. Kinds whose operator rolls the change
// out to nodes (MachineConfig, KubeletConfig) wait for their MachineConfigPools; every other
// kind takes effect when the API server accepts it.
func HealthCheckFor(gk schema.GroupKind) HealthCheck {
	switch gk {
	case MachineConfig.GroupKind():
		return poolRollout{selects: machineConfigSelects}
	case KubeletConfig.GroupKind():
		return poolRollout{selects: KubeletConfigSelects, kubeletConfig: true}
	}
	return applied{}
}

// applied is the health check of kinds without a rollout.
type applied struct{}

func (applied) Check(_ context.Context, _ client.Reader, desired *unstructured.Unstructured) (Health, error) {
	return Health{State: Healthy, Message: Describe(desired) + " applied"}, nil
}

// Describe names an object in messages and diff headers: "Kind namespace/name".
func Describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", obj.GetKind(), ns, obj.GetName())
	}
	return fmt.Sprintf("%s %s", obj.GetKind(), obj.GetName())
}

// RollsOut tells whether applying an object of the kind rolls out to nodes, so its health
// check waits for MachineConfigPools.
func RollsOut(gk schema.GroupKind) bool {
	_, ok := HealthCheckFor(gk).(poolRollout)
	return ok
}
