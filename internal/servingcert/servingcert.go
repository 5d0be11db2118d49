// Package servingcert gives the metrics endpoint its serving certificate: the key pair in a
// directory, where a Secret is mounted as an optional volume (the OpenShift service CA or
// cert-manager writes it), and a self-signed certificate for as long as the directory holds
// none. The Secret may appear after the manager started (the service CA signs it once the
// metrics Service exists, and the kubelet fills the volume a moment later): the directory is
// looked at again until it holds a valid pair, which is then served and followed through its
// rotations by controller-runtime's certwatcher.
package servingcert

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-logr/logr"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// DefaultPollInterval is how often a directory without a valid key pair is looked at again.
const DefaultPollInterval = 10 * time.Second

// Certificate is the serving certificate of one endpoint. Its GetCertificate goes into the
// endpoint's tls.Config; Start (a manager.Runnable, run by every replica) picks up a key
// pair that appears later.
type Certificate struct {
	certPath, keyPath string
	pollInterval      time.Duration
	log               logr.Logger
	selfSigned        *tls.Certificate

	mu      sync.RWMutex
	watcher *certwatcher.CertWatcher
}

// New serves the key pair at certPath and keyPath when both files hold one, and a
// self-signed certificate for localhost until they do. It fails only when no self-signed
// certificate can be made.
func New(certPath, keyPath string, log logr.Logger) (*Certificate, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil, "")
	if err != nil {
		return nil, fmt.Errorf("generate the self-signed metrics certificate: %w", err)
	}
	selfSigned, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load the self-signed metrics certificate: %w", err)
	}
	c := &Certificate{certPath: certPath, keyPath: keyPath, pollInterval: DefaultPollInterval, log: log, selfSigned: &selfSigned}
	if err := c.load(); err != nil {
		log.Info("serving a self-signed certificate until the serving certificate is there",
			"cert", certPath, "key", keyPath, "reason", err.Error())
	}
	return c, nil
}

// WithPollInterval changes how often a directory without a valid key pair is looked at.
func (c *Certificate) WithPollInterval(d time.Duration) *Certificate {
	c.pollInterval = d
	return c
}

// GetCertificate implements tls.Config.GetCertificate.
func (c *Certificate) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.RLock()
	w := c.watcher
	c.mu.RUnlock()
	if w == nil {
		return c.selfSigned, nil
	}
	return w.GetCertificate(hello)
}

// FromFiles tells whether the key pair of the files is served (not the self-signed one).
func (c *Certificate) FromFiles() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.watcher != nil
}

// Start implements manager.Runnable: it waits for a valid key pair in the files, then
// follows it until ctx ends.
func (c *Certificate) Start(ctx context.Context) error {
	ticker := time.NewTicker(c.pollInterval)
	defer ticker.Stop()
	for !c.FromFiles() {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			if err := c.load(); err == nil {
				c.log.Info("serving the certificate of the files from now on", "cert", c.certPath)
			}
		}
	}
	c.mu.RLock()
	w := c.watcher
	c.mu.RUnlock()
	return w.Start(ctx)
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: a standby replica serves
// metrics too.
func (c *Certificate) NeedLeaderElection() bool { return false }

// load starts serving the key pair of the files, if they hold a valid one.
func (c *Certificate) load() error {
	w, err := certwatcher.New(c.certPath, c.keyPath)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.watcher = w
	c.mu.Unlock()
	return nil
}
