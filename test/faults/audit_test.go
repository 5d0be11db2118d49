package faults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// auditLog reads the API server's audit log (one JSON event per line).
type auditLog struct {
	path string
}

// auditEvent is an event of the audit log.
type auditEvent testenv.AuditEvent

// auditMark is a position in the audit log: the events after it happened after it was taken.
type auditMark int64

// mark returns the current end of the log.
func (a *auditLog) mark() auditMark {
	GinkgoHelper()
	info, err := os.Stat(a.path)
	Expect(err).NotTo(HaveOccurred())
	return auditMark(info.Size())
}

// since returns the complete events written after mark, in the order they were written.
func (a *auditLog) since(mark auditMark) []auditEvent {
	GinkgoHelper()
	f, err := os.Open(a.path)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	_, err = f.Seek(int64(mark), io.SeekStart)
	Expect(err).NotTo(HaveOccurred())
	var out []auditEvent
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			// A line without its newline is still being written.
			break
		}
		Expect(err).NotTo(HaveOccurred())
		var e auditEvent
		Expect(json.Unmarshal(bytes.TrimSpace(line), &e)).To(Succeed(), "audit line %s", line)
		out = append(out, e)
	}
	return out
}

func (e auditEvent) query() url.Values {
	u, err := url.Parse(e.RequestURI)
	if err != nil {
		return url.Values{}
	}
	return u.Query()
}

func (e auditEvent) ok() bool {
	return e.ResponseStatus != nil && e.ResponseStatus.Code >= 200 && e.ResponseStatus.Code < 300
}

// isApply tells a real server-side apply by the operator: a PATCH sent with one of the
// profiles' field managers to the object itself, not a dry-run.
func (e auditEvent) isApply() bool {
	q := e.query()
	return e.Verb == "patch" && e.ObjectRef != nil && e.ObjectRef.Subresource == "" &&
		strings.HasPrefix(q.Get("fieldManager"), plan.FieldManagerPrefix) && !q.Has("dryRun")
}

// target names the object an event is about, as "<resource> <namespace>/<name>".
func (e auditEvent) target() string {
	if e.ObjectRef == nil {
		return ""
	}
	if e.ObjectRef.Namespace == "" {
		return e.ObjectRef.Resource + " " + e.ObjectRef.Name
	}
	return e.ObjectRef.Resource + " " + e.ObjectRef.Namespace + "/" + e.ObjectRef.Name
}

// isStatusWrite tells a write of a VirtPlatformConfig's status.
func (e auditEvent) isStatusWrite(config string) bool {
	return (e.Verb == "patch" || e.Verb == "update") && e.ObjectRef != nil &&
		e.ObjectRef.Resource == "virtplatformconfigs" && e.ObjectRef.Subresource == "status" && e.ObjectRef.Name == config
}

// Targets of the load-aware-rebalancing plan as the audit log names them.
const (
	deschedulerTarget = "kubedeschedulers openshift-kube-descheduler-operator/cluster"
	psiTarget         = "machineconfigs 99-worker-psi-karg"
)

// applyCount is what the audit log shows for one target.
type applyCount struct {
	// applied counts the applies the API server accepted, attempts every apply sent.
	applied, attempts int
}

// applies counts the operator's server-side applies per target after mark.
func applies(mark auditMark) map[string]applyCount {
	GinkgoHelper()
	out := map[string]applyCount{}
	for _, e := range audit.since(mark) {
		if !e.isApply() {
			continue
		}
		c := out[e.target()]
		c.attempts++
		if e.ok() {
			c.applied++
		}
		out[e.target()] = c
	}
	return out
}

// appliesOf returns the accepted applies of one target after mark.
func appliesOf(mark auditMark, target string) []auditEvent {
	GinkgoHelper()
	var out []auditEvent
	for _, e := range audit.since(mark) {
		if e.isApply() && e.ok() && e.target() == target {
			out = append(out, e)
		}
	}
	return out
}

// reportApplies prints the server-side applies each target received after mark.
func reportApplies(mark auditMark) map[string]applyCount {
	GinkgoHelper()
	counts := applies(mark)
	targets := make([]string, 0, len(counts))
	for t := range counts {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	var lines []string
	for _, t := range targets {
		lines = append(lines, fmt.Sprintf("  %s: %d apply(ies) accepted, %d sent", t, counts[t].applied, counts[t].attempts))
	}
	if len(lines) == 0 {
		lines = append(lines, "  (none)")
	}
	By("audit log, server-side applies per target:\n" + strings.Join(lines, "\n"))
	return counts
}
