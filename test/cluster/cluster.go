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
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(UpstreamCRDFiles))
	for _, f := range UpstreamCRDFiles {
		crd, err := testenv.ReadCRD(filepath.Join(testenv.UpstreamCRDs(), filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// InstallRBAC returns the Namespace, ServiceAccount and RBAC objects of dist/install.yaml.
func InstallRBAC() ([]byte, error) {
	data, err := os.ReadFile(testenv.Path("dist", "install.yaml"))
	if err != nil {
		return nil, err
	}
	rbacKinds := map[string]bool{
		"Namespace": true, "ServiceAccount": true,
		"Role": true, "ClusterRole": true, "RoleBinding": true, "ClusterRoleBinding": true,
	}
	var docs []string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, fmt.Errorf("dist/install.yaml: %w", err)
		}
		if rbacKinds[meta.Kind] {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		return nil, errors.New("dist/install.yaml holds no RBAC")
	}
	return []byte(strings.Join(docs, "\n---\n")), nil
}

// Manager is the manager binary running against a control plane.
type Manager struct {
	cmd *exec.Cmd
	log *os.File
	// LogPath is the manager's log.
	LogPath string
}

// StartManager runs the manager binary bin against the API server of admin with the
// credentials it has in a cluster: a token of its ServiceAccount (the RBAC of InstallRBAC
// applied first), written to a kubeconfig in workDir. It logs to workDir/manager.log.
func StartManager(ctx context.Context, admin *rest.Config, bin, workDir string) (*Manager, error) {
	kubeconfig := filepath.Join(workDir, "manager-kubeconfig")
	if err := satoken.WriteKubeconfig(ctx, admin, OperatorNamespace, ManagerServiceAccount, kubeconfig); err != nil {
		return nil, err
	}
	m := &Manager{LogPath: filepath.Join(workDir, "manager.log")}
	var err error
	if m.log, err = os.Create(m.LogPath); err != nil {
		return nil, err
	}
	m.cmd = exec.Command(bin,
		"--leader-elect", "--namespace="+OperatorNamespace,
		"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0", "--health-poll-interval=1s")
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		_ = m.log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return m, nil
}

// Stop interrupts the manager, kills it if it does not stop within 15 seconds, and fails
// when the API server denied it a request: dist/install.yaml lacks a permission.
func (m *Manager) Stop() error {
	_ = m.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-done
	}
	_ = m.log.Close()
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
