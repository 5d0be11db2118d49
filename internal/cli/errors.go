package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// Profiles are the profile names the operator knows; a VirtPlatformConfig is named after its
// profile.
var Profiles = []advisorv1alpha1.ProfileName{
	advisorv1alpha1.ProfileLoadAwareRebalancing,
	advisorv1alpha1.ProfileVirtHigherDensity,
	advisorv1alpha1.ProfilePlatformBaseline,
}

func isProfile(name string) bool {
	for _, p := range Profiles {
		if string(p) == name {
			return true
		}
	}
	return false
}

func profileList() string {
	names := make([]string, 0, len(Profiles))
	for _, p := range Profiles {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

// errNotInstalled is returned when the cluster does not serve VirtPlatformConfigs.
var errNotInstalled = errors.New("the virt-advisor-operator is not installed in this cluster: " +
	"the API server does not serve VirtPlatformConfigs (advisor.kubevirt.io/v1alpha1). Install it with its Helm chart " +
	"(helm install virt-advisor-operator dist/chart --namespace virt-advisor-operator-system --create-namespace) " +
	"or with kubectl apply --server-side -f dist/install.yaml")

// explain turns an API error into one that says what to do.
func explain(err error) error {
	if err == nil {
		return nil
	}
	if meta.IsNoMatchError(err) || isNoMatch(err) {
		return errNotInstalled
	}
	return err
}

func isNoMatch(err error) bool {
	var kind *meta.NoKindMatchError
	var resource *meta.NoResourceMatchError
	return errors.As(err, &kind) || errors.As(err, &resource)
}

// getConfig reads the VirtPlatformConfig name; an unknown name lists the configs that exist
// and the valid profile names.
func getConfig(ctx context.Context, c client.Client, name string) (*advisorv1alpha1.VirtPlatformConfig, error) {
	vpc := &advisorv1alpha1.VirtPlatformConfig{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, vpc)
	if err == nil {
		return vpc, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, explain(err)
	}
	list := &advisorv1alpha1.VirtPlatformConfigList{}
	if lerr := c.List(ctx, list); lerr != nil {
		return nil, explain(lerr)
	}
	return nil, notFound(name, list.Items)
}

// notFound says that no VirtPlatformConfig is named name, and which ones exist.
func notFound(name string, existing []advisorv1alpha1.VirtPlatformConfig) error {
	var b strings.Builder
	fmt.Fprintf(&b, "no VirtPlatformConfig %q", name)
	if isProfile(name) {
		fmt.Fprintf(&b, " (the profile exists, but its config was deleted; create it with: kubectl %s dry-run %s)", PluginName, name)
	} else {
		fmt.Fprintf(&b, ": %q is not a profile", name)
	}
	names := make([]string, 0, len(existing))
	for _, v := range existing {
		names = append(names, fmt.Sprintf("%s (%s)", v.Name, orDash(string(v.Status.Phase))))
	}
	sort.Strings(names)
	if len(names) == 0 {
		b.WriteString(". There are no VirtPlatformConfigs")
	} else {
		b.WriteString(". Existing VirtPlatformConfigs: " + strings.Join(names, ", "))
	}
	b.WriteString(". Valid profile names: " + profileList())
	return &notFoundError{msg: b.String()}
}

// notFoundError says that a VirtPlatformConfig does not exist.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func isNotFound(err error) bool {
	var nf *notFoundError
	return errors.As(err, &nf)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
