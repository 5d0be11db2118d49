package loadaware_test

import (
	. "github.com/onsi/ginkgo/v2"
)

// One control plane per KubeDescheduler CRD generation, started once for its container;
// ContinueOnFailure keeps one failing spec from hiding the results of the others.
// The 4.20+ one, the generation current clusters run, also carries the specs that do not
// depend on the generation.

var _ = Describe("load-aware-rebalancing with the 4.20+ KubeDescheduler CRD (incl. the 4.21+ CEL rules)", Ordered, ContinueOnFailure, func() {
	cl := onCluster("4.20")
	describeProfileSelection(cl, variant420)
	describeReadingInputs(cl)
	describeDefaultsMatchTheCRD(cl)
	describePrerequisiteErrors(cl)
})

var _ = Describe("load-aware-rebalancing with the 4.18/4.19 KubeDescheduler CRD", Ordered, ContinueOnFailure, func() {
	describeProfileSelection(onCluster("4.18"), variant418)
})

var _ = Describe("load-aware-rebalancing with the 4.17 KubeDescheduler CRD", Ordered, ContinueOnFailure, func() {
	describeProfileSelection(onCluster("4.17"), variant417)
})

var _ = Describe("load-aware-rebalancing with the 4.16 KubeDescheduler CRD", Ordered, ContinueOnFailure, func() {
	describeProfileSelection(onCluster("4.16"), variant416)
})
