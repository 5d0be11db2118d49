// Package cluster starts what the operator's end-to-end tests run against, as an
// administrator's cluster would have it: the control plane's third-party CRDs, the RBAC of
// dist/install.yaml, and the manager binary running as its ServiceAccount, bound by exactly
// that RBAC.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
	"github.com/kubevirt/virt-advisor-operator/test/satoken"
)

// The operator's namespace and ServiceAccount in dist/install.yaml.
const (
	OperatorNamespace     = "virt-advisor-operator-system"
	ManagerServiceAccount = "virt-advisor-operator-controller-manager"
)

// UpstreamCRDFiles are the real CRDs, under testenv.UpstreamCRDs(), of the operators an
// end-to-end control plane has besides the base ones: the KubeletConfig of the Machine Config
// Operator, the Node Health Check Operator and the Self Node Remediation Operator. The
// Migration Toolkit for Virtualization and MetalLB are not installed, so their
// platform-baseline items are Skipped.
var UpstreamCRDFiles = []string{
	"machineconfiguration.openshift.io/kubeletconfigs.yaml",
	"remediation.medik8s.io/nodehealthchecks.yaml",
	"self-node-remediation.medik8s.io/selfnoderemediationtemplates.yaml",
}

// UpstreamCRDs reads the CRDs of UpstreamCRDFiles.
func UpstreamCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return UpstreamCRDsIn(testenv.UpstreamCRDs())
}

// UpstreamCRDsIn reads the CRDs of UpstreamCRDFiles from the directory dir of the upstream
// CRDs.
func UpstreamCRDsIn(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(UpstreamCRDFiles))
	for _, f := range UpstreamCRDFiles {
		crd, err := testenv.ReadCRD(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// rbacKinds are the kinds of the Namespace, ServiceAccount and RBAC objects.
var rbacKinds = []string{"Namespace", "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}

// policyKinds are the kinds of the admission policies and their bindings.
var policyKinds = []string{
	"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
}

// InstallRBAC returns the Namespace, ServiceAccount and RBAC objects of dist/install.yaml.
func InstallRBAC() ([]byte, error) { return installDocs(rbacKinds...) }

// InstallRBACAndPolicies returns what InstallRBAC returns and the admission policies of
// dist/install.yaml with their bindings (who approved, the verb approve, four-eyes).
func InstallRBACAndPolicies() ([]byte, error) {
	return installDocs(append(append([]string{}, rbacKinds...), policyKinds...)...)
}

// installDocs returns the documents of dist/install.yaml of the given kinds.
func installDocs(kinds ...string) ([]byte, error) {
	data, err := os.ReadFile(testenv.Path("dist", "install.yaml"))
	if err != nil {
		return nil, err
	}
	keep := make(map[string]bool, len(kinds))
	for _, kind := range kinds {
		keep[kind] = true
	}
	var docs []string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, fmt.Errorf("dist/install.yaml: %w", err)
		}
		if keep[meta.Kind] {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("dist/install.yaml holds none of %s", strings.Join(kinds, ", "))
	}
	return []byte(strings.Join(docs, "\n---\n")), nil
}

// Manager is the manager binary running against a control plane.
type Manager struct {
	cmd *exec.Cmd
	// LogPath is the manager's log.
	LogPath string
	// Launched is when the process was started.
	Launched time.Time

	done     chan struct{}
	exitErr  error
	stopOnce sync.Once
	killed   bool
}

// StartManager runs the manager binary bin against the API server of admin with the
// credentials it has in a cluster: a token of its ServiceAccount (the RBAC of InstallRBAC
// applied first), written to a kubeconfig in workDir. It logs to workDir/manager.log.
func StartManager(ctx context.Context, admin *rest.Config, bin, workDir string) (*Manager, error) {
	kubeconfig := filepath.Join(workDir, "manager-kubeconfig")
	if err := satoken.WriteKubeconfig(ctx, admin, OperatorNamespace, ManagerServiceAccount, kubeconfig); err != nil {
		return nil, err
	}
	return Launch(bin, kubeconfig, filepath.Join(workDir, "manager.log"),
		"--leader-elect", "--namespace="+OperatorNamespace,
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0", "--health-poll-interval=1s")
}

// Launch runs the manager binary bin with args and the credentials of kubeconfig, and
// writes its output to the new file logPath.
func Launch(bin, kubeconfig, logPath string, args ...string) (*Manager, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	m := &Manager{cmd: exec.Command(bin, args...), LogPath: logPath, done: make(chan struct{})}
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	m.cmd.Stdout, m.cmd.Stderr = log, log
	m.Launched = time.Now()
	if err := m.cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		m.exitErr = m.cmd.Wait()
		_ = log.Close()
		close(m.done)
	}()
	return m, nil
}

// Done is closed once the process has ended.
func (m *Manager) Done() <-chan struct{} { return m.done }

// Exited tells whether the process has ended.
func (m *Manager) Exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// ExitErr is how the process ended (nil while it runs, or if it exited with status 0).
func (m *Manager) ExitErr() error {
	if !m.Exited() {
		return nil
	}
	return m.exitErr
}

// Pid is the process ID of the manager.
func (m *Manager) Pid() int { return m.cmd.Process.Pid }

// Terminate interrupts the manager and kills it if it does not stop within 15 seconds; it
// returns once the process has ended, and tells whether it had to be killed. Calling it
// again only waits for that.
func (m *Manager) Terminate() (killed bool) {
	m.stopOnce.Do(func() {
		if m.Exited() {
			return
		}
		_ = m.cmd.Process.Signal(os.Interrupt)
		select {
		case <-m.done:
		case <-time.After(15 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.done
			m.killed = true
		}
	})
	<-m.done
	return m.killed
}

// Stop terminates the manager and fails when the API server denied it a request:
// dist/install.yaml lacks a permission.
func (m *Manager) Stop() error {
	m.Terminate()
	data, err := os.ReadFile(m.LogPath)
	if err != nil {
		return err
	}
	if strings.Contains(string(data), `is forbidden: User \"system:serviceaccount:`) ||
		strings.Contains(string(data), `is forbidden: User "system:serviceaccount:`) {
		return errors.New("the API server denied the manager a request: dist/install.yaml lacks a permission")
	}
	return nil
}

// LogTail is the last n lines of the manager's log.
func (m *Manager) LogTail(n int) string {
	data, err := os.ReadFile(m.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
