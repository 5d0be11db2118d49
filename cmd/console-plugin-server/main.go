// Command console-plugin-server serves the files of the OpenShift console plugin over HTTPS
// for the console's backend: the key pair of a mounted Secret (written by the OpenShift
// service CA for the plugin's Service), followed through its rotations, and a self-signed
// certificate while the Secret is not there yet.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubevirt/virt-advisor-operator/internal/pluginserver"
	"github.com/kubevirt/virt-advisor-operator/internal/servingcert"
)

func main() {
	dir := flag.String("dir", "/var/www/plugin", "The directory of the plugin's built files (console/dist).")
	addr := flag.String("bind-address", ":9443", "The address to serve HTTPS on.")
	certDir := flag.String("cert-dir", "/var/run/secrets/serving-cert",
		"The directory of the serving certificate's tls.crt and tls.key.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	log := zap.New(zap.UseFlagOptions(&opts))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, *dir, *addr, *certDir); err != nil {
		log.Error(err, "console-plugin-server stopped")
		os.Exit(1)
	}
}

func run(ctx context.Context, log logr.Logger, dir, addr, certDir string) error {
	if _, err := os.Stat(filepath.Join(dir, "plugin-manifest.json")); err != nil {
		return fmt.Errorf("%s holds no plugin: %w", dir, err)
	}
	cert, err := servingcert.New(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"),
		log.WithName("serving-certificate"))
	if err != nil {
		return err
	}
	go func() {
		if err := cert.Start(ctx); err != nil {
			log.Error(err, "following the serving certificate")
		}
	}()
	server := &http.Server{
		Addr:              addr,
		Handler:           pluginserver.Handler(dir),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cert.GetCertificate},
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	log.Info("serving the console plugin", "dir", dir, "address", addr)
	if err := server.ListenAndServeTLS("", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
