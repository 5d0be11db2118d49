package guide

import (
	"context"
	"os"
	"testing"
)

// TestReadme runs the "sh test" blocks of the repository's README.md, as TestGuide runs the
// guide's, on a control plane of their own: the one the guide runs on, with what `make demo`
// creates before the walkthrough (the samples' mock baseline of OpenShift Virtualization, the
// descheduler and the worker pool, the pool rolled out by the pool simulator).
func TestReadme(t *testing.T) {
	managerBin := os.Getenv("MANAGER_BINARY")
	if managerBin == "" {
		t.Fatal("set MANAGER_BINARY to the manager binary (make test-guide builds it)")
	}
	p, err := readPage(readmePage)
	if err != nil {
		t.Fatalf("%v", err)
	}
	cp := startControlPlane(t, managerBin)
	for _, args := range [][]string{
		{"apply", "-f", "config/samples/mock_baseline_resources.yaml"},
		{"wait", "mcp/worker", "--for=condition=Updated", "--timeout=60s"},
	} {
		if out, err := cp.run(context.Background(), "kubectl", args...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	n := cp.runBlocks(t, p)
	if n == 0 {
		t.Fatalf("%s has no %q block", readmePage, testedInfo)
	}
	t.Logf("ran %d blocks of %s; %d shell blocks are deliberately untested (untestedBlocks)",
		n, readmePage, len(untestedBlocks[readmePage]))
}
