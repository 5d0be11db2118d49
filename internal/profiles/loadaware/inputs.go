package loadaware

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// Inputs is everything the profile reads from the cluster, typed. RenderItems depends on
// nothing else.
type Inputs struct {
	// Schema is what the installed KubeDescheduler CRD offers.
	Schema targets.DeschedulerSchema `json:"schema"`
	// Descheduler is the live KubeDescheduler's spec.profiles; nil when there is none.
	Descheduler *LiveDescheduler `json:"descheduler,omitempty"`
	// MigrationLimits are what was read of the HyperConverged's live-migration limits, when
	// the schema has eviction limits and the options leave a limit to the HyperConverged;
	// nil when they were not read.
	MigrationLimits *MigrationLimits `json:"migrationLimits,omitempty"`
	// PSIEffective: the worker pool's current rendered configuration already carries psi=1,
	// so adding it reboots nothing.
	PSIEffective bool `json:"psiEffective,omitempty"`
	// MastersSchedulable: the control plane nodes run workloads (a compact cluster), so
	// they need psi=1 too.
	MastersSchedulable bool `json:"mastersSchedulable,omitempty"`
}

// LiveDescheduler is what the plan keeps of the live KubeDescheduler.
type LiveDescheduler struct {
	Profiles []string `json:"profiles"`
}

// MigrationLimits are the HyperConverged's live-migration limits; nil fields are unset.
type MigrationLimits struct {
	// HyperConvergeds is how many HyperConverged objects the cluster has. The limits are
	// read only from exactly one: with none, or several, the defaults apply.
	HyperConvergeds int `json:"hyperConvergeds"`
	// Source names the HyperConverged, e.g. "HyperConverged openshift-cnv/kubevirt-hyperconverged";
	// "" unless there is exactly one.
	Source     string `json:"source,omitempty"`
	PerCluster *int64 `json:"perCluster,omitempty"`
	PerNode    *int64 `json:"perNode,omitempty"`
}

// ReadInputs reads what the plan depends on: the KubeDescheduler CRD's schema and the
// live KubeDescheduler, the HyperConverged's migration limits (only when the schema has
// eviction limits and the options leave one to the HyperConverged), and, with PSI metrics,
// whether the worker pool already runs with psi=1. The reads after the schema do not
// depend on each other: they are sent together.
func ReadInputs(ctx context.Context, reader client.Reader, o *advisorv1alpha1.LoadAwareOptions) (Inputs, error) {
	var in Inputs
	var err error
	if in.Schema, err = targets.ReadDeschedulerSchema(ctx, reader); err != nil {
		return Inputs{}, err
	}
	reads := []func() error{func() (err error) {
		in.Descheduler, err = readDescheduler(ctx, reader)
		return err
	}}
	if in.Schema.EvictionLimitTotal && (o.EvictionLimitTotal == nil || o.EvictionLimitNode == nil) {
		reads = append(reads, func() (err error) {
			in.MigrationLimits, err = readMigrationLimits(ctx, reader)
			return err
		})
	}
	if *o.EnablePSIMetrics {
		reads = append(reads, func() (err error) {
			in.PSIEffective, err = psiAlreadyEffective(ctx, reader)
			return err
		}, func() (err error) {
			in.MastersSchedulable, err = targets.MastersSchedulable(ctx, reader)
			return err
		})
	}
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	for i, read := range reads {
		wg.Go(func() { errs[i] = read() })
	}
	wg.Wait()
	// The first failure in the order the reads are listed, as when they were sent one by one.
	for _, err := range errs {
		if err != nil {
			return Inputs{}, err
		}
	}
	return in, nil
}

// readDescheduler reads the live KubeDescheduler; nil when there is none.
func readDescheduler(ctx context.Context, reader client.Reader) (*LiveDescheduler, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(targets.KubeDescheduler.GVK)
	switch err := reader.Get(ctx, types.NamespacedName{Namespace: DeschedulerNamespace, Name: DeschedulerName}, live); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read KubeDescheduler %s/%s: %w", DeschedulerNamespace, DeschedulerName, err)
	}
	profiles, _, _ := unstructured.NestedStringSlice(live.Object, "spec", "profiles")
	return &LiveDescheduler{Profiles: profiles}, nil
}

// readMigrationLimits reads the live-migration limits of the cluster's HyperConverged. They
// are read only from exactly one: with none, or several, the plan uses the defaults and
// says why, instead of failing for a value the options can give.
func readMigrationLimits(ctx context.Context, reader client.Reader) (*MigrationLimits, error) {
	found, err := targets.ListHyperConverged(ctx, reader)
	if err != nil {
		return nil, err
	}
	limits := &MigrationLimits{HyperConvergeds: len(found)}
	if len(found) != 1 {
		return limits, nil
	}
	hco := found[0]
	limits.Source = hco.Describe()
	path := hco.Fields.LiveMigrationConfig()
	if v, ok := hco.Int64(append(path, "parallelMigrationsPerCluster")); ok {
		limits.PerCluster = &v
	}
	if v, ok := hco.Int64(append(path, "parallelOutboundMigrationsPerNode")); ok {
		limits.PerNode = &v
	}
	return limits, nil
}

// psiAlreadyEffective tells whether the worker pool's current rendered configuration
// already carries psi=1, in which case adding it again reboots nothing.
func psiAlreadyEffective(ctx context.Context, reader client.Reader) (bool, error) {
	pool := &unstructured.Unstructured{}
	pool.SetGroupVersionKind(targets.MachineConfigPool.GVK)
	if err := reader.Get(ctx, types.NamespacedName{Name: "worker"}, pool); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("read MachineConfigPool worker: %w", err)
	}
	rendered, _, _ := unstructured.NestedString(pool.Object, "status", "configuration", "name")
	if rendered == "" {
		return false, nil
	}
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(targets.MachineConfig.GVK)
	if err := reader.Get(ctx, types.NamespacedName{Name: rendered}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read rendered MachineConfig %s: %w", rendered, err)
	}
	args, _, _ := unstructured.NestedStringSlice(mc.Object, "spec", "kernelArguments")
	for _, a := range args {
		if a == "psi=1" {
			return true, nil
		}
	}
	return false, nil
}
