package servingcert_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor-operator/internal/servingcert"
	"github.com/kubevirt/virt-advisor-operator/test/testca"
)

const serviceName = "metrics.operator.svc"

// served is the leaf certificate c serves.
func served(g Gomega, c *servingcert.Certificate) *x509.Certificate {
	cert, err := c.GetCertificate(&tls.ClientHelloInfo{ServerName: serviceName})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cert).NotTo(BeNil())
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	g.Expect(err).NotTo(HaveOccurred())
	return leaf
}

// verifies tells whether leaf is a certificate for the Service signed by ca.
func verifies(leaf *x509.Certificate, ca *testca.CA) error {
	_, err := leaf.Verify(x509.VerifyOptions{DNSName: serviceName, Roots: ca.Pool()})
	return err
}

func start(t *testing.T, c *servingcert.Certificate) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v", err)
		}
	})
}

func TestServesSelfSignedCertificateForLocalhostWhileTheDirectoryIsEmpty(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	c, err := servingcert.New(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())

	leaf := served(g, c)
	g.Expect(leaf.DNSNames).To(ContainElement("localhost"))
	g.Expect(c.FromFiles()).To(BeFalse())
}

func TestServesTheKeyPairOfTheDirectoryFromTheFirstHandshake(t *testing.T) {
	g := NewWithT(t)
	ca, err := testca.New("service-ca")
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	g.Expect(ca.WriteServingSecret(dir, 2, serviceName)).To(Succeed())

	c, err := servingcert.New(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(c.FromFiles()).To(BeTrue())
	g.Expect(verifies(served(g, c), ca)).To(Succeed())
}

func TestServesTheKeyPairOnceItAppearsInTheDirectory(t *testing.T) {
	g := NewWithT(t)
	ca, err := testca.New("service-ca")
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	c, err := servingcert.New(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	start(t, c.WithPollInterval(50*time.Millisecond))
	g.Expect(verifies(served(g, c), ca)).NotTo(Succeed())

	g.Expect(ca.WriteServingSecret(dir, 2, serviceName)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(verifies(served(g, c), ca)).To(Succeed())
	}).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
}

func TestServesTheRotatedKeyPair(t *testing.T) {
	g := NewWithT(t)
	ca, err := testca.New("service-ca")
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	g.Expect(ca.WriteServingSecret(dir, 2, serviceName)).To(Succeed())
	c, err := servingcert.New(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	start(t, c)
	g.Expect(served(g, c).SerialNumber.Int64()).To(BeEquivalentTo(2))

	g.Expect(ca.WriteServingSecret(dir, 3, serviceName)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(served(g, c).SerialNumber.Int64()).To(BeEquivalentTo(3))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}

func TestKeepsServingSelfSignedWhenTheDirectoryHoldsNoValidKeyPair(t *testing.T) {
	g := NewWithT(t)
	ca, err := testca.New("service-ca")
	g.Expect(err).NotTo(HaveOccurred())
	other, err := testca.New("other")
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	// A certificate with the key of another one.
	g.Expect(ca.WriteServingSecret(dir, 2, serviceName)).To(Succeed())
	mismatched := t.TempDir()
	g.Expect(other.WriteServingSecret(mismatched, 2, serviceName)).To(Succeed())

	c, err := servingcert.New(filepath.Join(dir, "tls.crt"), filepath.Join(mismatched, "tls.key"), logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(c.FromFiles()).To(BeFalse())
	g.Expect(served(g, c).DNSNames).To(ContainElement("localhost"))
}
