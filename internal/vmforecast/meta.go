package vmforecast

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// instanceMeta is the metadata an Instance keeps: its name, namespace, UID and
// resourceVersion, a quarter of the size of a metav1.ObjectMeta. It implements
// metav1.Object so that an informer can key and index it; everything else reads as empty
// and is not kept when set.
type instanceMeta struct {
	Name, Namespace string
	UID             types.UID
	ResourceVersion string
}

var _ metav1.Object = (*instanceMeta)(nil)

func (m *instanceMeta) GetNamespace() string                  { return m.Namespace }
func (m *instanceMeta) SetNamespace(namespace string)         { m.Namespace = namespace }
func (m *instanceMeta) GetName() string                       { return m.Name }
func (m *instanceMeta) SetName(name string)                   { m.Name = name }
func (m *instanceMeta) GetUID() types.UID                     { return m.UID }
func (m *instanceMeta) SetUID(uid types.UID)                  { m.UID = uid }
func (m *instanceMeta) GetResourceVersion() string            { return m.ResourceVersion }
func (m *instanceMeta) SetResourceVersion(version string)     { m.ResourceVersion = version }
func (m *instanceMeta) GetGenerateName() string               { return "" }
func (m *instanceMeta) SetGenerateName(string)                {}
func (m *instanceMeta) GetGeneration() int64                  { return 0 }
func (m *instanceMeta) SetGeneration(int64)                   {}
func (m *instanceMeta) GetSelfLink() string                   { return "" }
func (m *instanceMeta) SetSelfLink(string)                    {}
func (m *instanceMeta) GetCreationTimestamp() metav1.Time     { return metav1.Time{} }
func (m *instanceMeta) SetCreationTimestamp(metav1.Time)      {}
func (m *instanceMeta) GetDeletionTimestamp() *metav1.Time    { return nil }
func (m *instanceMeta) SetDeletionTimestamp(*metav1.Time)     {}
func (m *instanceMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (m *instanceMeta) SetDeletionGracePeriodSeconds(*int64)  {}
func (m *instanceMeta) GetLabels() map[string]string          { return nil }
func (m *instanceMeta) SetLabels(map[string]string)           {}
func (m *instanceMeta) GetAnnotations() map[string]string     { return nil }
func (m *instanceMeta) SetAnnotations(map[string]string)      {}
func (m *instanceMeta) GetFinalizers() []string               { return nil }
func (m *instanceMeta) SetFinalizers([]string)                {}
func (m *instanceMeta) GetOwnerReferences() []metav1.OwnerReference {
	return nil
}
func (m *instanceMeta) SetOwnerReferences([]metav1.OwnerReference) {}
func (m *instanceMeta) GetManagedFields() []metav1.ManagedFieldsEntry {
	return nil
}
func (m *instanceMeta) SetManagedFields([]metav1.ManagedFieldsEntry) {}
