// Package version holds the operator's version, injected at build time with
// -ldflags "-X github.com/kubevirt/virt-advisor-operator/internal/version.Version=...".
package version

// Version is the operator's build version. It is recorded in status.operatorVersion so
// an upgraded operator can tell which plans an older version drafted.
var Version = "v0.0.0-dev"
