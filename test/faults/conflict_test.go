package faults

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

var _ = Describe("Every status write answered 409 Conflict once", func() {
	BeforeEach(resetCluster)

	It("retries each write once from a fresh read, never loops, and completes the plan", func() {
		const ns = "faults-conflict"
		createNamespace(ns)
		p := startProxy("faults-conflict-proxy")
		// The first attempt of every status write is answered 409; the attempt after it
		// goes through.
		var mu sync.Mutex
		conflicted := false
		p.setIntercept(func(r *http.Request) verdict {
			if !isStatusPatch(r, configName) {
				return forward
			}
			mu.Lock()
			defer mu.Unlock()
			conflicted = !conflicted
			if conflicted {
				return answerConflict
			}
			return forward
		})
		m := startManager("conflict", p.kubeconfig("faults-conflict-manager"), managerOptions{namespace: ns})
		mark := audit.mark()

		createConfig(advisorv1alpha1.ActionDryRun, nil)
		waitPhase(advisorv1alpha1.PhaseReviewRequired, time.Minute)
		approve()
		waitingForPool(time.Minute)
		rolloutPool()
		vpc := waitPhase(advisorv1alpha1.PhaseCompleted, time.Minute)
		expectCompletedAsPlanned(vpc)

		By("once Completed, nothing writes the status any more")
		settled := statusWrites(p.entries())
		Consistently(func() int { return statusWrites(p.entries()) }).Should(Equal(settled))

		requests := configRequests(p.entries())
		var lines []string
		for _, e := range requests {
			lines = append(lines, "  "+e.String())
		}
		By("requests of the manager on the config, through the proxy:\n" + strings.Join(lines, "\n"))

		injected, writes := 0, 0
		for i, e := range requests {
			if e.Method != http.MethodPatch {
				continue
			}
			writes++
			if !e.Injected {
				Expect(e.Code).To(BeNumerically("<", 300), "status write %d was refused: %s", writes, e)
				continue
			}
			injected++
			// After the 409: one fresh read of the config, then the write again.
			j := i + 1
			var reads []proxyEntry
			for ; j < len(requests) && requests[j].Method == http.MethodGet; j++ {
				reads = append(reads, requests[j])
			}
			Expect(reads).To(HaveLen(1), "after the 409 at %s the manager read the config %d time(s) before writing again", e.Start.Format("15:04:05.000"), len(reads))
			Expect(j).To(BeNumerically("<", len(requests)), "the 409 at %s was never retried", e.Start.Format("15:04:05.000"))
			retry := requests[j]
			Expect(retry.Method).To(Equal(http.MethodPatch))
			Expect(retry.Injected).To(BeFalse())
			Expect(retry.Code).To(BeNumerically("<", 300))
			By(fmt.Sprintf("409 at %s retried %s later", e.Start.Format("15:04:05.000"), retry.Start.Sub(e.Start).Round(time.Millisecond)))
		}
		Expect(injected).To(BeNumerically(">=", 5), "every transition writes the status: draft, review, start, each item")
		Expect(writes).To(Equal(2*injected), "each 409 is followed by exactly one retry, and nothing else writes")

		counts := reportApplies(mark)
		Expect(counts[deschedulerTarget].applied).To(Equal(1))
		Expect(counts[psiTarget].applied).To(Equal(1))
		Expect(counts[deschedulerTarget].attempts).To(Equal(1))
		Expect(counts[psiTarget].attempts).To(Equal(1))
		m.reportProcesses(1)
	})
})

// statusWrites counts the status writes of the config the proxy saw.
func statusWrites(entries []proxyEntry) int {
	n := 0
	for _, e := range configRequests(entries) {
		if e.Method == http.MethodPatch {
			n++
		}
	}
	return n
}

// configRequests keeps the requests on the config itself and its status: reads and writes,
// not lists or watches of the collection.
func configRequests(entries []proxyEntry) []proxyEntry {
	var out []proxyEntry
	for _, e := range entries {
		if e.Path == configPath(configName) || e.Path == configPath(configName)+"/status" {
			out = append(out, e)
		}
	}
	return out
}
