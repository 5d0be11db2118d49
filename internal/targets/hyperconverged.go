package targets

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Where the HyperConverged is installed: OpenShift Virtualization uses openshift-cnv,
// upstream KubeVirt kubevirt-hyperconverged. The operator finds it by listing, so any
// namespace works; these are named in messages.
const (
	OpenShiftHyperConvergedNamespace = "openshift-cnv"
	UpstreamHyperConvergedNamespace  = "kubevirt-hyperconverged"
)

// HyperConvergedFields are the paths of the HyperConverged fields the operator reads and
// writes, at one served API version.
type HyperConvergedFields struct {
	// Version is the API version the paths belong to.
	Version string
}

func (f HyperConvergedFields) virtualization(rest ...string) []string {
	if f.Version == "v1" {
		return append([]string{"spec", "virtualization"}, rest...)
	}
	return append([]string{"spec"}, rest...)
}

// LiveMigrationConfig holds parallelMigrationsPerCluster and parallelOutboundMigrationsPerNode.
func (f HyperConvergedFields) LiveMigrationConfig() []string {
	return f.virtualization("liveMigrationConfig")
}

// MemoryOvercommitPercentage is the memory a VM sees relative to its pod's request.
func (f HyperConvergedFields) MemoryOvercommitPercentage() []string {
	return f.virtualization("higherWorkloadDensity", "memoryOvercommitPercentage")
}

// KSMConfiguration turns on Kernel Samepage Merging on the nodes its selector picks.
func (f HyperConvergedFields) KSMConfiguration() []string {
	return f.virtualization("ksmConfiguration")
}

// PermittedHostDevices lists the PCI and USB host devices VMs may use.
func (f HyperConvergedFields) PermittedHostDevices() []string {
	return f.virtualization("permittedHostDevices")
}

// ApplicationAwareQuotaEnabled is the switch of the Application Aware Quota: v1
// spec.deployment.applicationAwareConfig.enable, v1beta1 spec.enableApplicationAwareQuota.
func (f HyperConvergedFields) ApplicationAwareQuotaEnabled() []string {
	if f.Version == "v1" {
		return []string{"spec", "deployment", "applicationAwareConfig", "enable"}
	}
	return []string{"spec", "enableApplicationAwareQuota"}
}

// HyperConvergedInstance is the cluster's one HyperConverged, read at the version the
// cluster serves.
type HyperConvergedInstance struct {
	Object *unstructured.Unstructured
	Fields HyperConvergedFields
}

// Namespace and Name of the instance.
func (h HyperConvergedInstance) Namespace() string { return h.Object.GetNamespace() }

// Name of the instance.
func (h HyperConvergedInstance) Name() string { return h.Object.GetName() }

// Describe names the instance in messages.
func (h HyperConvergedInstance) Describe() string {
	return fmt.Sprintf("HyperConverged %s/%s", h.Namespace(), h.Name())
}

// Int64 reads an integer field at path, and whether it is set.
func (h HyperConvergedInstance) Int64(path []string) (int64, bool) {
	v, ok, _ := unstructured.NestedInt64(h.Object.Object, path...)
	return v, ok
}

// ServedHyperConvergedVersion returns the best HyperConverged API version the cluster
// serves; "" when the CRD is not installed or serves none the operator knows.
func ServedHyperConvergedVersion(ctx context.Context, reader client.Reader) (string, error) {
	return HyperConverged.ReadServedVersion(ctx, reader)
}

// ListHyperConverged lists the HyperConverged objects at the version the cluster serves,
// sorted by namespace and name; none when the CRD is missing.
func ListHyperConverged(ctx context.Context, reader client.Reader) ([]HyperConvergedInstance, error) {
	version, err := ServedHyperConvergedVersion(ctx, reader)
	if err != nil || version == "" {
		return nil, err
	}
	fields := HyperConvergedFields{Version: version}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(HyperConverged.ListGVK(version))
	if err := reader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list HyperConverged: %w", err)
	}
	out := make([]HyperConvergedInstance, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, HyperConvergedInstance{Object: &list.Items[i], Fields: fields})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace()+"/"+out[i].Name() < out[j].Namespace()+"/"+out[j].Name()
	})
	return out, nil
}

// FindHyperConverged finds the cluster's one HyperConverged (see ListHyperConverged). It
// returns nil when the CRD is missing or there is none; several are an error that says
// which, since the operator cannot tell which one the administrator means.
func FindHyperConverged(ctx context.Context, reader client.Reader) (*HyperConvergedInstance, error) {
	found, err := ListHyperConverged(ctx, reader)
	switch {
	case err != nil || len(found) == 0:
		return nil, err
	case len(found) == 1:
		return &found[0], nil
	}
	names := make([]string, 0, len(found))
	for _, it := range found {
		names = append(names, it.Namespace()+"/"+it.Name())
	}
	return nil, &PrerequisiteError{Message: fmt.Sprintf(
		"the cluster has %d HyperConverged objects (%s); OpenShift Virtualization supports exactly one: delete the extra ones",
		len(names), strings.Join(names, ", "))}
}

// RequireHyperConverged is FindHyperConverged for plans that write the HyperConverged:
// none is a PrerequisiteError naming where it is expected.
func RequireHyperConverged(ctx context.Context, reader client.Reader) (*HyperConvergedInstance, error) {
	hco, err := FindHyperConverged(ctx, reader)
	if err != nil || hco != nil {
		return hco, err
	}
	version, err := ServedHyperConvergedVersion(ctx, reader)
	if err != nil {
		return nil, err
	}
	if version == "" {
		return nil, &PrerequisiteError{Message: fmt.Sprintf(
			"CRD %s is missing: install %s", HyperConverged.CRD, HyperConverged.Operator)}
	}
	return nil, &PrerequisiteError{Message: fmt.Sprintf(
		"no HyperConverged exists (expected one in %s on OpenShift, or %s upstream): create it, as installing %s does",
		OpenShiftHyperConvergedNamespace, UpstreamHyperConvergedNamespace, HyperConverged.Operator)}
}
