// Package profiles defines what a tuning profile is and keeps the registry of the
// profiles this operator ships. The controller only sees the Profile interface, so adding
// a profile needs no controller code. It does touch more than its own package:
//
//   - api/v1alpha1: the ProfileName enum (the +kubebuilder:validation:Enum marker and a
//     constant), an options struct with a doc comment and markers on every field, its
//     block in ProfileOptions, and a CEL rule on VirtPlatformConfigSpec that allows the
//     block only with its profile; then `make manifests generate build-installer`, and
//     admission specs in api/v1alpha1/validation_test.go;
//   - cmd/main.go: its line in profiles.NewRegistry;
//   - internal/cli: the profile names the kubectl plugin accepts (Profiles);
//   - internal/targets: every third-party kind it reads or writes (GVK, CRD, the operator
//     that installs it, its health check) and the field paths it uses; CRD and kind names
//     are spelled nowhere else;
//   - its own RBAC markers, which controller-gen collects into the manager's role;
//   - a defaulting fuzz target in this directory, and its line in the Makefile's fuzz
//     target;
//   - docs/profiles.md, a page in docs/guide listed in test/guide's pageOrder (the guide's
//     commands are run as a test), and a sample in config/samples.
//
// Each profile package has the same shape. Render (the Profile method) defaults the
// options, then is ReadAndRender of the package's two halves:
//
//	func ReadInputs(ctx context.Context, reader client.Reader, o *advisorv1alpha1.<Block>Options) (Inputs, error)
//	func RenderItems(o *advisorv1alpha1.<Block>Options, in Inputs) ([]plan.Item, error)
//
// ReadInputs reads the cluster once, only what the options need, into the package's typed
// Inputs; RenderItems is a pure function of the options and those inputs, tested by tables
// against golden files in testdata/render ("when X, it should Y"). The package's envtest
// specs test only what needs the API server: what ReadInputs reads, server-side dry-runs
// against the real CRDs, and that Defaults fills in what the CRD defaults.
package profiles

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// Prerequisite is a CRD a profile cannot plan without, and the operator that installs it.
type Prerequisite struct {
	// CRD is the CustomResourceDefinition name, e.g. kubedeschedulers.operator.openshift.io.
	CRD string
	// Operator is what the administrator installs to get the CRD, e.g. "the Kube Descheduler Operator".
	Operator string
}

// Profile is one set of tuning changes.
type Profile interface {
	// Name is the profile's name, also the name of its VirtPlatformConfig.
	Name() advisorv1alpha1.ProfileName
	// Description says in one or two sentences what the profile is for.
	Description() string
	// ImpactSummary says what applying the profile disrupts (reboots, restarts).
	ImpactSummary() string
	// Prerequisites are the CRDs without which the profile cannot draft a plan at all
	// with these options (components that are optional are Skipped items instead).
	Prerequisites(opts *advisorv1alpha1.ProfileOptions) []Prerequisite
	// WatchedCRDs are the CRDs whose arrival, removal or schema change can change the plan.
	WatchedCRDs() []string
	// Defaults returns the options with every unset field at its default, the same
	// defaults the CRD declares; the input is not modified.
	Defaults(opts *advisorv1alpha1.ProfileOptions) *advisorv1alpha1.ProfileOptions
	// Validate checks defaulted options for what admission cannot check.
	Validate(opts *advisorv1alpha1.ProfileOptions) error
	// Render reads what it needs from the cluster through reader (a plan.Recorder, which
	// reads uncached and records what the plan depends on) and returns the plan's items in
	// execution order: ReadAndRender of the package's ReadInputs and RenderItems, on the
	// defaulted options. A *PrerequisiteError means the cluster lacks something the
	// administrator has to install or change.
	Render(ctx context.Context, reader client.Reader, opts *advisorv1alpha1.ProfileOptions) ([]plan.Item, error)
}

// ReadAndRender is every profile's Render on its defaulted option block o: read reads the
// cluster into the profile's typed inputs, render turns o and those inputs into the items.
// Its parameters spell out the shape of each profile package's ReadInputs and RenderItems.
func ReadAndRender[Options, Inputs any](ctx context.Context, reader client.Reader, o Options,
	read func(context.Context, client.Reader, Options) (Inputs, error),
	render func(Options, Inputs) ([]plan.Item, error)) ([]plan.Item, error) {
	in, err := read(ctx, reader, o)
	if err != nil {
		return nil, err
	}
	return render(o, in)
}

// PrerequisiteError says what the cluster lacks for a profile and what to do about it.
type PrerequisiteError = targets.PrerequisiteError

// IsPrerequisiteError tells whether err is, or wraps, a *PrerequisiteError.
func IsPrerequisiteError(err error) bool { return targets.IsPrerequisiteError(err) }

// Registry holds the profiles by name.
type Registry struct {
	byName map[advisorv1alpha1.ProfileName]Profile
}

// NewRegistry registers the given profiles; two with one name is a programming error.
func NewRegistry(ps ...Profile) (*Registry, error) {
	r := &Registry{byName: map[advisorv1alpha1.ProfileName]Profile{}}
	for _, p := range ps {
		if _, dup := r.byName[p.Name()]; dup {
			return nil, fmt.Errorf("profile %q registered twice", p.Name())
		}
		r.byName[p.Name()] = p
	}
	return r, nil
}

// Get returns the named profile.
func (r *Registry) Get(name advisorv1alpha1.ProfileName) (Profile, bool) {
	p, ok := r.byName[name]
	return p, ok
}

// All returns the profiles sorted by name.
func (r *Registry) All() []Profile {
	out := make([]Profile, 0, len(r.byName))
	for _, p := range r.byName {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// CheckPrerequisites reads each prerequisite CRD: a *PrerequisiteError says what to
// install for the missing ones.
func CheckPrerequisites(ctx context.Context, reader client.Reader, prereqs []Prerequisite) error {
	var missing []string
	for _, p := range prereqs {
		err := reader.Get(ctx, types.NamespacedName{Name: p.CRD}, &apiextensionsv1.CustomResourceDefinition{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, fmt.Sprintf("CRD %s is missing: install %s", p.CRD, p.Operator))
		case err != nil:
			return fmt.Errorf("read CRD %s: %w", p.CRD, err)
		}
	}
	if len(missing) > 0 {
		return &PrerequisiteError{Message: strings.Join(missing, "; ")}
	}
	return nil
}
