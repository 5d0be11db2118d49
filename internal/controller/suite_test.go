package controller_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubevirt/virt-advisor-operator/internal/controller"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

const operatorVersion = "v1.0.0-test"

var (
	ctx    context.Context
	cancel context.CancelFunc
	env    *envtest.Environment
	// k8s is the tests' own client; its requests are not counted.
	k8s client.Client
	// requests records every request the operator sends.
	requests = &requestLog{}
	// clock is the operator's clock; tests move it forward instead of waiting.
	clock = &testClock{}
	// kubeconfig lets the tests drive the cluster with kubectl like an administrator.
	kubeconfig string
	registry   *profiles.Registry
	// profileReader is what the controller and the profiles read through; tests make it
	// fail to play an unavailable API server.
	profileReader *faultyReader
)

func TestController(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	RunSpecs(t, "VirtPlatformConfig controller")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	var err error
	env, err = testenv.New(testenv.OwnCRDs, testenv.BaseCRDs, testenv.DeschedulerCRDs("4.20"))
	Expect(err).NotTo(HaveOccurred())
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	Expect(err).NotTo(HaveOccurred())

	dir, err := os.MkdirTemp("", "virt-advisor-controller-test")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, env.KubeConfig, 0o600)).To(Succeed())

	operatorCfg := rest.CopyConfig(cfg)
	operatorCfg.Wrap(requests.wrap)
	mgr, err := ctrl.NewManager(operatorCfg, ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Cache:                  controller.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())
	registry, err = profiles.NewRegistry(loadaware.New())
	Expect(err).NotTo(HaveOccurred())
	profileReader = &faultyReader{Reader: mgr.GetAPIReader()}
	reconciler := &controller.VirtPlatformConfigReconciler{
		Client:             mgr.GetClient(),
		APIReader:          profileReader,
		Profiles:           registry,
		Engine:             &plan.Engine{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient()},
		Recorder:           mgr.GetEventRecorder("virt-advisor-operator"),
		Version:            operatorVersion,
		HealthPollInterval: 200 * time.Millisecond,
		DriftThrottle:      controller.NewDriftThrottle(2, time.Minute, 3),
		Now:                clock.Now,
	}
	Expect(reconciler.SetupWithManager(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()

	kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
	rolloutPool()
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// kubectl runs the real kubectl of the test control plane and returns its output.
func kubectl(args ...string) string {
	GinkgoHelper()
	out, err := run(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), args...)
	Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), out)
	return out
}

// kubectlApply applies a manifest with kubectl, as an administrator would.
func kubectlApply(manifest string) {
	GinkgoHelper()
	cmd := command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
}

func run(bin string, args ...string) (string, error) {
	out, err := command(bin, args...).CombinedOutput()
	return string(out), err
}

func command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig,
		"KUBECTL="+filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"))
	return cmd
}

// rolloutPool plays the Machine Config Operator: the worker pool renders the
// MachineConfigs it selects and reports Updated.
func rolloutPool() {
	GinkgoHelper()
	out, err := run(testenv.Path("hack", "simulate-pool-rollout.sh"), "worker")
	Expect(err).NotTo(HaveOccurred(), out)
}

// degradePool reports the worker pool Degraded.
func degradePool(message string) {
	GinkgoHelper()
	out, err := run(testenv.Path("hack", "simulate-pool-rollout.sh"), "worker", "--degrade", message)
	Expect(err).NotTo(HaveOccurred(), out)
}

// requestLog records the operator's API requests.
type requestLog struct {
	mu      sync.Mutex
	entries []request
}

type request struct {
	method, path string
	dryRun       bool
	status       int
}

// write tells whether a request changes something on the server.
func (r request) write() bool {
	switch r.method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return !r.dryRun
	}
	return false
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		e := request{method: req.Method, path: req.URL.Path, dryRun: req.URL.Query().Get("dryRun") != ""}
		if resp != nil {
			e.status = resp.StatusCode
		}
		l.mu.Lock()
		l.entries = append(l.entries, e)
		l.mu.Unlock()
		return resp, err
	})
}

// since returns the requests recorded after mark.
func (l *requestLog) since(mark int) []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]request(nil), l.entries[mark:]...)
}

// mark is a position to count requests from.
func (l *requestLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// writesSince lists the write requests after mark whose path contains every fragment.
func (l *requestLog) writesSince(mark int, fragments ...string) []string {
	var out []string
	for _, r := range l.since(mark) {
		if !r.write() {
			continue
		}
		ok := true
		for _, f := range fragments {
			ok = ok && strings.Contains(r.path, f)
		}
		if ok {
			out = append(out, r.method+" "+r.path)
		}
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// testClock is the operator's clock with an offset the tests advance.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// faultyReader fails the next reads of one kind, as an overloaded API server would.
type faultyReader struct {
	client.Reader
	mu    sync.Mutex
	kind  string
	count int
}

// failNext makes the next n reads of kind fail with 503 Service Unavailable.
func (f *faultyReader) failNext(kind string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kind, f.count = kind, n
}

func (f *faultyReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	f.mu.Lock()
	fail := f.count > 0 && obj.GetObjectKind().GroupVersionKind().Kind == f.kind
	if fail {
		f.count--
	}
	f.mu.Unlock()
	if fail {
		return apierrors.NewServiceUnavailable("injected: the API server is overloaded")
	}
	return f.Reader.Get(ctx, key, obj, opts...)
}
