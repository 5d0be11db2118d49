package cluster

import (
	"context"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubevirt/virt-advisor-operator/internal/controller"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/internal/watches"
)

// RunOperator runs the operator's reconciler in this process against cfg, with the profiles
// given, until ctx ends, as the manager binary runs it but without metrics, probes or leader
// election, and polling the health of applied items every 200ms. The channel receives what
// the manager's Start returned once it stopped.
func RunOperator(ctx context.Context, cfg *rest.Config, ps ...profiles.Profile) (<-chan error, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Cache:                  watches.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	registry, err := profiles.NewRegistry(ps...)
	if err != nil {
		return nil, err
	}
	reconciler := &controller.VirtPlatformConfigReconciler{
		Client:             mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		Profiles:           registry,
		Engine:             &plan.Engine{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient()},
		Recorder:           mgr.GetEventRecorder("virt-advisor-operator"),
		Version:            "v1.0.0-test",
		HealthPollInterval: 200 * time.Millisecond,
	}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return done, nil
}
