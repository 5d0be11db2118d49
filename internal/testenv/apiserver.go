package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AuditPolicy logs every request once, at Metadata level (verb, URI with its fieldManager
// and dryRun, user, response code): when its response completes, or, for a watch, when the
// response starts and again when it ends.
const AuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
- RequestReceived
rules:
- level: Metadata
`

// Audit turns the audit log of env's API server on; call it before env.Start. The API
// server logs by AuditPolicy, written to dir/audit-policy.yaml, one JSON event a line to
// dir/audit.log, each before the response it describes is sent (blocking), in one file
// that is never rotated. It returns the path of the log.
func Audit(env *envtest.Environment, dir string) (string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(AuditPolicy), 0o600); err != nil {
		return "", err
	}
	log := filepath.Join(dir, "audit.log")
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", log).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking").
		Set("audit-log-maxsize", "100000")
	return log, nil
}

// AuditEvent is the part of an audit.k8s.io/v1 Event of the audit log of Audit that the
// tests read. A request has one event; a watch two, when its response starts and when it
// ends, with the same AuditID.
type AuditEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// Received is when the API server received the request, Done when the event's stage
	// came.
	Received time.Time `json:"requestReceivedTimestamp"`
	Done     time.Time `json:"stageTimestamp"`
}

// LogAPIServer sends the output of env's API server to the file path; call it before
// env.Start and close the file once env has stopped.
func LogAPIServer(env *envtest.Environment, path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	api := env.ControlPlane.GetAPIServer()
	api.Out, api.Err = f, f
	return f, nil
}

// WriteUserKubeconfig adds to the running env a user name of group system:masters, whom the
// audit log names as name, and writes a kubeconfig of that user to path.
func WriteUserKubeconfig(env *envtest.Environment, name, path string) error {
	user, err := env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("add the user %s: %w", name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("the kubeconfig of %s: %w", name, err)
	}
	return os.WriteFile(path, data, 0o600)
}
