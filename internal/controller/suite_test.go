package controller_test

import (
	"context"
	"fmt"
	"io"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubevirt/virt-advisor-operator/internal/controller"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/internal/throttle"
	"github.com/kubevirt/virt-advisor-operator/internal/watches"
	"github.com/kubevirt/virt-advisor-operator/test/poolsim"
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
	// faults makes the operator's requests fail, as a crash or an unreachable API server
	// would, on the wire.
	faults = &faultInjector{}
	// restConfig reaches the test control plane.
	restConfig *rest.Config
	// stopRunning stops the running manager and waits until it stopped.
	stopRunning func()
	// mco plays the Machine Config Operator when a spec says so (rolloutPool, degradePool).
	mco *poolsim.Simulator
)

// startManager starts the operator as a fresh process would: a new manager, cache,
// reconciler and throttle, knowing only what the API server holds.
func startManager() {
	GinkgoHelper()
	operatorCfg := rest.CopyConfig(restConfig)
	operatorCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return requests.wrap(oracle.wrap(hooks.wrap(faults.wrap(rt))))
	})
	mgr, err := ctrl.NewManager(operatorCfg, ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Cache:                  watches.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A restarted manager registers the same controller name again.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
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
		DriftThrottle:      throttle.New(2, time.Minute, 3),
		Now:                clock.Now,
	}
	Expect(reconciler.SetupWithManager(mgr)).To(Succeed())
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mgrCtx)).To(Succeed())
	}()
	stopRunning = func() {
		stop()
		<-done
	}
}

// stopManager stops the operator, as a killed process stops: whatever it was doing is
// cut off where it was.
func stopManager() {
	if stopRunning != nil {
		stopRunning()
		stopRunning = nil
	}
}

// restartManager stops the operator and starts a fresh one.
func restartManager() {
	GinkgoHelper()
	stopManager()
	startManager()
}

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
	env, err = testenv.New(testenv.ClusterCRDs()...)
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

	restConfig = cfg
	mco, err = poolsim.New(cfg, poolsim.Options{Out: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	// virt-higher-density stays unregistered here: it is the profile this test operator
	// does not implement (its own specs are in internal/profiles/higherdensity and the e2e).
	registry, err = profiles.NewRegistry(loadaware.New(), densityProbe{})
	Expect(err).NotTo(HaveOccurred())
	startManager()

	kubectl("apply", "-f", testenv.Path("config", "samples", "mock_baseline_resources.yaml"))
	rolloutPool()
	go observePools(ctx)
})

var _ = AfterSuite(func() {
	stopManager()
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
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	return cmd
}

// workerMachines is how many machines the worker pool reports.
const workerMachines = 3

// rolloutPool plays the Machine Config Operator: the worker pool renders the
// MachineConfigs it selects and reports Updated on them on all its machines.
func rolloutPool() {
	GinkgoHelper()
	Expect(rollOutWorkers()).To(Succeed())
}

// rollOutWorkers is rolloutPool for code that cannot fail a spec (a request hook): it
// returns what went wrong.
func rollOutWorkers() error {
	return mco.RollOutOnce(ctx, "worker", workerMachines)
}

// observePools plays the part of the Machine Config Operator that every sync of a pool
// does: it reports the pool's latest generation as observed (a pause, a resume), and
// nothing else. When a rollout finishes stays the tests' choice (rolloutPool).
func observePools(ctx context.Context) {
	defer GinkgoRecover()
	for ctx.Err() == nil {
		pools := &unstructured.UnstructuredList{}
		pools.SetGroupVersionKind(targets.MachineConfigPool.ListGVK("v1"))
		if err := k8s.List(ctx, pools); err == nil {
			for i := range pools.Items {
				pool := &pools.Items[i]
				observed, _, _ := unstructured.NestedInt64(pool.Object, "status", "observedGeneration")
				if observed == pool.GetGeneration() {
					continue
				}
				patch := fmt.Sprintf(`{"status":{"observedGeneration":%d}}`, pool.GetGeneration())
				_ = k8s.Status().Patch(ctx, pool, client.RawPatch(types.MergePatchType, []byte(patch)))
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// degradePool reports the worker pool Degraded: a machine of it fails to apply the
// configuration the pool targets, with message as its reason.
func degradePool(message string) {
	GinkgoHelper()
	Expect(mco.DegradeOnce(ctx, "worker", workerMachines, message)).To(Succeed())
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
	mu         sync.Mutex
	kind, name string
	count      int
}

// failNext makes the next n reads of kind fail with 503 Service Unavailable.
func (f *faultyReader) failNext(kind string, n int) {
	f.failNamed(kind, "", n)
}

// failNamed makes the next n reads of the object of kind named name (any name when empty)
// fail with 503 Service Unavailable.
func (f *faultyReader) failNamed(kind, name string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kind, f.name, f.count = kind, name, n
}

func (f *faultyReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		gvk, _ := apiutil.GVKForObject(obj, testenv.Scheme())
		kind = gvk.Kind
	}
	f.mu.Lock()
	fail := kind == f.kind && (f.name == "" || f.name == key.Name) && f.count > 0
	if fail {
		f.count--
	}
	f.mu.Unlock()
	if fail {
		return apierrors.NewServiceUnavailable("injected: the API server is overloaded")
	}
	return f.Reader.Get(ctx, key, obj, opts...)
}

// faultInjector fails chosen requests of the operator on the wire.
type faultInjector struct {
	mu    sync.Mutex
	rules []*faultRule
}

// faultRule fails requests whose method and path match, after a request matching after
// (when set) went through, up to count times.
type faultRule struct {
	method, pathFragment string
	after                *faultRule
	count                int
	seen                 bool
	// notServed: a matching request is answered as the API server answers for a resource
	// it does not serve (404, "404 page not found") instead of losing its connection.
	notServed bool
	// fired is closed when the rule failed its first request.
	fired chan struct{}
}

// failRequests makes the next count requests with that method and path fragment fail as if
// the connection to the API server was lost, once a request matching after (if any) went
// through.
func (f *faultInjector) failRequests(method, pathFragment string, count int, after *faultRule) *faultRule {
	return f.add(&faultRule{method: method, pathFragment: pathFragment, count: count, after: after, fired: make(chan struct{})})
}

// answerNotServed makes the next count requests with that method and path fragment get the
// API server's answer for a resource it does not serve.
func (f *faultInjector) answerNotServed(method, pathFragment string, count int) *faultRule {
	return f.add(&faultRule{method: method, pathFragment: pathFragment, count: count, notServed: true, fired: make(chan struct{})})
}

func (f *faultInjector) add(r *faultRule) *faultRule {
	f.mu.Lock()
	f.rules = append(f.rules, r)
	f.mu.Unlock()
	return r
}

// passed tells whether a request matching r went through since r was added.
func (f *faultInjector) passed(r *faultRule) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return r.seen
}

// watchFor records when a request matching method and path went through.
func (f *faultInjector) watchFor(method, pathFragment string) *faultRule {
	return f.failRequests(method, pathFragment, 0, nil)
}

// clear removes every rule.
func (f *faultInjector) clear() {
	f.mu.Lock()
	f.rules = nil
	f.mu.Unlock()
}

func (r *faultRule) matches(req *http.Request) bool {
	return req.Method == r.method && strings.Contains(req.URL.Path, r.pathFragment) && req.URL.Query().Get("dryRun") == ""
}

func (f *faultInjector) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		f.mu.Lock()
		var fail *faultRule
		for _, r := range f.rules {
			if r.count > 0 && r.matches(req) && (r.after == nil || r.after.seen) {
				r.count--
				fail = r
				break
			}
		}
		f.mu.Unlock()
		if fail != nil {
			select {
			case <-fail.fired:
			default:
				close(fail.fired)
			}
			if fail.notServed {
				return &http.Response{
					Status: "404 Not Found", StatusCode: http.StatusNotFound, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
					Header:  http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "X-Content-Type-Options": {"nosniff"}},
					Body:    io.NopCloser(strings.NewReader("404 page not found\n")),
					Request: req,
				}, nil
			}
			return nil, fmt.Errorf("injected: connection to the API server lost")
		}
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode < 300 {
			f.mu.Lock()
			for _, r := range f.rules {
				if r.matches(req) {
					r.seen = true
				}
			}
			f.mu.Unlock()
		}
		return resp, err
	})
}
