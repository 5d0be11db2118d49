package faults

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// proxy stands between a manager and the API server, on the wire: it records every
// request and lets a spec answer one itself (a 409) or hold it (to stop the API server
// while a write is on its way). When the API server cannot be reached, it drops the
// client's connection, as a stopped API server does.
type proxy struct {
	server *httptest.Server

	mu  sync.Mutex
	log []proxyEntry
	// intercept, when set, decides on each request before it is forwarded.
	intercept func(r *http.Request) verdict
}

// verdict is what intercept decided.
type verdict int

const (
	forward verdict = iota
	// answerConflict answers 409 Conflict without forwarding.
	answerConflict
	// dropConnection drops the client's connection without forwarding: the request is lost
	// on its way, as when the API server goes away under it.
	dropConnection
)

// proxyEntry is one request as the proxy saw it.
type proxyEntry struct {
	Method, Path, Query string
	// Code is the response's status code; 0 when the connection was dropped.
	Code int
	// Injected is set on the answers the proxy made up.
	Injected bool
	Start    time.Time
}

func (e proxyEntry) String() string {
	injected := ""
	if e.Injected {
		injected = " (injected)"
	}
	return fmt.Sprintf("%s %s %s %d%s", e.Start.Format("15:04:05.000"), e.Method, e.Path, e.Code, injected)
}

// startProxy starts a proxy to the API server that forwards with the credentials of user.
func startProxy(user string) *proxy {
	GinkgoHelper()
	upstream, err := env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	cfg := upstream.Config()
	target, err := url.Parse(cfg.Host)
	Expect(err).NotTo(HaveOccurred())
	transport, err := rest.TransportFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	p := &proxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	// Watches stream: every event is passed on at once.
	rp.FlushInterval = -1
	rp.ErrorHandler = func(http.ResponseWriter, *http.Request, error) {
		// The API server is gone: the client sees its connection drop.
		panic(http.ErrAbortHandler)
	}
	p.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := proxyEntry{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Start: time.Now()}
		rec := &codeRecorder{ResponseWriter: w}
		defer func() {
			e.Code = rec.code
			p.mu.Lock()
			p.log = append(p.log, e)
			p.mu.Unlock()
		}()
		p.mu.Lock()
		intercept := p.intercept
		p.mu.Unlock()
		v := forward
		if intercept != nil {
			v = intercept(r)
		}
		switch v {
		case answerConflict:
			e.Injected = true
			writeConflict(rec, r)
		case dropConnection:
			e.Injected = true
			panic(http.ErrAbortHandler)
		default:
			rp.ServeHTTP(rec, r)
		}
	}))
	DeferCleanup(p.server.Close)
	return p
}

// setIntercept installs (or, with nil, removes) the interceptor.
func (p *proxy) setIntercept(f func(r *http.Request) verdict) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.intercept = f
}

// entries returns the requests recorded so far, in the order their responses ended.
func (p *proxy) entries() []proxyEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]proxyEntry(nil), p.log...)
}

// kubeconfig writes a kubeconfig that reaches the API server through the proxy.
func (p *proxy) kubeconfig(name string) string {
	GinkgoHelper()
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"proxy": {Server: p.server.URL}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"proxy": {}},
		Contexts:       map[string]*clientcmdapi.Context{"proxy": {Cluster: "proxy", AuthInfo: "proxy"}},
		CurrentContext: "proxy",
	}
	path := filepath.Join(workDir, name+".kubeconfig")
	Expect(clientcmd.WriteToFile(cfg, path)).To(Succeed())
	return path
}

// writeConflict answers as the API server answers a write guarded by a resourceVersion
// that is no longer current.
func writeConflict(w http.ResponseWriter, r *http.Request) {
	name := ""
	if parts := strings.Split(strings.TrimSuffix(r.URL.Path, "/status"), "/"); len(parts) > 0 {
		name = parts[len(parts)-1]
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusConflict)
	_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",`+
		`"message":"Operation cannot be fulfilled on virtplatformconfigs.advisor.kubevirt.io \"%s\": `+
		`the object has been modified; please apply your changes to the latest version and try again",`+
		`"reason":"Conflict","details":{"name":"%s","group":"advisor.kubevirt.io","kind":"virtplatformconfigs"},"code":409}`,
		name, name)
}

// codeRecorder remembers the status code of a response and passes flushes on.
type codeRecorder struct {
	http.ResponseWriter
	code int
}

func (c *codeRecorder) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *codeRecorder) Write(b []byte) (int, error) {
	if c.code == 0 {
		c.code = http.StatusOK
	}
	return c.ResponseWriter.Write(b)
}

func (c *codeRecorder) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *codeRecorder) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// configPath is the API path of a VirtPlatformConfig.
func configPath(name string) string {
	return "/apis/advisor.kubevirt.io/v1alpha1/virtplatformconfigs/" + name
}

// isStatusPatch tells a status write of the config through the proxy.
func isStatusPatch(r *http.Request, config string) bool {
	return r.Method == http.MethodPatch && r.URL.Path == configPath(config)+"/status"
}
