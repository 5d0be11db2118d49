package watches

import (
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-advisor-operator/internal/nodeconfig"
)

// nodeFacts is the transform of the one informer the Nodes are served from: a Node is
// kept as its name and the labels the profiles decide from (nodeconfig.IsFactLabel), and
// nothing else. Thousands of Nodes carry hundreds of labels and long annotations each; a
// dozen labels of each stay, and the Nodes that report the same facts share one map of
// them (see factSets).
// The informer hands the initial events of a watch-list to the transform twice, as they
// arrive and again when they replace the cache's contents: a Node kept already (it has no
// UID, which every Node the API server serves has) is kept as it is, so the cache never
// holds two copies of every Node.
func nodeFacts(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || m.UID == "" {
		return obj, nil
	}
	kept := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta}
	kept.Name, kept.ResourceVersion, kept.DeletionTimestamp = m.Name, m.ResourceVersion, m.DeletionTimestamp
	kept.Labels = factSets.of(m.Labels)
	return kept, nil
}

// factSets holds each distinct set of fact labels the Nodes report once: a cluster's
// workers are mostly alike, and a Node's labels are a map of a dozen entries, the largest
// part of what the cache keeps of it. A shared map is never changed: the informer replaces
// a Node whose labels change, and every read of the cache is a copy. Past maxFactSets sets,
// a Node keeps a map of its own.
var factSets = &labelSets{byKey: map[string]map[string]string{}}

const maxFactSets = 4096

type labelSets struct {
	mu    sync.Mutex
	byKey map[string]map[string]string
}

// of is the shared map of the fact labels among labels; nil without any.
func (s *labelSets) of(labels map[string]string) map[string]string {
	keys := make([]string, 0, 16)
	for k := range labels {
		if nodeconfig.IsFactLabel(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	var key strings.Builder
	for _, k := range keys {
		key.WriteString(k)
		key.WriteByte(0) // neither a key nor a value contains it
		key.WriteString(labels[k])
		key.WriteByte(0)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if shared, ok := s.byKey[key.String()]; ok {
		return shared
	}
	facts := make(map[string]string, len(keys))
	for _, k := range keys {
		facts[strings.Clone(k)] = strings.Clone(labels[k])
	}
	if len(s.byKey) < maxFactSets {
		s.byKey[key.String()] = facts
	}
	return facts
}

// NodeMetadata is the metadata-only object the Nodes are read and watched as.
func NodeMetadata() *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Node"})
	return o
}
