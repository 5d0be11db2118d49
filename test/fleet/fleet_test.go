// Package fleet tests the approval that travels: three clusters, each a control plane of its
// own (a real kube-apiserver and etcd) with the operator's manager binary and the pool
// simulator, in one kubeconfig with three contexts; the real kubectl and the kubectl plugin
// (PLUGIN_BINARY) drive them.
//
// east and west have the same inputs: their plans have one content hash, and different plan
// hashes, because west's plan is its second revision. lab's HyperConverged allows more
// parallel live migrations, so its descheduler gets other eviction limits: its content
// differs. The profile is load-aware-rebalancing without the PSI MachineConfig, whose one
// item (the KubeDescheduler) completes as soon as it is applied.
package fleet

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kubevirt/virt-advisor-operator/test/cluster"
)

const (
	config      = "vpc/load-aware-rebalancing"
	profile     = "load-aware-rebalancing"
	item        = "enable-load-aware-descheduling"
	deschedNS   = "openshift-kube-descheduler-operator"
	descheduler = "kubedescheduler/cluster"
)

// inputs are what the profile reads on a cluster: the namespaces and the HyperConverged,
// whose live-migration limits become the descheduler's eviction limits.
func inputs(perCluster int) string {
	return `apiVersion: v1
kind: Namespace
metadata:
  name: openshift-cnv
---
apiVersion: v1
kind: Namespace
metadata:
  name: ` + deschedNS + `
---
apiVersion: hco.kubevirt.io/v1
kind: HyperConverged
metadata:
  name: kubevirt-hyperconverged
  namespace: openshift-cnv
spec:
  virtualization:
    liveMigrationConfig:
      parallelMigrationsPerCluster: ` + strconv.Itoa(perCluster) + `
      parallelOutboundMigrationsPerNode: 2
`
}

// freeze refuses every real write to the KubeDescheduler (dry-runs pass, so a plan is still
// drafted): the apply of an approved plan fails.
const freeze = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: freeze-descheduler
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["operator.openshift.io"]
      apiVersions: ["*"]
      operations: ["CREATE", "UPDATE"]
      resources: ["kubedeschedulers"]
  validations:
  - expression: "request.dryRun == true"
    message: the descheduler is frozen on this cluster
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: freeze-descheduler
spec:
  policyName: freeze-descheduler
  validationActions: [Deny]
`

// fleetT is what a step of TestFleet works with: its own t and Gomega, so that a failed
// step fails itself, and the fleet's kubeconfig.
type fleetT struct {
	t *testing.T
	g Gomega
	k *commander
}

// get reads a jsonpath of the config on one cluster.
func (f *fleetT) get(ctx, path string) string {
	f.t.Helper()
	return f.k.on(ctx, "get", config, "-o", "jsonpath="+path)
}

// apply applies the YAML doc on one cluster.
func (f *fleetT) apply(ctx, doc string) {
	f.t.Helper()
	file := filepath.Join(f.t.TempDir(), "doc.yaml")
	f.g.Expect(os.WriteFile(file, []byte(doc), 0o600)).To(Succeed())
	f.k.on(ctx, "apply", "-f", file)
}

// reviewed waits until the operator has drafted the plan of the current spec.
func (f *fleetT) reviewed(ctx string) {
	f.t.Helper()
	f.g.Eventually(func() bool {
		out, _, _ := f.k.run("--context", ctx, "get", config, "-o",
			"jsonpath={.metadata.generation}/{.status.observedGeneration}/{.status.phase}")
		fields := strings.Split(out, "/")
		return len(fields) == 3 && fields[0] == fields[1] && fields[2] == "ReviewRequired"
	}).Should(BeTrue(), "%s drafts its plan", ctx)
}

// fleet runs `kubectl virt-advisor fleet` with args.
func (f *fleetT) fleet(args ...string) (string, string, error) {
	return f.k.run(append([]string{"virt-advisor", "fleet"}, args...)...)
}

func TestFleet(t *testing.T) {
	managerBin, pluginBin := os.Getenv("MANAGER_BINARY"), os.Getenv("PLUGIN_BINARY")
	if managerBin == "" || pluginBin == "" {
		t.Fatal("set MANAGER_BINARY and PLUGIN_BINARY to the binaries `make build` builds (make test-fleet does)")
	}
	start := time.Now()
	planes, kubeconfig := startFleet(t, managerBin, "east", "west", "lab")
	t.Logf("three control planes up in %s", time.Since(start).Round(time.Second))
	home := t.TempDir()
	dumpOnFailure(t, planes)
	step := func(name string, run func(f *fleetT)) bool {
		return t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.SetDefaultEventuallyTimeout(90 * time.Second)
			g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
			g.SetDefaultConsistentlyPollingInterval(250 * time.Millisecond)
			run(&fleetT{t: t, g: g, k: &commander{t: t, kubeconfig: kubeconfig, pluginDir: filepath.Dir(pluginBin), home: home}})
		})
	}
	var content, labContent string
	ok := step("the same inputs give one content hash and two plan hashes", func(f *fleetT) {
		f.apply("east", inputs(5))
		f.apply("west", inputs(5))
		f.apply("lab", inputs(10))
		for _, ctx := range []string{"east", "west", "lab"} {
			f.g.Eventually(func() string {
				out, _, _ := f.k.run("--context", ctx, "get", config, "-o", "jsonpath={.spec.action}")
				return out
			}).Should(Equal("Ignore"), "the operator advertises the profile on %s", ctx)
		}
		spec := `{"spec":{"action":"DryRun","options":{"loadAware":{"enablePSIMetrics":false}}}}`
		f.k.on("east", "patch", config, "--type=merge", "-p", spec)
		f.k.on("lab", "patch", config, "--type=merge", "-p", spec)
		// west reviewed another interval first: its plan is the second revision.
		f.k.on("west", "patch", config, "--type=merge", "-p",
			`{"spec":{"action":"DryRun","options":{"loadAware":{"enablePSIMetrics":false,"deschedulingIntervalSeconds":120}}}}`)
		f.reviewed("west")
		f.k.on("west", "patch", config, "--type=json", "-p", `[{"op":"remove","path":"/spec/options/loadAware/deschedulingIntervalSeconds"}]`)
		for _, ctx := range []string{"east", "west", "lab"} {
			f.reviewed(ctx)
		}
		f.g.Expect(f.get("west", "{.status.planRevision}")).To(Equal("2"))
		f.g.Expect(f.get("east", "{.status.planRevision}")).To(Equal("1"))
		f.g.Expect(f.get("east", "{.status.contentHash}")).To(HaveLen(64))
		f.g.Expect(f.get("west", "{.status.contentHash}")).To(Equal(f.get("east", "{.status.contentHash}")))
		f.g.Expect(f.get("west", "{.status.planHash}")).NotTo(Equal(f.get("east", "{.status.planHash}")))
		f.g.Expect(f.get("lab", "{.status.contentHash}")).NotTo(Equal(f.get("east", "{.status.contentHash}")))
		content, labContent = f.get("east", "{.status.contentHash}"), f.get("lab", "{.status.contentHash}")
	})

	ok = ok && step("fleet status groups the clusters by content and names the item that differs", func(f *fleetT) {
		out := f.k.must("virt-advisor", "fleet", "status", profile)
		f.t.Logf("fleet status:\n%s", out)
		lines := strings.Split(out, "\n")
		f.g.Expect(lines[0]).To(MatchRegexp(`^CONTEXT\s+PHASE\s+CONTENT\s+PLAN\s+IMPACT\s+DISRUPTION\s+APPROVED-BY\s+REASON$`))
		f.g.Expect(lines[1]).To(HavePrefix("CONTENT " + content[:12] + ": 2 clusters (east, west); differs from the other contents in: " + item + " ("))
		f.g.Expect(lines[2]).To(MatchRegexp(`^  east\s+ReviewRequired\s+` + content[:12] + `\s+` + f.get("east", "{.status.planHash}")[:12]))
		f.g.Expect(lines[3]).To(MatchRegexp(`^  west\s+ReviewRequired\s+` + content[:12] + `\s+` + f.get("west", "{.status.planHash}")[:12]))
		f.g.Expect(lines[4]).To(HavePrefix("CONTENT " + labContent[:12] + ": 1 cluster (lab); differs from the other contents in: " + item + " ("))
		f.g.Expect(lines[5]).To(MatchRegexp(`^  lab\s+ReviewRequired\s+` + labContent[:12]))

		js := f.k.must("virt-advisor", "fleet", "status", profile, "--contexts", "lab,west,east", "-o", "json")
		var fs struct {
			Groups []struct {
				ContentHash string `json:"contentHash"`
				Clusters    []struct {
					Context string `json:"context"`
				} `json:"clusters"`
				Differences []struct {
					Name string `json:"name"`
				} `json:"differences"`
			} `json:"groups"`
		}
		f.g.Expect(json.Unmarshal([]byte(js), &fs)).To(Succeed())
		f.g.Expect(fs.Groups).To(HaveLen(2))
		f.g.Expect(fs.Groups[0].ContentHash).To(Equal(content))
		f.g.Expect(fs.Groups[0].Clusters).To(HaveLen(2))
		f.g.Expect(fs.Groups[0].Clusters[0].Context).To(Equal("west"), "the clusters of a group keep the order of --contexts")
		f.g.Expect(fs.Groups[1].Differences[0].Name).To(Equal(item))
	})

	ok = ok && step("fleet approve rolls the content out on the canary, then on the rest, and leaves other content alone", func(f *fleetT) {
		out, errOut, err := f.fleet("approve", profile, "--content", content[:12], "--canary", "east", "--soak", "3s", "--timeout", "90s")
		f.t.Logf("fleet approve:\n%s%s", out, errOut)
		f.g.Expect(err).NotTo(HaveOccurred())
		f.g.Expect(out).To(ContainSubstring("lab: not approved: its plan has content " + labContent[:12] + ", which differs in " + item))
		f.g.Expect(out).To(ContainSubstring("ContentMismatch"))
		canary := strings.Index(out, "east (canary): approved content "+content[:12])
		next := strings.Index(out, "west (wave 1): approved content "+content[:12])
		f.g.Expect(canary).To(BeNumerically(">=", 0))
		f.g.Expect(next).To(BeNumerically(">", canary))
		f.g.Expect(out[canary:next]).To(ContainSubstring("east: healthy"), "west is approved once the canary is healthy")
		for _, ctx := range []string{"east", "west"} {
			f.g.Expect(f.get(ctx, "{.status.phase}")).To(Equal("Completed"))
			f.g.Expect(f.get(ctx, "{.status.approval.via}")).To(ContainSubstring("content"))
			f.g.Expect(f.get(ctx, "{.status.approval.approvedContentHash}")).To(Equal(content))
			f.g.Expect(f.get(ctx, "{.spec.approvedContent.hash}")).To(Equal(content))
		}
		// The canary's execution ended before west's approval was observed.
		finished, err := time.Parse(time.RFC3339, f.get("east", "{.status.history[0].finishedAt}"))
		f.g.Expect(err).NotTo(HaveOccurred())
		approved, err := time.Parse(time.RFC3339, f.get("west", "{.status.approval.approvedAt}"))
		f.g.Expect(err).NotTo(HaveOccurred())
		f.g.Expect(approved).NotTo(BeTemporally("<", finished))
		f.g.Expect(f.k.on("east", "get", descheduler, "-n", deschedNS, "-o", "jsonpath={.spec.evictionLimits.total}")).To(Equal("5"))
		f.g.Expect(f.get("lab", "{.spec.action}")).To(Equal("DryRun"), "the fleet command leaves other content alone")
	})

	ok = ok && step("the same content approval keeps a cluster with other content in ReviewRequired, naming what differs", func(f *fleetT) {
		approvedContent := f.get("east", "{.status.content}")
		f.k.on("lab", "patch", config, "--type=merge", "-p",
			`{"spec":{"action":"Apply","approvedContent":`+approvedContent+`}}`)
		f.reviewed("lab")
		f.g.Expect(f.get("lab", `{.status.conditions[?(@.type=="ReviewRequired")].reason}`)).To(Equal("ContentMismatch"))
		msg := f.get("lab", `{.status.conditions[?(@.type=="ReviewRequired")].message}`)
		f.g.Expect(msg).To(ContainSubstring("item " + item + " writes another desired state"))
		f.g.Expect(msg).To(ContainSubstring(labContent))
		_, _, err := f.k.run("--context", "lab", "get", descheduler, "-n", deschedNS)
		f.g.Expect(err).To(HaveOccurred(), "nothing was written on lab")

		out := f.k.must("virt-advisor", "fleet", "status", profile)
		f.t.Logf("fleet status:\n%s", out)
		f.g.Expect(out).To(MatchRegexp(`(?m)^  east\s+Completed\s+` + content[:12] + `.*\(content\)`))
		f.g.Expect(out).To(MatchRegexp(`(?m)^  lab\s+ReviewRequired\s+` + labContent[:12] + `.*ContentMismatch$`))
	})

	ok = ok && step("fleet approve stops when the canary fails and approves no other cluster", func(f *fleetT) {
		spec := `{"spec":{"action":"DryRun","approvedContent":null,"options":{"loadAware":{"enablePSIMetrics":false,"deschedulingIntervalSeconds":300}}}}`
		for _, ctx := range []string{"east", "west", "lab"} {
			f.k.on(ctx, "patch", config, "--type=merge", "-p", spec)
		}
		for _, ctx := range []string{"east", "west", "lab"} {
			f.reviewed(ctx)
		}
		next := f.get("west", "{.status.contentHash}")
		f.g.Expect(next).NotTo(Equal(content))
		f.g.Expect(f.get("east", "{.status.contentHash}")).To(Equal(next))

		f.apply("west", freeze)
		// The policy is in force once the API server refuses a write the plan does not make
		// (each probe another value: kubectl sends no request for a label it already has).
		probe := 0
		f.g.Eventually(func() string {
			probe++
			_, errOut, _ := f.k.run("--context", "west", "label", descheduler, "-n", deschedNS, "--overwrite",
				"fleet-test/probe="+strconv.Itoa(probe))
			return errOut
		}).Should(ContainSubstring("the descheduler is frozen on this cluster"))

		out, errOut, err := f.fleet("approve", profile, "--content", next, "--canary", "west", "--contexts", "west,east,lab",
			"--soak", "3s", "--timeout", "90s")
		f.t.Logf("fleet approve:\n%s%s", out, errOut)
		f.g.Expect(err).To(HaveOccurred())
		f.g.Expect(errOut).To(ContainSubstring("canary west did not end healthy: it is Failed (ItemFailed)"))
		f.g.Expect(errOut).To(ContainSubstring("the descheduler is frozen on this cluster"))
		f.g.Expect(errOut).To(ContainSubstring("east left untouched"))
		f.g.Expect(out).NotTo(ContainSubstring("east (wave 1): approved"))
		f.g.Expect(f.get("east", "{.spec.action}")).To(Equal("DryRun"))
		f.g.Expect(f.get("east", "{.spec.approvedContent}")).To(BeEmpty())
		f.g.Expect(f.get("east", "{.status.phase}")).To(Equal("ReviewRequired"))
		f.g.Expect(f.k.on("east", "get", descheduler, "-n", deschedNS, "-o", "jsonpath={.spec.deschedulingIntervalSeconds}")).To(Equal("60"))
		f.g.Expect(f.get("lab", "{.spec.action}")).To(Equal("DryRun"))
		// The content pin does not approve the retry of the failed execution: that takes a
		// new approval, once the cause is fixed.
		f.g.Consistently(func() string { return f.get("west", "{.status.phase}") }).WithTimeout(5 * time.Second).
			Should(Equal("Failed"))
		// Nor when something wakes the operator up for this config.
		f.k.on("west", "annotate", config, "fleet-test/poke=1")
		f.g.Consistently(func() string { return f.get("west", "{.status.phase}") }).WithTimeout(5 * time.Second).
			Should(Equal("Failed"))
	})
	if !ok {
		t.Log("the steps after the first failed one were not run: each starts from the state the earlier ones leave")
	}
	t.Logf("the fleet test took %s", time.Since(start).Round(time.Second))
}

// dumpOnFailure prints the end of each manager's and pool simulator's log when t failed.
func dumpOnFailure(t *testing.T, planes map[string]*cluster.Plane) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for name, cp := range planes {
			if cp.Manager != nil {
				t.Logf("--- %s: manager log (last 30 lines)\n%s", name, cp.Manager.LogTail(30))
			}
		}
	})
}
