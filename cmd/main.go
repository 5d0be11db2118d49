// Command manager runs the virt advisor operator.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	// The time zones of maintenance windows (internal/schedule) load from this embedded copy of
	// the IANA database when the image has no /usr/share/zoneinfo: the manager does not depend
	// on its base image for them. Go's documentation has programs, not libraries, import it.
	_ "time/tzdata"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubevirt/virt-advisor-operator/internal/advertise"
	"github.com/kubevirt/virt-advisor-operator/internal/controller"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/baseline"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/higherdensity"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/servingcert"
	"github.com/kubevirt/virt-advisor-operator/internal/version"
	"github.com/kubevirt/virt-advisor-operator/internal/watches"
)

func main() {
	var (
		metricsAddr, probeAddr, pprofAddr, leaderElectionNamespace, namespace string
		metricsCertPath, metricsCertName, metricsCertKey                      string
		enableLeaderElection, secureMetrics, enableHTTP2                      bool
		advertiseProfiles, showVersion                                        bool
		healthPoll                                                            time.Duration
		lease                                                                 leaseDurations
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "Address of the metrics endpoint "+
		"(HTTPS with authentication and authorization unless --metrics-secure=false); 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081",
		"Address of the /healthz and /readyz probes; 0 disables them.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "0",
		"Address of the Go profiler's /debug/pprof/ endpoints (plain HTTP, no authentication), "+
			"for diagnosis only; 0 disables them.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false, "Elect a leader, so that only one replica acts at a time.")
	flag.DurationVar(&lease.duration, "leader-elect-lease-duration", 15*time.Second,
		"How long a standby waits, after the leader last renewed its lease, before it takes over.")
	flag.DurationVar(&lease.renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew its lease before it stops acting; shorter than the lease duration.")
	flag.DurationVar(&lease.retryPeriod, "leader-elect-retry-period", 2*time.Second,
		"How often the leader renews its lease and a standby tries to take it; shorter than the renew deadline.")
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election lease (default: the operator's namespace).")
	flag.StringVar(&namespace, "namespace", os.Getenv("POD_NAMESPACE"),
		"The operator's own namespace (default: $POD_NAMESPACE, else the service account's).")
	flag.BoolVar(&secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS with authentication and authorization.")
	flag.StringVar(&metricsCertPath, "metrics-cert-path", "",
		"Directory of the metrics endpoint's serving certificate (a mounted Secret). While it holds no valid key pair, "+
			"a self-signed certificate is served and the directory is looked at again every 10s. Empty: always self-signed.")
	flag.StringVar(&metricsCertName, "metrics-cert-name", "tls.crt",
		"File name of the metrics certificate in --metrics-cert-path.")
	flag.StringVar(&metricsCertKey, "metrics-cert-key", "tls.key", "File name of the metrics key in --metrics-cert-path.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false,
		"Allow HTTP/2 on the metrics endpoint (off by default: HTTP/2 rapid reset).")
	flag.BoolVar(&advertiseProfiles, "advertise-profiles", true,
		"Create one VirtPlatformConfig with action Ignore per profile, so every profile shows in `kubectl get vpc`.")
	flag.DurationVar(&healthPoll, "health-poll-interval", 10*time.Second,
		"How often an applied item that is still rolling out (a MachineConfigPool) is checked.")
	flag.BoolVar(&showVersion, "version", false, "Print the version and exit.")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()

	if showVersion {
		fmt.Println(version.Version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")
	if err := lease.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(runOptions{
		metricsAddr: metricsAddr, probeAddr: probeAddr, pprofAddr: pprofAddr, leaderElection: enableLeaderElection,
		leaderElectionNamespace: leaderElectionNamespace, namespace: operatorNamespace(namespace),
		secureMetrics: secureMetrics, enableHTTP2: enableHTTP2, advertise: advertiseProfiles, healthPoll: healthPoll,
		lease: lease, metricsCertPath: metricsCertPath, metricsCertName: metricsCertName, metricsCertKey: metricsCertKey,
	}); err != nil {
		log.Error(err, "the manager stopped")
		os.Exit(1)
	}
}

type runOptions struct {
	metricsAddr, probeAddr, pprofAddr, leaderElectionNamespace, namespace string
	metricsCertPath, metricsCertName, metricsCertKey                      string
	leaderElection, secureMetrics, enableHTTP2, advertise                 bool
	healthPoll                                                            time.Duration
	lease                                                                 leaseDurations
}

// leaseDurations time the leader election.
type leaseDurations struct {
	duration, renewDeadline, retryPeriod time.Duration
}

// validate refuses durations with which a leader would lose its lease while still acting,
// or never renew it in time.
func (l leaseDurations) validate() error {
	switch {
	case l.retryPeriod <= 0:
		return fmt.Errorf("--leader-elect-retry-period must be positive, not %s", l.retryPeriod)
	case l.renewDeadline <= l.retryPeriod:
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be longer than --leader-elect-retry-period (%s)",
			l.renewDeadline, l.retryPeriod)
	case l.duration <= l.renewDeadline:
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be longer than --leader-elect-renew-deadline (%s)",
			l.duration, l.renewDeadline)
	}
	return nil
}

func run(o runOptions) error {
	log := ctrl.Log.WithName("setup")
	log.Info("starting", "version", version.Version)

	registry, err := profiles.NewRegistry(loadaware.New(), higherdensity.New(), baseline.New())
	if err != nil {
		return err
	}

	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	var metricsCert *servingcert.Certificate
	if o.secureMetrics && o.metricsCertPath != "" {
		metricsCert, err = servingcert.New(filepath.Join(o.metricsCertPath, o.metricsCertName),
			filepath.Join(o.metricsCertPath, o.metricsCertKey), ctrl.Log.WithName("metrics-certificate"))
		if err != nil {
			return err
		}
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.GetCertificate = metricsCert.GetCertificate })
	}
	metricsOpts := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.secureMetrics, TLSOpts: tlsOpts}
	if o.secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	leaseNamespace := o.leaderElectionNamespace
	if leaseNamespace == "" {
		leaseNamespace = o.namespace
	}

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  controller.NewScheme(),
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  o.probeAddr,
		PprofBindAddress:        o.pprofAddr,
		LeaderElection:          o.leaderElection,
		LeaderElectionID:        "virt-advisor-operator.advisor.kubevirt.io",
		LeaderElectionNamespace: leaseNamespace,
		LeaseDuration:           &o.lease.duration,
		RenewDeadline:           &o.lease.renewDeadline,
		RetryPeriod:             &o.lease.retryPeriod,
		Cache:                   watches.CacheOptions(),
	})
	if err != nil {
		return fmt.Errorf("create the manager: %w", err)
	}

	if metricsCert != nil {
		if err := mgr.Add(metricsCert); err != nil {
			return err
		}
	}

	reconciler := &controller.VirtPlatformConfigReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Profiles:  registry,
		Engine:    &plan.Engine{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient()},
		Recorder:  mgr.GetEventRecorder("virt-advisor-operator"),
		Version:   version.Version,

		HealthPollInterval: o.healthPoll,
	}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the controller: %w", err)
	}
	if o.advertise {
		if o.namespace == "" {
			log.Info("not advertising profiles: the operator's namespace is unknown (set --namespace or POD_NAMESPACE)")
		} else if err := mgr.Add(&advertise.Advertiser{
			Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Profiles: registry,
			Namespace: o.namespace, Log: ctrl.Log.WithName("advertiser"),
		}); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// operatorNamespace is the flag's value, else the namespace of the pod's service account.
func operatorNamespace(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
