package controller_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
)

// approvalOracle checks every write the operator sends to an object that is not a
// VirtPlatformConfig, an Event or a lease, before it reaches the API server: the persisted
// status of some config must approve exactly that content at that moment. It reads the
// configs as the API server holds them (the tests' own client), so it also checks that
// the approval was persisted before the write it authorizes.
type approvalOracle struct {
	mu       sync.Mutex
	problems []string
}

var oracle = &approvalOracle{}

// Every spec of the suite runs under the oracle.
var _ = BeforeEach(func() { oracle.reset() })
var _ = AfterEach(func() {
	Expect(oracle.violations()).To(BeEmpty(), "the operator wrote targets without an approval of that content")
})

func (o *approvalOracle) reset() {
	o.mu.Lock()
	o.problems = nil
	o.mu.Unlock()
}

func (o *approvalOracle) violations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.problems...)
}

func (o *approvalOracle) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if w, ok := targetWrite(req); ok {
			body, err := readBody(req)
			if err != nil {
				return nil, err
			}
			if problem := o.judge(req, w, body); problem != "" {
				o.mu.Lock()
				o.problems = append(o.problems, problem)
				o.mu.Unlock()
			}
		}
		return rt.RoundTrip(req)
	})
}

// writeTarget is the object a request writes, from its path.
type writeTarget struct {
	group, resource, namespace, name string
}

// targetWrite tells whether req writes an object the oracle judges.
func targetWrite(req *http.Request) (writeTarget, bool) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return writeTarget{}, false
	}
	if req.URL.Query().Get("dryRun") != "" {
		return writeTarget{}, false
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return writeTarget{}, false
	}
	switch group {
	case advisorv1alpha1.GroupVersion.Group, "events.k8s.io", "coordination.k8s.io":
		return writeTarget{}, false
	}
	w := writeTarget{group: group}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		w.namespace, parts = parts[1], parts[2:]
	}
	if len(parts) >= 1 {
		w.resource = parts[0]
	}
	if len(parts) >= 2 {
		w.name = parts[1]
	}
	if group == "" && len(parts) >= 1 && parts[0] == "events" {
		return writeTarget{}, false
	}
	return w, true
}

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// judge returns what is wrong with a write, or "" when a config's persisted status
// approves exactly it.
func (o *approvalOracle) judge(req *http.Request, w writeTarget, body []byte) string {
	list := &advisorv1alpha1.VirtPlatformConfigList{}
	if err := k8s.List(ctx, list); err != nil {
		return fmt.Sprintf("%s %s: cannot read the configs to judge it: %v", req.Method, req.URL.Path, err)
	}
	if w.group == targets.MachineConfigPool.GVK.Group && w.resource == "machineconfigpools" {
		return judgePause(req, w, body, list)
	}
	apply := req.Header.Get("Content-Type") == "application/apply-patch+yaml"
	for i := range list.Items {
		vpc := &list.Items[i]
		for _, it := range vpc.Status.Items {
			if !sameTarget(it.TargetRef, w) || !approves(vpc, it) {
				continue
			}
			switch {
			case it.Action == advisorv1alpha1.ItemActionRelease:
				if req.Method == http.MethodPatch && !apply {
					return ""
				}
			case it.Action == advisorv1alpha1.ItemActionDelete:
				if req.Method == http.MethodDelete && vpc.Spec.Revert && deletesRecorded(vpc, it, body) {
					return ""
				}
			case it.Action == advisorv1alpha1.ItemActionRestore:
				if req.Method == http.MethodPatch && vpc.Spec.Revert && restoresContent(it, body) {
					return ""
				}
			case apply && sameContent(it, body):
				return ""
			}
		}
	}
	return fmt.Sprintf("%s %s (%s): no config's persisted status approves this content", req.Method, req.URL.Path, req.Header.Get("Content-Type"))
}

// judgePause judges a write of a MachineConfigPool's pause: a pause needs a config whose
// persisted status approves its plan and records that it is pausing that pool; a pause
// given back needs a config that records it is resuming the pool, or a holder the pool
// names that holds no pause of it: a deleted config, or one created again under the same
// name whose persisted status holds none.
func judgePause(req *http.Request, w writeTarget, body []byte, list *advisorv1alpha1.VirtPlatformConfigList) string {
	var patch struct {
		Metadata struct {
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Paused bool `json:"paused"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(body, &patch); err != nil {
		return fmt.Sprintf("%s %s: not a merge patch of the pause: %v", req.Method, req.URL.Path, err)
	}
	// Whatever else the write does, every config it leaves the pool paused for must hold an
	// approval of a plan that was shown with that pool's pause.
	if v := patch.Metadata.Annotations[targets.PausedByAnnotation]; v != nil && *v != "" {
		for _, holder := range strings.Split(*v, ",") {
			if !approvesPause(list, holder, w.name) {
				return fmt.Sprintf("%s %s: keeps MachineConfigPool %s paused for config %s, whose persisted status holds no approval of a plan that pauses it",
					req.Method, req.URL.Path, w.name, holder)
			}
		}
	}
	holding := map[string]bool{}
	for i := range list.Items {
		vpc := &list.Items[i]
		for _, ro := range vpc.Status.Rollouts {
			if ro.Pool != w.name {
				continue
			}
			if plan.HoldsPause(ro) {
				holding[vpc.Name] = true
			}
			switch {
			case ro.PauseState == advisorv1alpha1.PauseResuming:
				return ""
			case patch.Spec.Paused && ro.PauseState == advisorv1alpha1.PausePausing && approvesPause(list, vpc.Name, w.name):
				return ""
			}
		}
	}
	{
		pool := &unstructured.Unstructured{}
		pool.SetGroupVersionKind(targets.MachineConfigPool.GVK)
		if err := k8s.Get(ctx, client.ObjectKey{Name: w.name}, pool); err == nil {
			var kept []string
			if v := patch.Metadata.Annotations[targets.PausedByAnnotation]; v != nil {
				kept = strings.Split(*v, ",")
			}
			for _, holder := range targets.PausedBy(pool) {
				if !holding[holder] && !slices.Contains(kept, holder) {
					return "" // gives back the pause of a holder that holds none any more
				}
			}
		}
	}
	return fmt.Sprintf("%s %s (%s): no config's persisted status approves this pause", req.Method, req.URL.Path, req.Header.Get("Content-Type"))
}

// approvesPause tells whether the persisted status of config name approves a plan that
// pauses pool: an approval of the plan's hash given after it was shown, or, in aggressive
// mode, an execution of corrections only whose rollout in the pool holds corrections only.
func approvesPause(list *advisorv1alpha1.VirtPlatformConfigList, name, pool string) bool {
	for i := range list.Items {
		vpc := &list.Items[i]
		if vpc.Name != name {
			continue
		}
		for _, ro := range vpc.Status.Rollouts {
			if ro.Pool != pool || !ro.Pause {
				continue
			}
			if a := vpc.Status.Approval; a != nil && a.CorrectionsOnly {
				corrections := len(ro.Items) > 0
				for _, it := range vpc.Status.Items {
					if slices.Contains(ro.Items, it.Name) && !approves(vpc, it) {
						corrections = false
					}
				}
				return corrections
			}
			return approves(vpc, advisorv1alpha1.PlanItem{})
		}
	}
	return false
}

func sameTarget(ref advisorv1alpha1.TargetReference, w writeTarget) bool {
	group, _, _ := strings.Cut(ref.APIVersion, "/")
	if !strings.Contains(ref.APIVersion, "/") {
		group = ""
	}
	return group == w.group && ref.Namespace == w.namespace && ref.Name == w.name
}

// approves tells whether the persisted status approves writing item it now: an approval
// of the plan's hash given after the plan was shown, or, in aggressive mode, a correction
// that restores what an approved execution applied.
func approves(vpc *advisorv1alpha1.VirtPlatformConfig, it advisorv1alpha1.PlanItem) bool {
	spec, st := vpc.Spec, vpc.Status
	a := st.Approval
	if spec.Action != advisorv1alpha1.ActionApply || a == nil || st.PlanHash == "" || a.ApprovedPlanHash != st.PlanHash {
		return false
	}
	if spec.ApprovedPlanHash != "" && spec.ApprovedPlanHash != st.PlanHash {
		return false
	}
	if a.CorrectionsOnly {
		return spec.BypassOptimisticLock && it.Applied != nil &&
			it.Applied.DesiredHash == plan.DesiredHash([]advisorv1alpha1.PlanItem{{Name: it.Name, DesiredState: it.DesiredState}})
	}
	return a.ApprovedGeneration >= a.MinGeneration
}

// sameContent tells whether a server-side apply body is the item's desired state, but for
// the resourceVersion that guards it and the fields the user took back (sent with their
// live values).
func sameContent(it advisorv1alpha1.PlanItem, body []byte) bool {
	if it.DesiredState == nil {
		return false
	}
	var sent, desired map[string]any
	if json.Unmarshal(body, &sent) != nil || json.Unmarshal(it.DesiredState.Raw, &desired) != nil {
		return false
	}
	for _, m := range []map[string]any{sent, desired} {
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "resourceVersion")
		}
		for _, ptr := range it.IgnoredFields {
			dropPointer(m, ptr)
		}
	}
	return equality.Semantic.DeepEqual(sent, desired)
}

// deletesRecorded tells whether a DELETE is guarded by the UID of the object the config's
// status.replaced records as created by its writes: a revert deletes that object, and no
// other one of the same name.
func deletesRecorded(vpc *advisorv1alpha1.VirtPlatformConfig, it advisorv1alpha1.PlanItem, body []byte) bool {
	rec := plan.RecordOf(vpc.Status.Replaced, it.TargetRef)
	var opts metav1.DeleteOptions
	if rec == nil || !rec.Created || rec.UID == "" || json.Unmarshal(body, &opts) != nil ||
		opts.Preconditions == nil || opts.Preconditions.UID == nil {
		return false
	}
	return *opts.Preconditions.UID == rec.UID
}

// restoresContent tells whether a revert's JSON patch sets every top-level part it writes
// (other than metadata) to the item's desired state: what the revert plan showed.
func restoresContent(it advisorv1alpha1.PlanItem, body []byte) bool {
	var ops []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	var desired map[string]any
	if it.DesiredState == nil || json.Unmarshal(body, &ops) != nil || json.Unmarshal(it.DesiredState.Raw, &desired) != nil {
		return false
	}
	for _, op := range ops {
		key := strings.TrimPrefix(op.Path, "/")
		if op.Op != "add" || strings.HasPrefix(key, "metadata/") {
			continue
		}
		if !equality.Semantic.DeepEqual(op.Value, desired[key]) {
			return false
		}
	}
	return true
}

// dropPointer removes the field an RFC 6901 pointer names from obj (maps only).
func dropPointer(obj map[string]any, ptr string) {
	tokens := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := obj
	for i, t := range tokens {
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		if i == len(tokens)-1 {
			delete(cur, t)
			return
		}
		next, ok := cur[t].(map[string]any)
		if !ok {
			return
		}
		cur = next
	}
}
