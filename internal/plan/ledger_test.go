package plan_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/plan"
)

func TestLedgerInstallKeepsWhatItemsAppliedAndHashesTheForecastWithThePlan(t *testing.T) {
	const mc = "machineconfiguration.openshift.io/v1"
	st := &advisorv1alpha1.VirtPlatformConfigStatus{}
	now := metav1.NewTime(time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC))
	ledger := plan.LedgerOf(st, now)

	psi := batchItem(t, "psi", mc, "MachineConfig")
	psi.State = advisorv1alpha1.ItemPending
	ledger.Install(plan.Plan{Items: []advisorv1alpha1.PlanItem{psi}}, 1)
	if st.PlanRevision != 1 || st.PlanHash == "" || !plan.Intact(st) {
		t.Fatalf("installed plan: revision %d, hash %q, intact %v", st.PlanRevision, st.PlanHash, plan.Intact(st))
	}
	if got := st.Items[0].LastTransitionTime; got == nil || !got.Equal(&now) {
		t.Fatalf("an installed item is stamped with the time of the install, got %v", got)
	}

	before := st.PlanHash
	ledger.SetForecast([]advisorv1alpha1.PoolRollout{{Pool: "worker", Items: []string{"psi"}, Nodes: 3, Waves: 3, Reboot: true, Pause: true}})
	if st.PlanHash == before || st.PlanRevision != 1 || !plan.Intact(st) {
		t.Fatalf("the pause a forecast adds is part of the plan's hash: hash %q (was %q), revision %d", st.PlanHash, before, st.PlanRevision)
	}
	if st.Disruption != "reboots 3 worker node(s) once, in 3 wave(s)" {
		t.Fatalf("disruption %q", st.Disruption)
	}

	ledger.RecordApplied(0, &advisorv1alpha1.AppliedRecord{Hash: "target"}, st.PlanHash)
	applied := st.Items[0].Applied
	if applied == nil || applied.PlanHash != st.PlanHash || applied.DesiredHash != plan.ItemDesiredHash(st.Items[0]) || applied.Time == nil {
		t.Fatalf("applied record %+v", applied)
	}
	if !plan.IsCorrection(st.Items[0]) {
		t.Fatal("an item that desires what it applied re-applies it: a correction")
	}

	redrafted := batchItem(t, "psi", mc, "MachineConfig")
	ledger.Install(plan.Plan{Items: []advisorv1alpha1.PlanItem{redrafted}}, 2)
	if st.Items[0].Applied != applied {
		t.Fatal("an item that keeps its target keeps what it applied, so its drift is still judged")
	}
}

func TestLedgerRehashAndTamperedItems(t *testing.T) {
	st := &advisorv1alpha1.VirtPlatformConfigStatus{}
	ledger := plan.LedgerOf(st, metav1.Now())
	ledger.Install(plan.Plan{Items: []advisorv1alpha1.PlanItem{batchItem(t, "hco", "hco.kubevirt.io/v1beta1", "HyperConverged")}}, 4)
	hash := st.PlanHash

	ledger.MarkDrifted(0, plan.DriftCheck{Check: plan.Check{Diff: "-  a: 1\n+  a: 2", Change: advisorv1alpha1.ChangeValues}}, "drifted")
	if plan.Intact(st) {
		t.Fatal("a plan whose item changed no longer hashes to its hash until it is rehashed")
	}
	ledger.Rehash()
	if st.PlanRevision != 5 || st.PlanHash == hash || !plan.Intact(st) {
		t.Fatalf("rehash: revision %d, hash %q (was %q), intact %v", st.PlanRevision, st.PlanHash, hash, plan.Intact(st))
	}

	st.Items[0].Diff = "edited outside the operator"
	if plan.Intact(st) {
		t.Fatal("an item edited outside the ledger makes the plan not intact")
	}

	ledger.Clear()
	if st.Items != nil || st.PlanHash != "" || plan.Intact(st) {
		t.Fatal("a cleared plan has no items and no hash, and nothing can execute it")
	}
}

func TestLedgerRefreshesTheVMForecastWithoutChangingThePlanHash(t *testing.T) {
	const mc = "machineconfiguration.openshift.io/v1"
	st := &advisorv1alpha1.VirtPlatformConfigStatus{}
	ledger := plan.LedgerOf(st, metav1.Now())
	psi := batchItem(t, "psi", mc, "MachineConfig")
	psi.State = advisorv1alpha1.ItemPending
	ledger.Install(plan.Plan{Items: []advisorv1alpha1.PlanItem{psi}}, 1)
	ledger.SetForecast([]advisorv1alpha1.PoolRollout{{Pool: "worker", Items: []string{"psi"}, Nodes: 3, Waves: 3, Reboot: true, Pause: true,
		VMs: &advisorv1alpha1.VMForecast{LiveMigrate: 2, Migrations: 3, Summary: "2 VMs live-migrate (3 migrations)"}}})
	hash := st.PlanHash
	if st.Disruption != "reboots 3 worker node(s) once, in 3 wave(s); 2 VMs live-migrate (3 migrations)" {
		t.Fatalf("disruption %q", st.Disruption)
	}

	ledger.SetVMs(map[string]*advisorv1alpha1.VMForecast{"worker": {Block: 1, Summary: "1 VM blocks the drain (db/pg-0)",
		Blocking: &advisorv1alpha1.VMNames{Names: []string{"db/pg-0"}}}})
	if st.PlanHash != hash || st.PlanRevision != 1 || !plan.Intact(st) {
		t.Fatalf("a VM that moves changes neither the plan's hash nor its revision: hash %q (was %q), revision %d", st.PlanHash, hash, st.PlanRevision)
	}
	if st.Disruption != "reboots 3 worker node(s) once, in 3 wave(s); 1 VM blocks the drain (db/pg-0)" {
		t.Fatalf("disruption %q", st.Disruption)
	}
	if st.Rollouts[0].VMs.Block != 1 || st.Rollouts[0].VMs.LiveMigrate != 0 {
		t.Fatalf("refreshed VM forecast %+v", st.Rollouts[0].VMs)
	}
}
