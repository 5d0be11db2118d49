package plan

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

// Ledger is the plan in a config's status and its one writer: the items and every field of
// theirs, the plan's revision, hash and content, its snapshot, its inputs and the forecast that is
// part of it. The controller reads the status and asks the ledger to change the plan; it
// never writes these fields itself, so the hash always covers what the plan shows.
type Ledger struct {
	st  *v1alpha1.VirtPlatformConfigStatus
	now metav1.Time
}

// LedgerOf is the ledger of st; now stamps the items' transitions.
func LedgerOf(st *v1alpha1.VirtPlatformConfigStatus, now metav1.Time) Ledger {
	return Ledger{st: st, now: now}
}

// Install puts a drafted plan in status at revision. Items that keep their target keep
// what they applied, so drift is still judged against it and a later plan can release it.
// The forecast of the plan before is kept until SetForecast replaces it.
func (l Ledger) Install(p Plan, revision int64) {
	st := l.st
	applied := map[string]*v1alpha1.AppliedRecord{}
	for _, it := range st.Items {
		if it.Applied != nil && it.Action != v1alpha1.ItemActionRelease {
			applied[it.Name+"\x00"+KeyOf(it.TargetRef).String()] = it.Applied
		}
	}
	for i := range p.Items {
		it := &p.Items[i]
		it.Applied = applied[it.Name+"\x00"+KeyOf(it.TargetRef).String()]
		t := l.now
		it.LastTransitionTime = &t
	}
	st.Items = p.Items
	st.PlanRevision = revision
	st.SourceSnapshotHash = p.SnapshotHash
	st.Inputs, st.InputsHash = p.Inputs, p.InputsHash
	st.FieldManager = p.FieldManager
	st.Content = p.Content
	if st.Content == nil {
		st.Content = ContentOf(st.Items, nil)
	}
	st.ContentHash = st.Content.Hash
	st.PlanHash = statusHash(st)
}

// Clear drops the plan: nothing may execute it any more.
func (l Ledger) Clear() {
	st := l.st
	st.Items = nil
	st.PlanHash = ""
	st.Content, st.ContentHash = nil, ""
	st.SourceSnapshotHash = ""
	st.Inputs = nil
	st.InputsHash = ""
}

// Rehash gives the plan a new revision and hash after what it shows changed (drift
// corrections, a retry): an approval given for the plan before never approves the new one.
func (l Ledger) Rehash() {
	st := l.st
	st.PlanRevision++
	st.PlanHash = statusHash(st)
	st.SourceSnapshotHash = CombinedSnapshotHash(st.Items)
}

// Intact tells whether the plan in st still hashes to status.planHash: nobody but the
// operator changed what is about to be applied.
func Intact(st *v1alpha1.VirtPlatformConfigStatus) bool {
	return st.PlanHash != "" && statusHash(st) == st.PlanHash
}

// SetForecast records what the plan does to the nodes, a part of the plan its hash covers.
func (l Ledger) SetForecast(rollouts []v1alpha1.PoolRollout) {
	l.st.Rollouts = rollouts
	l.st.Disruption = Disruption(rollouts)
	l.st.PlanHash = statusHash(l.st)
}

// SetVMs records what draining each pool's nodes does to the VMs on them (by pool; a pool
// not in vms keeps what it had). VMs move all the time: the VM forecast is refreshed, never
// hashed, so a VM that moves never changes status.planHash nor invalidates an approval.
func (l Ledger) SetVMs(vms map[string]*v1alpha1.VMForecast) {
	for k := range l.st.Rollouts {
		if f, ok := vms[l.st.Rollouts[k].Pool]; ok {
			l.st.Rollouts[k].VMs = f
		}
	}
	l.st.Disruption = Disruption(l.st.Rollouts)
}

// RecordInputs records what the plan was rendered from, when it renders the same plan.
func (l Ledger) RecordInputs(inputs []v1alpha1.InputReference, hash string) {
	l.st.Inputs, l.st.InputsHash = inputs, hash
}

// SetState changes item i's state and message, stamping the transition time when the state
// changes.
func (l Ledger) SetState(i int, state v1alpha1.ItemState, message string) {
	it := &l.st.Items[i]
	if it.State != state {
		it.State = state
		t := l.now
		it.LastTransitionTime = &t
	}
	it.Message = message
}

// SetMessage says what item i waits for.
func (l Ledger) SetMessage(i int, message string) {
	l.st.Items[i].Message = message
}

// SetWaiting records when item i started waiting to take effect (nil: it does not wait).
func (l Ledger) SetWaiting(i int, since *metav1.Time) {
	l.st.Items[i].WaitingSince = since
}

// RecordApplied records what item i's write applied, under the approved plan's hash and at
// now. A release records nothing: its target is no longer the plan's.
func (l Ledger) RecordApplied(i int, rec *v1alpha1.AppliedRecord, approvedPlanHash string) {
	it := &l.st.Items[i]
	if rec == nil {
		if it.Action == v1alpha1.ItemActionRelease {
			it.Applied = nil
		}
		return
	}
	r := *rec
	r.PlanHash = approvedPlanHash
	r.DesiredHash = ItemDesiredHash(*it)
	t := l.now
	r.Time = &t
	it.Applied = &r
}

// RecordInSync records that item i's target already holds it, as if it was applied now.
func (l Ledger) RecordInSync(i int) {
	if l.st.Items[i].Applied == nil {
		l.st.Items[i].Applied = InSyncRecord(l.st.Items[i])
	}
}

// ForgetApplied drops what the items applied: a revert hands the targets back.
func (l Ledger) ForgetApplied() {
	for i := range l.st.Items {
		l.st.Items[i].Applied = nil
	}
}

// MarkDrifted shows the correction of item i's drift as its diff; the item waits for it.
func (l Ledger) MarkDrifted(i int, dc DriftCheck, message string) {
	it := &l.st.Items[i]
	it.Diff, it.Change, it.SnapshotHash, it.TargetHash, it.Conflicts = dc.Diff, dc.Change, dc.SnapshotHash, dc.TargetHash, dc.Conflicts
	l.SetState(i, v1alpha1.ItemPending, message)
}

// MarkInSync completes item i again: its target is back as applied.
func (l Ledger) MarkInSync(i int, message string) {
	it := &l.st.Items[i]
	it.Diff, it.Change = NoChanges, v1alpha1.ChangeNone
	it.Conflicts = nil
	l.SetState(i, v1alpha1.ItemCompleted, message)
}

// KeepCompleted is the plan a newer operator version drafted for an applied plan, with the
// completed items whose desired content it does not change kept as they are.
func KeepCompleted(p Plan, previous []v1alpha1.PlanItem) Plan {
	old := map[string]v1alpha1.PlanItem{}
	for _, it := range previous {
		old[it.Name] = it
	}
	for i, it := range p.Items {
		if prev, ok := old[it.Name]; ok && prev.State == v1alpha1.ItemCompleted && ItemDesiredHash(prev) == ItemDesiredHash(it) {
			p.Items[i] = prev
		}
	}
	p.SnapshotHash = CombinedSnapshotHash(p.Items)
	return p
}
