package v1alpha1

// ViaContent is status.approval.via for an execution approved by spec.approvedContent: an
// approval of the plan's content, which may have been given once for a fleet of clusters.
const ViaContent = "content"

// PlanContent is what a plan would make its targets become and what that does to the nodes,
// independent of the cluster it was drafted on: two clusters whose plans would write the
// same content have the same hash, whatever their live state. It covers, per item (in
// name order), the item's name, its target's group, kind, namespace and name, its action,
// its desired state, whether it is skipped, and its impact: what applying the desired
// state does (a reboot of the nodes of the pool it targets is High), as the profile
// renders it, not lowered where the target already holds it. It leaves out what differs
// from cluster to cluster or from plan to plan: the live diffs and snapshots, conflicts,
// resource versions, node names and counts, waves, durations, VMs, states, messages,
// timestamps and the plan's revision. A cluster that already holds some of the content
// has the same hash as one that holds none of it: approving the content approves writing
// it, and the forecast of each cluster (status.rollouts) says what that costs there.
type PlanContent struct {
	// hash is the SHA-256, as lowercase hex, of items. Copy it, or the whole
	// status.content, into spec.approvedContent of any cluster to approve a plan with this
	// content there.
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-f0-9]{64}$')",message="the content hash must be the 64-character lowercase hex value of status.contentHash"
	Hash string `json:"hash"`
	// items are the content of each plan item, by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Items []ContentItem `json:"items,omitempty"`
}

// ContentItem is the content of one plan item.
type ContentItem struct {
	// name of the item.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// hash is the SHA-256 of the item's target (group, kind, namespace, name), action,
	// desired state, impact and whether it is skipped.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Hash string `json:"hash"`
	// impact is what applying the desired state does, as the profile renders it.
	// +optional
	Impact ImpactSeverity `json:"impact,omitempty"`
	// skipped is true when the item writes nothing (its kind is not installed, or an
	// annotation of its target asks to leave it alone).
	// +optional
	Skipped bool `json:"skipped,omitempty"`
}
