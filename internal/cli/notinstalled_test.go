package cli

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Against a real API server that does not serve VirtPlatformConfigs, every command says the
// operator is not installed and how to install it.
func TestNotInstalled(t *testing.T) {
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start the control plane (KUBEBUILDER_ASSETS=%q; `make test-unit` sets it): %v", os.Getenv("KUBEBUILDER_ASSETS"), err)
	}
	defer func() { _ = env.Stop() }()
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"status"},
		{"plan", "load-aware-rebalancing"},
		{"history", "load-aware-rebalancing"},
		{"approve", "load-aware-rebalancing"},
		{"dry-run", "load-aware-rebalancing"},
		{"wait", "load-aware-rebalancing", "--for=Completed", "--timeout=5s"},
	} {
		_, errOut, code := run(t, c, args...)
		if code != ExitError || !strings.Contains(errOut, "the virt-advisor-operator is not installed in this cluster") ||
			!strings.Contains(errOut, "dist/chart") || !strings.Contains(errOut, "dist/install.yaml") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}
