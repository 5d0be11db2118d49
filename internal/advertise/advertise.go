// Package advertise makes every profile discoverable with `kubectl get vpc`.
package advertise

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
)

const (
	// DescriptionAnnotation and ImpactSummaryAnnotation describe an advertised profile.
	DescriptionAnnotation   = "advisor.kubevirt.io/description"
	ImpactSummaryAnnotation = "advisor.kubevirt.io/impact-summary"
	// AdvertisedLabel marks a config the operator created to advertise its profile.
	AdvertisedLabel = "advisor.kubevirt.io/advertised"
	// AdvertisedRecordName is the ConfigMap, in the operator's namespace, that remembers
	// which profiles were advertised, so a config the user deleted is not created again.
	AdvertisedRecordName = "virt-advisor-advertised-profiles"
)

// +kubebuilder:rbac:groups="",namespace=system,resources=configmaps,verbs=create
// +kubebuilder:rbac:groups="",namespace=system,resources=configmaps,verbs=get;update,resourceNames=virt-advisor-advertised-profiles

// Advertiser makes every profile discoverable with `kubectl get vpc`: after
// leader election it creates, for each profile that never had one, a VirtPlatformConfig
// with action Ignore and the profile's description. It remembers what it advertised, so
// a config the user deleted stays deleted.
type Advertiser struct {
	Client    client.Client
	Reader    client.Reader
	Profiles  *profiles.Registry
	Namespace string
	Log       logr.Logger
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (a *Advertiser) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable: it advertises once, retrying until it succeeds.
func (a *Advertiser) Start(ctx context.Context) error {
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: time.Second, Factor: 2, Steps: 12, Cap: time.Minute},
		func(ctx context.Context) (bool, error) {
			if err := a.advertise(ctx); err != nil {
				a.Log.Error(err, "advertising the profiles failed; retrying")
				return false, nil
			}
			return true, nil
		})
	if err != nil && ctx.Err() == nil {
		a.Log.Error(err, "gave up advertising the profiles")
	}
	return nil
}

func (a *Advertiser) advertise(ctx context.Context) error {
	record := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: a.Namespace, Name: AdvertisedRecordName}
	err := a.Reader.Get(ctx, key, record)
	exists := err == nil
	if apierrors.IsNotFound(err) {
		record = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: AdvertisedRecordName}}
	} else if err != nil {
		return fmt.Errorf("read ConfigMap %s: %w", key, err)
	}
	if record.Data == nil {
		record.Data = map[string]string{}
	}
	changed := false
	for _, p := range a.Profiles.All() {
		name := string(p.Name())
		if _, done := record.Data[name]; done {
			continue
		}
		spec := advisorv1alpha1.VirtPlatformConfigSpec{Profile: p.Name(), Action: advisorv1alpha1.ActionIgnore}
		lastApplied, err := lastAppliedConfiguration(name, spec)
		if err != nil {
			return err
		}
		vpc := &advisorv1alpha1.VirtPlatformConfig{
			ObjectMeta: metav1.ObjectMeta{
				Name:   name,
				Labels: map[string]string{AdvertisedLabel: "true"},
				Annotations: map[string]string{
					DescriptionAnnotation:              p.Description(),
					ImpactSummaryAnnotation:            p.ImpactSummary(),
					corev1.LastAppliedConfigAnnotation: lastApplied,
				},
			},
			Spec: spec,
		}
		switch err := a.Client.Create(ctx, vpc); {
		case err == nil:
			a.Log.Info("advertised profile", "profile", name)
		case apierrors.IsAlreadyExists(err):
			// The user created it first; it is theirs.
		default:
			return fmt.Errorf("create VirtPlatformConfig %s: %w", name, err)
		}
		record.Data[name] = time.Now().UTC().Format(time.RFC3339)
		changed = true
	}
	switch {
	case !changed:
		return nil
	case exists:
		return a.Client.Update(ctx, record)
	default:
		return a.Client.Create(ctx, record)
	}
}

// lastAppliedConfiguration is what `kubectl create --save-config` records of an advertised
// config: its name and spec. A later `kubectl apply -f` of a sample then merges into it
// without a warning, and keeps the advertisement's label and annotations, which the record
// does not name.
func lastAppliedConfiguration(name string, spec advisorv1alpha1.VirtPlatformConfigSpec) (string, error) {
	raw, err := json.Marshal(map[string]any{
		"apiVersion": advisorv1alpha1.GroupVersion.String(),
		"kind":       "VirtPlatformConfig",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	})
	if err != nil {
		return "", fmt.Errorf("encode the last-applied configuration of %s: %w", name, err)
	}
	return string(raw) + "\n", nil
}
