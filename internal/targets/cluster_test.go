package targets_test

import (
	"context"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// cluster answers reads from objects held in memory, as an API server that stores them
// would: the unit tests of this package judge what was read, not how the API server
// stores or validates it (the envtest suites of the profiles and the plan engine do that).
type cluster struct {
	// objects are the objects of third-party kinds, and CRDs, by kind.
	objects []*unstructured.Unstructured
	// notServed are kinds the cluster does not serve: their lists fail with a no-match error.
	notServed map[string]bool
	// failing are kinds whose reads and lists fail with the error.
	failing map[string]error
}

var _ client.Reader = (*cluster)(nil)

// clusterOf is a cluster holding the objects of the YAML documents.
func clusterOf(docs ...string) *cluster {
	c := &cluster{notServed: map[string]bool{}, failing: map[string]error{}}
	for _, doc := range docs {
		c.objects = append(c.objects, object(doc))
	}
	return c
}

// object decodes one YAML document.
func object(doc string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		panic(err)
	}
	return u
}

func (c *cluster) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if _, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
		kind = "CustomResourceDefinition"
	}
	if c.notServed[kind] {
		return &meta.NoKindMatchError{GroupKind: obj.GetObjectKind().GroupVersionKind().GroupKind()}
	}
	if err := c.failing[kind]; err != nil {
		return err
	}
	for _, o := range c.objects {
		if o.GetKind() != kind || o.GetNamespace() != key.Namespace || o.GetName() != key.Name {
			continue
		}
		switch out := obj.(type) {
		case *unstructured.Unstructured:
			out.Object = o.DeepCopy().Object
		case *apiextensionsv1.CustomResourceDefinition:
			return runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out)
		}
		return nil
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(kind) + "s"}, key.Name)
}

func (c *cluster) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	ul, ok := list.(*unstructured.UnstructuredList)
	if !ok {
		panic("cluster lists unstructured objects only")
	}
	gvk := ul.GroupVersionKind()
	kind := strings.TrimSuffix(gvk.Kind, "List")
	if c.notServed[kind] {
		return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: gvk.Group, Kind: kind}}
	}
	if err := c.failing[kind]; err != nil {
		return err
	}
	ul.Items = nil
	for _, o := range c.objects {
		if o.GetKind() == kind {
			ul.Items = append(ul.Items, *o.DeepCopy())
		}
	}
	return nil
}
