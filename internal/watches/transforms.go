package watches

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// labelledObject is what the cache of an input watched for its labels only (Nodes) keeps of
// an object: its identity and a digest of its labels. Such a cache only feeds events, and
// its updates are judged by the digests alone, so thousands of Nodes, each with hundreds of
// Node Feature Discovery labels and long annotations, take about a hundred bytes each for
// as long as a plan depends on them. Nothing reads the cache: its objects are never handed
// out.
type labelledObject struct {
	metav1.TypeMeta
	Name, Namespace, ResourceVersion string
	LabelsDigest                     string
}

// GetName and GetNamespace are what the handler of the cache asks of an object.
func (o *labelledObject) GetName() string      { return o.Name }
func (o *labelledObject) GetNamespace() string { return o.Namespace }

// GetObjectMeta implements metav1.ObjectMetaAccessor: the informer keys its objects by it.
func (o *labelledObject) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, ResourceVersion: o.ResourceVersion}
}

// DeepCopyObject implements runtime.Object.
func (o *labelledObject) DeepCopyObject() runtime.Object { c := *o; return &c }

// keepLabelsDigest is the transform of the caches of inputs watched for their labels only:
// an object becomes a labelledObject. The digest is taken from the labels as they are,
// without encoding them first: a few allocations per Node while the initial list of
// thousands of Nodes streams in. The informer hands the initial events of a watch-list to
// the transform twice, as they arrive and again when they replace the cache's contents: a
// labelledObject is kept as it is.
func keepLabelsDigest(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &labelledObject{TypeMeta: m.TypeMeta, Name: m.Name, Namespace: m.Namespace,
		ResourceVersion: m.ResourceVersion, LabelsDigest: labelsDigest(m.Labels)}, nil
}

// labelsDigest tells sets of labels apart: the first 128 bits of the SHA-256 of the
// labels in the order of their keys, each key and value followed by a zero byte (which
// neither can contain).
func labelsDigest(set map[string]string) string {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	var buf []byte
	for _, k := range keys {
		buf = append(append(buf[:0], k...), 0)
		buf = append(append(buf, set[k]...), 0)
		_, _ = h.Write(buf)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// digestManagedFields is the transform of the target and input caches: an object keeps its
// managedFields entries (ownWrite judges by them), each with a digest of its field set in
// place of the set.
func digestManagedFields(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	entries := o.GetManagedFields()
	for i := range entries {
		if f := entries[i].FieldsV1; f != nil && !digested(f.GetRawBytes()) {
			sum := sha256.Sum256(f.GetRawBytes())
			entries[i].FieldsV1 = metav1.NewFieldsV1(`"` + hex.EncodeToString(sum[:16]) + `"`)
		}
	}
	return o, nil
}

// digested tells whether digestManagedFields made raw: a JSON string of 32 hex digits, where
// a field set is a JSON object.
func digested(raw []byte) bool { return len(raw) == 34 && raw[0] == '"' }
