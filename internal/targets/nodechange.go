package targets

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// NodeChange is what applying an item changes on the nodes of a pool that selects it.
type NodeChange struct {
	// Files are the paths of the files added, changed or removed.
	Files []string
	// Units are the names of the systemd units added, changed or removed.
	Units []string
	// KernelArgumentsAdded and KernelArgumentsRemoved are kernel arguments, one each.
	KernelArgumentsAdded, KernelArgumentsRemoved []string
	// ExtensionsAdded and ExtensionsRemoved are RHCOS extensions.
	ExtensionsAdded, ExtensionsRemoved []string
	// OSImage, KernelType and FIPS tell whether the OS image, the kernel type or FIPS
	// mode change.
	OSImage, KernelType, FIPS bool
}

// IsEmpty tells whether the change changes nothing on the nodes.
func (c NodeChange) IsEmpty() bool {
	return len(c.Files) == 0 && len(c.Units) == 0 &&
		len(c.KernelArgumentsAdded) == 0 && len(c.KernelArgumentsRemoved) == 0 &&
		len(c.ExtensionsAdded) == 0 && len(c.ExtensionsRemoved) == 0 &&
		!c.OSImage && !c.KernelType && !c.FIPS
}

// ChangeOf is what replacing the content live with desired changes on a node (live is
// empty when the MachineConfig is created).
func ChangeOf(live, desired NodeContent) NodeChange {
	var c NodeChange
	for _, path := range sortedKeys(union(live.Files, desired.Files)) {
		before, had := live.Files[path]
		after, has := desired.Files[path]
		if had != has || !equality.Semantic.DeepEqual(before, after) {
			c.Files = append(c.Files, path)
		}
	}
	for _, name := range sortedKeys(union(live.Units, desired.Units)) {
		before, had := live.Units[name]
		after, has := desired.Units[name]
		if had != has || !equality.Semantic.DeepEqual(before, after) {
			c.Units = append(c.Units, name)
		}
	}
	c.KernelArgumentsAdded, c.KernelArgumentsRemoved = added(live.KernelArguments, desired.KernelArguments), added(desired.KernelArguments, live.KernelArguments)
	c.ExtensionsAdded, c.ExtensionsRemoved = added(live.Extensions, desired.Extensions), added(desired.Extensions, live.Extensions)
	c.OSImage = live.OSImageURL != desired.OSImageURL
	c.KernelType = canonicalKernelType(live.KernelType) != canonicalKernelType(desired.KernelType)
	c.FIPS = live.FIPS != desired.FIPS
	return c
}

// KubeletConfigChange is what a change of a KubeletConfig changes on the nodes: the kubelet
// configuration file of the MachineConfig the Machine Config Operator generates from it.
func KubeletConfigChange() NodeChange {
	return NodeChange{Files: []string{KubeletConfigFile}}
}

// ChangeOfObject is what applying desired in place of live (nil when desired is created)
// changes on the nodes, for a MachineConfig or a KubeletConfig; empty for any other kind.
func ChangeOfObject(live, desired *unstructured.Unstructured) (NodeChange, error) {
	switch desired.GroupVersionKind().GroupKind() {
	case MachineConfig.GroupKind():
		var before NodeContent
		if live != nil {
			var err error
			if before, err = ContentOf(live); err != nil {
				return NodeChange{}, err
			}
		}
		after, err := ContentOf(desired)
		if err != nil {
			return NodeChange{}, err
		}
		return ChangeOf(before, after), nil
	case KubeletConfig.GroupKind():
		if live != nil && equality.Semantic.DeepEqual(live.Object["spec"], desired.Object["spec"]) {
			return NodeChange{}, nil
		}
		return KubeletConfigChange(), nil
	}
	return NodeChange{}, nil
}

// ChangeOfRemoval is what deleting live (nil: already gone) changes on the nodes of its
// pools, for a MachineConfig or a KubeletConfig; empty for any other kind.
func ChangeOfRemoval(live *unstructured.Unstructured) (NodeChange, error) {
	if live == nil {
		return NodeChange{}, nil
	}
	switch live.GroupVersionKind().GroupKind() {
	case MachineConfig.GroupKind():
		before, err := ContentOf(live)
		if err != nil {
			return NodeChange{}, err
		}
		return ChangeOf(before, NodeContent{}), nil
	case KubeletConfig.GroupKind():
		return KubeletConfigChange(), nil
	}
	return NodeChange{}, nil
}

// added are the items of after that before lacks, in after's order.
func added(before, after []string) []string {
	have := setOf(before)
	var out []string
	for _, a := range after {
		if !have[a] {
			out = append(out, a)
		}
	}
	return out
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
