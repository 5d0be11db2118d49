package faults

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
	"github.com/kubevirt/virt-advisor-operator/internal/targets"
	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// The revert plan of load-aware-rebalancing: its items, last applied first, and the API
// paths of their writes.
const (
	revertPSIItem         = "revert-machineconfig-99-worker-psi-karg"
	revertDeschedulerItem = "revert-kubedescheduler-openshift-kube-descheduler-operator-cluster"
	psiPath               = "/apis/machineconfiguration.openshift.io/v1/machineconfigs/99-worker-psi-karg"
	deschedulerPath       = "/apis/operator.openshift.io/v1/namespaces/openshift-kube-descheduler-operator/kubedeschedulers/cluster"
	workerPoolTarget      = "machineconfigpools worker"
)

// revertWrites is every write the operator sends while it reverts load-aware-rebalancing,
// in order, as the audit log names them: the batch (the worker pool paused, the PSI
// MachineConfig deleted, the pool resumed), then the KubeDescheduler restored.
var revertWrites = []string{
	"patch " + workerPoolTarget,
	"delete " + psiTarget,
	"patch " + workerPoolTarget,
	"patch " + deschedulerTarget,
}

// revertKill places the SIGKILL of a spec around one write of the revert.
type revertKill struct {
	// id names the spec's manager, its logs and its user.
	id string
	// item is the revert item whose write the kill is placed around.
	item string
	// method and path are the write as it goes on the wire.
	method, path string
	// write is the write as revertWrites names it.
	write string
	// written: the write reaches the API server and the status write after it is lost;
	// otherwise the status write that authorizes it goes through and the write is lost.
	written bool
}

var _ = Describe("A manager killed with SIGKILL mid-revert", func() {
	BeforeEach(resetCluster)

	DescribeTable("resumes on restart and finishes the revert: each target written once, the pool paused and resumed once, the targets as before the apply",
		func(k revertKill) {
			ns := "faults-revert-" + k.id
			createNamespace(ns)
			// The manager reaches the API server through a proxy, which holds the request
			// the kill is placed at and drops it once the manager is dead.
			p := startProxy(ns + "-manager")
			m := startManager("revert-"+k.id, p.kubeconfig(ns), managerOptions{namespace: ns, shortLease: true})
			before := testenv.Read(ctx, k8s, deschedulerGVK, deschedulerKey)
			Expect(before).NotTo(BeNil())

			By("applying the plan and rolling it out")
			createConfig(advisorv1alpha1.ActionDryRun, nil)
			waitPhase(advisorv1alpha1.PhaseReviewRequired, time.Minute)
			approve()
			waitingForPool(time.Minute)
			rolloutPool()
			expectCompletedAsPlanned(waitPhase(advisorv1alpha1.PhaseCompleted, time.Minute))
			Eventually(workerPoolRolledOut).Should(Succeed())

			By("requesting the revert: its plan is shown for review")
			mark := audit.mark()
			kubectl("patch", "vpc", configName, "--type=merge", "-p", `{"spec":{"revert":true}}`)
			shown := waitPhase(advisorv1alpha1.PhaseReviewRequired, time.Minute)
			expectRevertPlanShown(shown)

			By(fmt.Sprintf("approving the revert plan shown; the request %s %s is held", k.method, k.path))
			held, release := make(chan struct{}), make(chan struct{})
			// Released at the latest when the spec ends, so the proxy can close.
			releaseHeld := sync.OnceFunc(func() { close(release) })
			DeferCleanup(releaseHeld)
			var mu sync.Mutex
			wrote, holding := false, false
			p.setIntercept(func(r *http.Request) verdict {
				mu.Lock()
				write := r.Method == k.method && r.URL.Path == k.path && !r.URL.Query().Has("dryRun")
				hold := !holding && (k.written && wrote && isStatusPatch(r, configName) || !k.written && write)
				wrote = wrote || write
				holding = holding || hold
				mu.Unlock()
				if !hold {
					return forward
				}
				close(held)
				<-release
				// The manager died before the request arrived: it never does.
				return dropConnection
			})
			approveAsShown()
			Eventually(held).Should(BeClosed())
			at := slices.Index(revertWrites, k.write)
			Expect(at).To(BeNumerically(">=", 0))
			sent := revertWrites[:at]
			if k.written {
				sent = revertWrites[:at+1]
			}
			Eventually(func() []string { return operatorWrites(mark, ns+"-manager") }).Should(Equal(sent))

			By("killing the manager with SIGKILL while the request is held, then dropping it")
			m.kill()
			p.setIntercept(nil)
			releaseHeld()
			vpc := getConfig()
			Expect(vpc.Status.Phase).To(Equal(advisorv1alpha1.PhaseInProgress))
			killed := testenv.Item(vpc, k.item)
			Expect(killed.State).To(Equal(advisorv1alpha1.ItemPending), "the status does not know about the write")
			Expect(killed.Message).To(Equal("applying"), "the status write that authorizes the write went through")
			switch k.item {
			case revertPSIItem:
				if k.written {
					Expect(testenv.Read(ctx, k8s, mcGVK, psiKey)).To(BeNil(), "the DELETE went through")
				} else {
					Expect(testenv.Read(ctx, k8s, mcGVK, psiKey)).NotTo(BeNil(), "the DELETE never reached the API server")
				}
				pool := testenv.Read(ctx, k8s, targets.MachineConfigPool.GVK, objectKey("worker"))
				Expect(targets.PausedBy(pool)).To(Equal([]string{configName}), "the batch holds the pool's pause")
				Expect(targets.PoolPaused(pool)).To(BeTrue())
			case revertDeschedulerItem:
				Expect(testenv.Item(vpc, revertPSIItem).State).To(Equal(advisorv1alpha1.ItemCompleted))
				if k.written {
					profiles, _, _ := unstructured.NestedStringSlice(before.Object, "spec", "profiles")
					Expect(deschedulerProfiles()).To(Equal(strings.Join(profiles, ",")), "the restore went through")
				} else {
					Expect(deschedulerProfiles()).To(Equal(appliedProfiles), "the restore never reached the API server")
				}
			}
			Expect(operatorWrites(mark, ns+"-manager")).To(Equal(sent), "nothing more was written")

			By("starting the manager again (it waits for the dead leader's lease to expire)")
			restarted := audit.mark()
			m.restart()
			vpc = waitPhase(advisorv1alpha1.PhaseReverted, 2*time.Minute)
			m.reportProcesses(2)

			writes := operatorWrites(mark, ns+"-manager")
			By("audit log, the operator's writes during the revert:\n  " + strings.Join(writes, "\n  "))
			Expect(writes).To(Equal(revertWrites), "each target is written once, the pool paused before the batch and resumed after it")
			Expect(operatorWrites(restarted, ns+"-manager")).To(Equal(revertWrites[len(sent):]),
				"the restarted manager writes what the killed one had not, and nothing it had")
			Expect(refusedWrites(mark, ns+"-manager")).To(BeEmpty())

			By("the config is Reverted, the targets are as before the apply")
			reverted := meta.FindStatusCondition(vpc.Status.Conditions, advisorv1alpha1.ConditionReverted)
			Expect(reverted).NotTo(BeNil())
			Expect(reverted.Reason).To(Equal(advisorv1alpha1.ReasonReverted))
			for _, it := range vpc.Status.Items {
				Expect(it.State).To(Equal(advisorv1alpha1.ItemCompleted), "item %s: %s", it.Name, it.Message)
			}
			Expect(vpc.Status.Replaced).To(BeEmpty())
			Expect(vpc.Status.Rollouts).To(ContainElement(And(HaveField("Pool", "worker"),
				HaveField("PauseState", advisorv1alpha1.PauseResumed))))
			Expect(testenv.Read(ctx, k8s, mcGVK, psiKey)).To(BeNil(), "the MachineConfig the profile created is gone")
			after := testenv.Read(ctx, k8s, deschedulerGVK, deschedulerKey)
			Expect(after.Object["spec"]).To(Equal(before.Object["spec"]), "every managed value is back")
			Expect(after.GetLabels()).To(Equal(before.GetLabels()))
			Expect(after.GetAnnotations()).To(Equal(before.GetAnnotations()))
			Expect(fieldManagers(after)).NotTo(ContainElement(plan.FieldManagerFor(string(advisorv1alpha1.ProfileLoadAwareRebalancing))))
			pool := testenv.Read(ctx, k8s, targets.MachineConfigPool.GVK, objectKey("worker"))
			Expect(targets.PoolPaused(pool)).To(BeFalse())
			Expect(pool.GetAnnotations()).NotTo(HaveKey(targets.PausedByAnnotation))
			Expect(workerPoolRolledOut()).To(Succeed())

			if k.written {
				Eventually(eventReasons).Should(ContainElement(advisorv1alpha1.EventItemAlreadyApplied),
					"the restarted manager finds the write done")
			} else {
				Expect(eventReasons()).NotTo(ContainElement(advisorv1alpha1.EventItemAlreadyApplied))
			}
			Expect(eventReasons()).NotTo(ContainElement(advisorv1alpha1.ReasonPlanStale))
		},
		Entry("killed after the status write that authorizes the MachineConfig's DELETE, before the DELETE reaches the API server",
			revertKill{id: "mc-lost", item: revertPSIItem, method: http.MethodDelete, path: psiPath, write: "delete " + psiTarget}),
		Entry("killed after the MachineConfig's DELETE, before the status write that records it",
			revertKill{id: "mc-written", item: revertPSIItem, method: http.MethodDelete, path: psiPath, write: "delete " + psiTarget, written: true}),
		Entry("killed after the status write that authorizes the KubeDescheduler's restore, before its PATCH reaches the API server",
			revertKill{id: "kd-lost", item: revertDeschedulerItem, method: http.MethodPatch, path: deschedulerPath, write: "patch " + deschedulerTarget}),
		Entry("killed after the KubeDescheduler's restore PATCH, before the status write that records it",
			revertKill{id: "kd-written", item: revertDeschedulerItem, method: http.MethodPatch, path: deschedulerPath, write: "patch " + deschedulerTarget, written: true}),
	)
})

// expectRevertPlanShown checks the revert plan in review: the PSI MachineConfig deleted in
// a batch that pauses the worker pool, then the KubeDescheduler restored; the approval
// command names its hash.
func expectRevertPlanShown(vpc *advisorv1alpha1.VirtPlatformConfig) {
	GinkgoHelper()
	Expect(vpc.Status.Items).To(HaveLen(2))
	Expect(vpc.Status.Items[0].Name).To(Equal(revertPSIItem))
	Expect(vpc.Status.Items[0].Action).To(Equal(advisorv1alpha1.ItemActionDelete))
	Expect(vpc.Status.Items[1].Name).To(Equal(revertDeschedulerItem))
	Expect(vpc.Status.Items[1].Action).To(Equal(advisorv1alpha1.ItemActionRestore))
	Expect(vpc.Status.Rollouts).To(ContainElement(And(HaveField("Pool", "worker"), HaveField("Pause", true),
		HaveField("Items", ContainElement(revertPSIItem)))))
	Expect(vpc.Status.Approval).NotTo(BeNil())
	Expect(vpc.Status.Approval.Required).To(BeTrue())
	Expect(vpc.Status.Approval.Command).To(ContainSubstring(vpc.Status.PlanHash))
}

// approveAsShown runs the approval command the config's status gives, with the control
// plane's kubectl.
func approveAsShown() {
	GinkgoHelper()
	command := getConfig().Status.Approval.Command
	Expect(command).To(HavePrefix("kubectl patch vpc " + configName + " "))
	run("bash", "-c", `PATH="$KUBEBUILDER_ASSETS:$PATH"; `+command)
}

// isWrite tells a create, update, patch or delete of an object itself (no subresource, no
// dry-run).
func (e auditEvent) isWrite() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete":
	default:
		return false
	}
	return e.ObjectRef != nil && e.ObjectRef.Subresource == "" && !e.query().Has("dryRun")
}

// outsideWrite tells a write by user of an object that is not the operator's own: not a
// config, not its leader election lease, not an Event.
func (e auditEvent) outsideWrite(user string) bool {
	if !e.isWrite() || e.User.Username != user {
		return false
	}
	switch e.ObjectRef.Resource {
	case "virtplatformconfigs", "leases", "events":
		return false
	}
	return true
}

// operatorWrites lists, in order, the writes user sent after mark to objects that are not
// the operator's own and the API server accepted, as "<verb> <target>".
func operatorWrites(mark auditMark, user string) []string {
	GinkgoHelper()
	out := []string{}
	for _, e := range audit.since(mark) {
		if e.outsideWrite(user) && e.ok() {
			out = append(out, e.Verb+" "+e.target())
		}
	}
	return out
}

// refusedWrites lists the writes user sent after mark to objects that are not the
// operator's own and the API server refused.
func refusedWrites(mark auditMark, user string) []string {
	GinkgoHelper()
	var out []string
	for _, e := range audit.since(mark) {
		if e.outsideWrite(user) && !e.ok() {
			code := 0
			if e.ResponseStatus != nil {
				code = e.ResponseStatus.Code
			}
			out = append(out, fmt.Sprintf("%s %s (%d)", e.Verb, e.target(), code))
		}
	}
	return out
}

// fieldManagers names the managers of an object's managedFields entries.
func fieldManagers(obj *unstructured.Unstructured) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, e.Manager)
	}
	return out
}
