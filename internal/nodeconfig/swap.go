// Package nodeconfig renders the MachineConfigs that change worker nodes: swap, kernel
// arguments and kernel module options. Several profiles share them (virt-higher-density and
// platform-baseline render the same swap MachineConfig, so the two co-own it), and the
// Ignition validation tests check every one of them.
package nodeconfig

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The swap MachineConfig's Ignition config. Ignition 3.2.0 is the oldest spec every
// supported OpenShift release accepts, and it has all this needs (files, units, drop-ins).
const (
	IgnitionVersion = "3.2.0"

	// SwapMachineConfigName is the MachineConfig that turns swap on for worker nodes.
	SwapMachineConfigName = "90-worker-kubelet-swap"

	// KubeletDropInPath is the kubelet configuration drop-in that allows swap. OpenShift
	// starts the kubelet with --config-dir=/etc/openshift/kubelet.conf.d.
	KubeletDropInPath = "/etc/openshift/kubelet.conf.d/90-swap.conf"
	// SwapUnit turns swap on at boot, when the labelled partition exists.
	SwapUnit = "virt-advisor-swap.service"
	// SystemSliceDropIn keeps system services (the kubelet, CRI-O, sshd) out of swap, so
	// only pods page out.
	SystemSliceDropIn = "90-virt-advisor-no-swap.conf"
)

// kubeletDropIn lets the kubelet start on a node with swap on and lets burstable pods use
// swap in proportion to their memory request (LimitedSwap).
const kubeletDropIn = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failSwapOn: false
memorySwap:
  swapBehavior: LimitedSwap
`

// swapUnit is the unit that turns swap on. It is never a hard dependency of the kubelet:
// the condition skips it on a node without the partition (a skipped unit is not a failed
// one), and the kubelet only wants it, so even a failed swapon leaves the kubelet to start.
func swapUnit(label string) string {
	device := "/dev/disk/by-partlabel/" + label
	return fmt.Sprintf(`[Unit]
Description=Swap on the partition labelled %[1]s, for the kubelet (LimitedSwap)
Documentation=https://github.com/kubevirt/virt-advisor-operator/blob/main/docs/profiles.md
ConditionPathExists=%[2]s
DefaultDependencies=no
After=local-fs.target
Before=kubelet-dependencies.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/swapon %[2]s

[Install]
WantedBy=kubelet-dependencies.target
`, label, device)
}

const systemSliceDropIn = `[Slice]
MemorySwapMax=0
`

// dataURL encodes file contents as an RFC 2397 data URL, percent-encoded rather than
// base64 so the plan's diff stays readable.
func dataURL(contents string) string {
	return "data:," + strings.ReplaceAll(url.PathEscape(contents), "%2F", "/")
}

// SwapIgnition is the Ignition config of the swap MachineConfig for a partition label.
func SwapIgnition(label string) map[string]any {
	return map[string]any{
		"ignition": map[string]any{"version": IgnitionVersion},
		"storage": map[string]any{"files": []any{map[string]any{
			"path":      KubeletDropInPath,
			"mode":      int64(0o644),
			"overwrite": true,
			"contents":  map[string]any{"source": dataURL(kubeletDropIn)},
		}}},
		"systemd": map[string]any{"units": []any{
			map[string]any{"name": SwapUnit, "enabled": true, "contents": swapUnit(label)},
			map[string]any{"name": "system.slice", "dropins": []any{
				map[string]any{"name": SystemSliceDropIn, "contents": systemSliceDropIn},
			}},
		}},
	}
}

// SwapMachineConfig is the desired swap MachineConfig for the worker pool.
func SwapMachineConfig(label string) *unstructured.Unstructured {
	return workerMachineConfig(SwapMachineConfigName, map[string]any{"config": SwapIgnition(label)})
}

// SwapMessage says what the swap MachineConfig does, for the item that applies it.
func SwapMessage(label string) string {
	return fmt.Sprintf("MachineConfig %s turns swap on for worker nodes from the partition labelled %s "+
		"(/dev/disk/by-partlabel/%s, formatted with mkswap; a node without it boots with swap off) and lets the kubelet "+
		"use it (memorySwap.swapBehavior LimitedSwap), keeping system services out of swap (system.slice MemorySwapMax=0); "+
		"the Machine Config Operator reboots worker nodes one by one", SwapMachineConfigName, label, label)
}
