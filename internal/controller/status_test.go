package controller_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/profiles/loadaware"
)

var _ = Describe("Status", func() {
	BeforeEach(resetCluster)

	It("rule 11: exactly the conditions that hold are True, each with the current observedGeneration, and Ready summarises", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		expectConditions(waitPhase(advisorv1alpha1.PhaseReviewRequired), "ReviewRequired")

		patchSpec(`{"action":"Apply"}`)
		Eventually(itemState).WithArguments(loadaware.ItemPSI).Should(Equal(advisorv1alpha1.ItemInProgress))
		expectConditions(waitPhase(advisorv1alpha1.PhaseInProgress), "InProgress")

		rolloutPool()
		expectConditions(waitPhase(advisorv1alpha1.PhaseCompleted), "Completed", "Ready")

		editDescheduler(`{"spec":{"mode":"Predictive"}}`)
		expectConditions(waitPhase(advisorv1alpha1.PhaseDrifted), "Drifted")

		editDescheduler(`{"spec":{"mode":"Automatic"}}`)
		expectConditions(waitPhase(advisorv1alpha1.PhaseCompleted), "Completed", "Ready")

		patchSpec(`{"action":"Ignore"}`)
		expectConditions(waitPhase(advisorv1alpha1.PhaseIgnored), "Ignored")
	})

	It("rule 12: status is written with a guarded patch, only when it changed, before each outside write it authorizes (once between two writes of one step), never looping on conflicts", func() {
		mark := requests.mark()
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		var writes []request
		conflicts := 0
		for _, r := range requests.since(mark) {
			if r.status == 409 && strings.Contains(r.path, "/virtplatformconfigs/") {
				conflicts++
			}
			// A write the API server refused (the pool changed since it was read, as the
			// Machine Config Operator keeps changing it) wrote nothing: its retry is
			// authorized by the status already written before it.
			if r.write() && !strings.Contains(r.path, "/events") && r.status < 400 {
				writes = append(writes, r)
			}
		}
		statusPath := "/virtplatformconfigs/" + configName + "/status"
		targetWrites, poolWrites, lastOutside := 0, 0, -1
		for i, w := range writes {
			if strings.HasSuffix(w.path, statusPath) {
				Expect(w.method).To(Equal("PATCH"), "status is written with a patch")
				continue
			}
			if strings.HasSuffix(w.path, "/machineconfigpools/worker") {
				poolWrites++
			} else {
				targetWrites++
			}
			Expect(i).To(BeNumerically(">", 0))
			Expect(writes[i-1].path).To(HaveSuffix(statusPath), "%s %s follows a status write that authorizes it", w.method, w.path)
			if lastOutside >= 0 {
				// The descheduler is done once written, and a pool's pause once taken: the
				// step goes on, and the one status write before the next write also
				// records what the previous one did. The resume of the pool waits for the
				// pool to render the batch: that wait ends a step, whose status is written,
				// and the resume is written after its own status.
				between := 1
				if poolWrites == 2 {
					between = 2
				}
				Expect(i-lastOutside-1).To(Equal(between), "status writes between %s and %s %s", writes[lastOutside].path, w.method, w.path)
			}
			lastOutside = i
		}
		Expect(targetWrites).To(Equal(2), "one write per item")
		Expect(poolWrites).To(Equal(2), "the worker pool is paused around the MachineConfig, then resumed")
		// The administrator changed the spec twice while the operator worked (created with
		// Apply, the plan was approved after its conflicts were shown): a status write
		// that raced one of them is refused once and taken again from a fresh read.
		Expect(conflicts).To(BeNumerically("<=", 2), "status writes loop on conflicts")

		By("reconciling a config whose status would not change writes nothing")
		Eventually(eventReasons).Should(ContainElement(string(advisorv1alpha1.PhaseCompleted)), "the Event of the last transition is sent")
		mark = requests.mark()
		for range 5 {
			poke()
		}
		Consistently(func() []string { return requests.writesSince(mark) }).Should(BeEmpty())
	})

	It("rule 12: the status has one field owner, and the API server keeps one item per name", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		var owners []string
		for _, e := range vpc.ManagedFields {
			if e.Subresource == "status" {
				owners = append(owners, e.Manager)
				Expect(e.FieldsV1.GetRawString()).To(MatchJSON(`{"f:status":{}}`),
					"%s owns the status field by field instead of as a whole", e.Manager)
			}
		}
		Expect(owners).To(HaveLen(1))

		By("a second item of the same name is refused by the API server")
		first, err := json.Marshal(vpc.Status.Items[0])
		Expect(err).NotTo(HaveOccurred())
		out, err := run(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "patch", "virtplatformconfig", configName,
			"--subresource=status", "--type=json", "-p", `[{"op":"add","path":"/status/items/-","value":`+string(first)+`}]`)
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("Duplicate value"))
		Expect(getConfig().Status.Items).To(HaveLen(len(vpc.Status.Items)))
	})

	It("is idle once Completed: no write request for 30 seconds", func() {
		completedConfig(advisorv1alpha1.VirtPlatformConfigSpec{})
		// The Event of the last transition is the last write the completion makes.
		Eventually(eventReasons).Should(ContainElement("Completed"))
		mark := requests.mark()
		Consistently(func() []string { return requests.writesSince(mark) }).
			WithTimeout(30 * time.Second).WithPolling(time.Second).Should(BeEmpty())
		GinkgoWriter.Printf("requests in the idle window: %d (writes: 0)\n", len(requests.since(mark)))
	})
})
