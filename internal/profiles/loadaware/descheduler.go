package loadaware

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
)

// preferredProfiles are the descheduler profiles that relieve loaded nodes, best first:
// the GA KubeVirt profile, its dev-preview predecessor, then the long-lifecycle profiles
// (LongLifecycle, called DevPreviewLongLifecycle before the 4.17 operator).
var preferredProfiles = []string{
	"KubeVirtRelieveAndMigrate",
	"DevKubeVirtRelieveAndMigrate",
	"LongLifecycle",
	"DevPreviewLongLifecycle",
}

// conflictsWith lists, per chosen profile, the profiles that cannot run beside it. The
// pairs are the mutually exclusive ones the 4.21+ KubeDescheduler CRD rejects (older
// operators reject them at run time), plus the other preferred profiles, which do the
// same job.
var conflictsWith = map[string][]string{
	"KubeVirtRelieveAndMigrate":    {"DevKubeVirtRelieveAndMigrate", "LongLifecycle", "DevPreviewLongLifecycle", "LifecycleAndUtilization", "CompactAndScale"},
	"DevKubeVirtRelieveAndMigrate": {"KubeVirtRelieveAndMigrate", "LongLifecycle", "DevPreviewLongLifecycle", "LifecycleAndUtilization", "CompactAndScale"},
	"LongLifecycle":                {"KubeVirtRelieveAndMigrate", "DevKubeVirtRelieveAndMigrate", "DevPreviewLongLifecycle", "LifecycleAndUtilization", "CompactAndScale"},
	"DevPreviewLongLifecycle":      {"KubeVirtRelieveAndMigrate", "DevKubeVirtRelieveAndMigrate", "LongLifecycle", "LifecycleAndUtilization", "CompactAndScale"},
}

func isRelieveAndMigrate(profile string) bool {
	return strings.HasSuffix(profile, "KubeVirtRelieveAndMigrate")
}

// capabilities is what the installed KubeDescheduler CRD offers.
type capabilities struct {
	// profiles is the spec.profiles enum.
	profiles []string
	// kubeVirtProfile is the preferred profile the enum offers, and choiceReason why.
	kubeVirtProfile, choiceReason string
	// customizations are the keys of spec.profileCustomizations.
	customizations map[string]bool
	// evictionLimitTotal and evictionLimitNode tell whether spec.evictionLimits.{total,node} exist.
	evictionLimitTotal, evictionLimitNode bool
}

// capabilitiesOf reads the schema of the served v1 KubeDescheduler version.
func capabilitiesOf(crd *apiextensionsv1.CustomResourceDefinition) (capabilities, error) {
	var spec *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == deschedulerGVK.Version && v.Served && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			if s, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]; ok {
				spec = &s
			}
		}
	}
	if spec == nil {
		return capabilities{}, &profiles.PrerequisiteError{Message: fmt.Sprintf(
			"the KubeDescheduler CRD does not serve %s with a spec schema: upgrade the Kube Descheduler Operator", deschedulerGVK.Version)}
	}
	caps := capabilities{customizations: map[string]bool{}}
	if p, ok := spec.Properties["profiles"]; ok && p.Items != nil && p.Items.Schema != nil {
		for _, e := range p.Items.Schema.Enum {
			caps.profiles = append(caps.profiles, strings.Trim(string(e.Raw), `"`))
		}
	}
	for i, candidate := range preferredProfiles {
		if slices.Contains(caps.profiles, candidate) {
			caps.kubeVirtProfile = candidate
			caps.choiceReason = "the best the installed descheduler offers"
			if i > 0 {
				caps.choiceReason = fmt.Sprintf("the installed descheduler does not offer %s", strings.Join(preferredProfiles[:i], " or "))
			}
			break
		}
	}
	if caps.kubeVirtProfile == "" {
		return capabilities{}, &profiles.PrerequisiteError{Message: fmt.Sprintf(
			"the installed Kube Descheduler Operator offers none of the profiles load-aware rebalancing needs (%s): upgrade the Kube Descheduler Operator",
			strings.Join(preferredProfiles, ", "))}
	}
	if pc, ok := spec.Properties["profileCustomizations"]; ok {
		for k := range pc.Properties {
			caps.customizations[k] = true
		}
	}
	if el, ok := spec.Properties["evictionLimits"]; ok {
		_, caps.evictionLimitTotal = el.Properties["total"]
		_, caps.evictionLimitNode = el.Properties["node"]
	}
	return caps, nil
}

// mergeProfiles keeps the live profiles that the schema still offers and that can run
// beside chosen (so AffinityAndTaints and SoftTopologyAndDuplicates stay), in their
// order, and adds chosen at the end.
func mergeProfiles(live []string, chosen string, offered []string) []string {
	out := make([]string, 0, len(live)+1)
	for _, p := range live {
		if p == chosen || slices.Contains(conflictsWith[chosen], p) || !slices.Contains(offered, p) || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
	}
	return append(out, chosen)
}

// limits are the eviction limits to set, and where each comes from.
type limits struct {
	total, node             int32
	totalSource, nodeSource string
}

// evictionLimits takes each limit from the options, else from the HyperConverged's
// live-migration limits (so the descheduler never asks for more migrations than KubeVirt
// runs at once), else from the defaults.
func evictionLimits(ctx context.Context, reader client.Reader, o *advisorv1alpha1.LoadAwareOptions) (limits, error) {
	l := limits{total: defaultEvictionLimitTotal, node: defaultEvictionLimitNode, totalSource: "default", nodeSource: "default"}
	if o.EvictionLimitTotal == nil || o.EvictionLimitNode == nil {
		hco, version, err := readHyperConverged(ctx, reader)
		if err != nil {
			return limits{}, err
		}
		if hco != nil {
			path := []string{"spec", "liveMigrationConfig"}
			if version == "v1" {
				path = []string{"spec", "virtualization", "liveMigrationConfig"}
			}
			from := fmt.Sprintf("HyperConverged %s/%s", hco.GetNamespace(), hco.GetName())
			if v, ok, _ := unstructured.NestedInt64(hco.Object, append(path, "parallelMigrationsPerCluster")...); ok && v > 0 {
				l.total, l.totalSource = int32(v), from+" parallelMigrationsPerCluster"
			}
			if v, ok, _ := unstructured.NestedInt64(hco.Object, append(path, "parallelOutboundMigrationsPerNode")...); ok && v > 0 {
				l.node, l.nodeSource = int32(v), from+" parallelOutboundMigrationsPerNode"
			}
		}
	}
	if o.EvictionLimitTotal != nil {
		l.total, l.totalSource = *o.EvictionLimitTotal, "options"
	}
	if o.EvictionLimitNode != nil {
		l.node, l.nodeSource = *o.EvictionLimitNode, "options"
	}
	if l.node > l.total {
		// A node cannot evict more than the whole cluster may.
		l.node, l.nodeSource = l.total, l.nodeSource+", capped at the total"
	}
	return l, nil
}

// readHyperConverged returns the cluster's HyperConverged, read at the API version the
// cluster serves (v1 when it does, else v1beta1), or nil when there is none.
func readHyperConverged(ctx context.Context, reader client.Reader) (*unstructured.Unstructured, string, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := reader.Get(ctx, types.NamespacedName{Name: HyperConvergedCRD}, crd); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, "", nil
		}
		return nil, "", fmt.Errorf("read CRD %s: %w", HyperConvergedCRD, err)
	}
	version := ""
	for _, candidate := range []string{"v1", "v1beta1"} {
		for _, v := range crd.Spec.Versions {
			if v.Name == candidate && v.Served && version == "" {
				version = candidate
			}
		}
	}
	if version == "" {
		return nil, "", nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "hco.kubevirt.io", Version: version, Kind: "HyperConvergedList"})
	if err := reader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, "", nil
		}
		return nil, "", fmt.Errorf("list HyperConverged: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, "", nil
	}
	return &list.Items[0], version, nil
}

func isNoMatch(err error) bool { return meta.IsNoMatchError(err) }
