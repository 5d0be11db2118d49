package targets

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// This file answers, in one place, whether the cluster serves a version of a third-party
// kind: from the kind's CRD, which says so the moment it changes (a cached discovery
// answer may still name a version the CRD no longer serves).

// ServesVersion tells whether crd serves the API version named version.
func ServesVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	_, ok := servedVersion(crd, version)
	return ok
}

func servedVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) (*apiextensionsv1.CustomResourceDefinitionVersion, bool) {
	for i := range crd.Spec.Versions {
		if v := &crd.Spec.Versions[i]; v.Name == version && v.Served {
			return v, true
		}
	}
	return nil, false
}

// ServedVersion is the best version the operator can use for the kind (see Kind.Versions)
// that crd serves; ok is false when it serves none of them.
func (k Kind) ServedVersion(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinitionVersion, bool) {
	for _, candidate := range k.usableVersions() {
		if v, ok := servedVersion(crd, candidate); ok {
			return v, true
		}
	}
	return nil, false
}

// ReadCRD reads the kind's CRD; nil when it is not installed.
func (k Kind) ReadCRD(ctx context.Context, reader client.Reader) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := reader.Get(ctx, types.NamespacedName{Name: k.CRD}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read CRD %s: %w", k.CRD, err)
	}
	return crd, nil
}

// ReadServedVersion reads the kind's CRD and returns the best version of the kind it
// serves (see ServedVersion); "" when the CRD is not installed or serves none the
// operator can use.
func (k Kind) ReadServedVersion(ctx context.Context, reader client.Reader) (string, error) {
	crd, err := k.ReadCRD(ctx, reader)
	if err != nil || crd == nil {
		return "", err
	}
	if v, ok := k.ServedVersion(crd); ok {
		return v.Name, nil
	}
	return "", nil
}

// Serves reads the kind's CRD and tells whether it serves version: false when the CRD is
// not installed or is being deleted.
func (k Kind) Serves(ctx context.Context, reader client.Reader, version string) (bool, error) {
	crd, err := k.ReadCRD(ctx, reader)
	if err != nil || crd == nil {
		return false, err
	}
	return crd.DeletionTimestamp.IsZero() && ServesVersion(crd, version), nil
}
