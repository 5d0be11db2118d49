package fleet

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-advisor-operator/test/cluster"
)

// The pool simulator of each control plane: two workers and a 1-second reboot.
var planeOptions = cluster.PlaneOptions{Workers: 2, RebootTime: time.Second}

// startFleet starts one control plane per name (cluster.StartPlane), and writes a kubeconfig
// with one context per control plane, named after it, the first one current.
func startFleet(t *testing.T, managerBin string, names ...string) (map[string]*cluster.Plane, string) {
	t.Helper()
	// The simulators' informers log through controller-runtime; what they do is in their logs.
	ctrllog.SetLogger(logr.Discard())
	planes := map[string]*cluster.Plane{}
	// The work directories are made first: they are removed after everything stopped.
	works := map[string]string{}
	for _, name := range names {
		works[name] = t.TempDir()
	}
	t.Cleanup(func() {
		for _, name := range names {
			if p := planes[name]; p != nil {
				if err := p.Stop(); err != nil {
					t.Errorf("%v", err)
				}
			}
		}
	})
	// One after the other: three API servers starting at once on two loaded cores miss
	// their start timeout.
	for _, name := range names {
		p, err := cluster.StartPlane(name, works[name], managerBin, planeOptions)
		planes[name] = p
		if err != nil {
			t.Fatalf("%v", err)
		}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	ordered := make([]*cluster.Plane, 0, len(names))
	for _, name := range names {
		ordered = append(ordered, planes[name])
	}
	if err := cluster.AddContexts(path, ordered...); err != nil {
		t.Fatalf("%v", err)
	}
	return planes, path
}

func kubectlBin() string { return filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl") }

// commander runs the real kubectl, with the plugin on PATH, against the fleet's kubeconfig.
type commander struct {
	t          *testing.T
	kubeconfig string
	pluginDir  string
	home       string
}

// run runs kubectl with args and returns its stdout, its stderr and how it ended.
func (c *commander) run(args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin(), args...)
	env := make([]string, 0, len(os.Environ())+3)
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		if key != "KUBECONFIG" && key != "PATH" && key != "HOME" && key != "KUBECTL" {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "KUBECONFIG="+c.kubeconfig, "HOME="+c.home,
		"PATH="+c.pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// must runs kubectl and fails the test when it fails.
func (c *commander) must(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// on runs kubectl on one context of the fleet and fails the test when it fails.
func (c *commander) on(ctx string, args ...string) string {
	c.t.Helper()
	return c.must(append([]string{"--context", ctx}, args...)...)
}
