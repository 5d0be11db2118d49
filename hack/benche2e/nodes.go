package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The Node objects of the scenarios look like those of an OpenShift Virtualization cluster
// on bare metal: the labels Node Feature Discovery sets (feature.node.kubernetes.io/...,
// <source>-<feature>[.<attribute>]), the labels of KubeVirt's node labeller, the
// well-known Kubernetes and OpenShift labels, and the annotations OVN-Kubernetes, the
// Machine Config Daemon, Node Feature Discovery and the kubelet leave; their status reports
// capacity, addresses and images as a kubelet does. The manager reads Nodes metadata-only,
// so the status must never reach it; it is there so that a full read would show.

const nfd = "feature.node.kubernetes.io/"

// cpuidFlags are the CPUID flags Node Feature Discovery reports for an Ice Lake Xeon
// (cpu-cpuid.<flag>).
var cpuidFlags = []string{
	"ADX", "AESNI", "AVX", "AVX2", "AVX512BITALG", "AVX512BW", "AVX512CD", "AVX512DQ", "AVX512F",
	"AVX512IFMA", "AVX512VBMI", "AVX512VBMI2", "AVX512VL", "AVX512VNNI", "AVX512VPOPCNTDQ", "BMI1",
	"BMI2", "CLMUL", "CLWB", "CMPXCHG8", "CX16", "ERMS", "F16C", "FLUSH_L1D", "FMA3", "FSRM", "FXSR",
	"FXSROPT", "GFNI", "IA32_ARCH_CAP", "IA32_CORE_CAP", "IBPB", "IBRS", "IBRS_PREFERRED", "LAHF",
	"LZCNT", "MD_CLEAR", "MOVBE", "MOVDIR64B", "MOVDIRI", "OSXSAVE", "POPCNT", "PREFETCHW", "RDRAND",
	"RDSEED", "RDTSCP", "SHA", "SPEC_CTRL_SSBD", "SSE", "SSE2", "SSE3", "SSE4", "SSE42", "SSSE3",
	"STIBP", "STIBP_ALWAYSON", "SYSCALL", "SYSEE", "VAES", "VMX", "VPCLMULQDQ", "WAITPKG", "WBNOINVD",
	"X87", "XGETBV1", "XSAVE", "XSAVEC", "XSAVEOPT", "XSAVES", "CETIBT", "CETSS", "PCONFIG",
	"SERIALIZE", "TSXLDTRK", "AMXBF16", "AMXINT8", "AMXTILE", "AVX512BF16", "AVX512FP16", "CLDEMOTE",
	"ENQCMD", "SGX", "SGXLC", "TME", "VPCLMULQDQ512",
}

// kubevirtCPUFeatures are the CPU features KubeVirt's node labeller reports
// (cpu-feature.node.kubevirt.io/<feature>).
var kubevirtCPUFeatures = []string{
	"abm", "adx", "aes", "amd-ssbd", "amd-stibp", "arat", "arch-capabilities", "avx512-bf16",
	"avx512-fp16", "avx512-vpopcntdq", "avx512bitalg", "avx512ifma", "avx512vbmi", "avx512vbmi2",
	"avx512vnni", "bus-lock-detect", "cldemote", "clwb", "fsrm", "gfni", "hypervisor", "ibpb",
	"ibrs", "invtsc", "md-clear", "movdir64b", "movdiri", "pdcm", "pku", "pschange-mc-no", "rdctl-no",
	"rdpid", "sha-ni", "skip-l1dfl-vmentry", "ss", "ssbd", "stibp", "tsc-deadline", "tsc_adjust",
	"umip", "vaes", "vmx", "vpclmulqdq", "waitpkg", "xsaves",
}

// nodeKind is the kind of node a scenario creates.
type nodeKind struct {
	// role is worker or master.
	role string
	// mcoAnnotations: the node carries the Machine Config Daemon's annotations, on
	// renderedConfig. Nodes a pool simulator manages are created without them: they join
	// the pool as new nodes do.
	mcoAnnotations bool
	renderedConfig string
}

// node is the Node i of its role, with its status.
func (k nodeKind) node(i int) *corev1.Node {
	name := fmt.Sprintf("%s-%d", k.role, i)
	labels := map[string]string{
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
		"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
		"node.openshift.io/os_id":       "rhcos",
		"topology.kubernetes.io/region": "dc1", "topology.kubernetes.io/zone": fmt.Sprintf("dc1-rack%d", i%8),
		"node-role.kubernetes.io/" + k.role:          "",
		"cluster.ocs.openshift.io/openshift-storage": "",
	}
	if k.role == "master" {
		labels["node-role.kubernetes.io/control-plane"] = ""
	}
	for _, f := range cpuidFlags {
		labels[nfd+"cpu-cpuid."+f] = "true"
	}
	for k, v := range map[string]string{
		"cpu-hardware_multithreading": "true", "cpu-model.family": "6", "cpu-model.id": "106",
		"cpu-model.vendor_id": "Intel", "cpu-pstate.status": "active", "cpu-pstate.turbo": "true",
		"cpu-pstate.scaling_governor": "performance", "cpu-cstate.enabled": "true",
		"cpu-rdt.RDTCMT": "true", "cpu-rdt.RDTL3CA": "true", "cpu-rdt.RDTMBA": "true",
		"cpu-rdt.RDTMBM": "true", "cpu-rdt.RDTMON": "true", "cpu-security.sgx.enabled": "true",
		"kernel-config.NO_HZ": "true", "kernel-config.NO_HZ_FULL": "true", "kernel-selinux.enabled": "true",
		"kernel-version.full": "5.14.0-427.50.1.el9_4.x86_64", "kernel-version.major": "5",
		"kernel-version.minor": "14", "kernel-version.revision": "0",
		"network-sriov.capable": "true", "pci-0300_102b.present": "true", "pci-0200_8086.present": "true",
		"pci-0200_8086.sriov.capable": "true", "pci-0b40_8086.present": "true",
		"pci-0108_144d.present": "true", "storage-nonrotationaldisk": "true",
		"system-os_release.ID": "rhcos", "system-os_release.VERSION_ID": "4.18",
		"system-os_release.VERSION_ID.major": "4", "system-os_release.VERSION_ID.minor": "18",
		"system-os_release.OSTREE_VERSION": "418.94.202501221327-0", "system-os_release.RHEL_VERSION": "9.4",
		"usb-ef_046d_c52b.present": "true", "usb-ff_0bda_8153.present": "true",
	} {
		labels[nfd+k] = v
	}
	// The hardware differs between nodes: two NUMA nodes on even ones, an NVIDIA T4 on every
	// third, and the IOMMU already on for every fourth.
	if i%2 == 0 {
		labels[nfd+"memory-numa"] = "true"
	} else {
		labels[nfd+"memory-numa"] = "false"
	}
	if i%3 == 0 {
		labels[nfd+"pci-0302_10de.present"] = "true"
	}
	if i%4 == 0 {
		labels[nfd+"iommu-enabled"] = "true"
	}
	for k, v := range map[string]string{
		"kubevirt.io/schedulable": "true", "kubevirt.io/ksm-enabled": "false",
		"cpu-model.node.kubevirt.io/Icelake-Server":              "true",
		"cpu-model.node.kubevirt.io/Icelake-Server-noTSX":        "true",
		"cpu-model.node.kubevirt.io/Cascadelake-Server-noTSX":    "true",
		"cpu-model.node.kubevirt.io/Skylake-Server-noTSX-IBRS":   "true",
		"cpu-model-migration.node.kubevirt.io/Icelake-Server":    "true",
		"host-model-cpu.node.kubevirt.io/Icelake-Server-noTSX":   "true",
		"host-model-required-features.node.kubevirt.io/invtsc":   "true",
		"cpu-vendor.node.kubevirt.io/Intel":                      "true",
		"cpu-timer.node.kubevirt.io/tsc-frequency":               "2100000000",
		"cpu-timer.node.kubevirt.io/tsc-scalable":                "true",
		"scheduling.node.kubevirt.io/tsc-frequency-2100000000":   "true",
		"machine-type.node.kubevirt.io/pc-q35-rhel9.4.0":         "true",
		"hyperv.node.kubevirt.io/base":                           "true",
		"hyperv.node.kubevirt.io/frequencies":                    "true",
		"hyperv.node.kubevirt.io/ipi":                            "true",
		"hyperv.node.kubevirt.io/reenlightenment":                "true",
		"hyperv.node.kubevirt.io/reset":                          "true",
		"hyperv.node.kubevirt.io/runtime":                        "true",
		"hyperv.node.kubevirt.io/synic":                          "true",
		"hyperv.node.kubevirt.io/synic2":                         "true",
		"hyperv.node.kubevirt.io/synictimer":                     "true",
		"hyperv.node.kubevirt.io/time":                           "true",
		"hyperv.node.kubevirt.io/tlbflush":                       "true",
		"hyperv.node.kubevirt.io/vpindex":                        "true",
		"kubevirt.io/ksm-handler-managed":                        "false",
		"supported-machine-type.node.kubevirt.io/pc-q35-rhel9.4": "true",
	} {
		labels[k] = v
	}
	for _, f := range kubevirtCPUFeatures {
		labels["cpu-feature.node.kubevirt.io/"+f] = "true"
	}

	var featureLabels []string
	for key := range labels {
		if rest, ok := strings.CutPrefix(key, nfd); ok {
			featureLabels = append(featureLabels, rest)
		}
	}
	sort.Strings(featureLabels)
	ip := fmt.Sprintf("10.0.%d.%d", 16+i/250, 10+i%250)
	mac := fmt.Sprintf("b4:96:91:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff)
	annotations := map[string]string{}
	for _, kv := range [][2]string{
		{"csi.volume.kubernetes.io/nodeid", fmt.Sprintf(`{"openshift-storage.rbd.csi.ceph.com":%q}`, name)},
		{"k8s.ovn.org/host-cidrs", fmt.Sprintf(`["%s/20"]`, ip)},
		{"k8s.ovn.org/l3-gateway-config", fmt.Sprintf(`{"default":{"mode":"shared","bridge-id":"br-ex",`+
			`"interface-id":"br-ex_%s","mac-address":"%s","ip-addresses":["%s/20"],"ip-address":"%s/20",`+
			`"next-hops":["10.0.16.1"],"next-hop":"10.0.16.1","node-port-enable":"true","vlan-id":"0"}}`, name, mac, ip, ip)},
		{"k8s.ovn.org/network-ids", `{"default":"0"}`},
		{"k8s.ovn.org/node-chassis-id", uuidFor("chassis", name)},
		{"k8s.ovn.org/node-encap-ips", fmt.Sprintf(`["%s"]`, ip)},
		{"k8s.ovn.org/node-gateway-router-lrp-ifaddrs",
			fmt.Sprintf(`{"default":{"ipv4":"100.64.%d.%d/16"}}`, i/250, 2+i%250)},
		{"k8s.ovn.org/node-id", fmt.Sprint(i + 2)},
		{"k8s.ovn.org/node-masquerade-subnet", `{"ipv4":"169.254.0.0/17","ipv6":"fd69::/112"}`},
		{"k8s.ovn.org/node-primary-ifaddr", fmt.Sprintf(`{"ipv4":"%s/20"}`, ip)},
		{"k8s.ovn.org/node-subnets", fmt.Sprintf(`{"default":["10.%d.%d.0/23"]}`, 128+i/128, i%128*2)},
		{"k8s.ovn.org/node-transit-switch-port-ifaddr", fmt.Sprintf(`{"ipv4":"100.88.%d.%d/16"}`, i/250, 2+i%250)},
		{"k8s.ovn.org/remote-zone-migrated", name},
		{"k8s.ovn.org/zone-name", name},
		{"machine.openshift.io/machine", "openshift-machine-api/bench-" + name},
		{"machineconfiguration.openshift.io/controlPlaneTopology", "HighlyAvailable"},
		{"nfd.node.kubernetes.io/feature-labels", strings.Join(featureLabels, ",")},
		{"nfd.node.kubernetes.io/extended-resources", ""},
		{"nfd.node.kubernetes.io/worker.version", "v4.18.0"},
		{"node.alpha.kubernetes.io/ttl", "0"},
		{"volumes.kubernetes.io/controller-managed-attach-detach", "true"},
		{"kubevirt.io/heartbeat", "2026-01-05T10:00:00Z"},
	} {
		annotations[kv[0]] = kv[1]
	}
	if k.mcoAnnotations {
		for key, v := range map[string]string{
			"currentConfig": k.renderedConfig, "desiredConfig": k.renderedConfig,
			"desiredDrain": "uncordon-" + k.renderedConfig, "lastAppliedDrain": "uncordon-" + k.renderedConfig,
			"lastObservedServerCAAnnotation": "false", "lastSyncedControllerConfigResourceVersion": "4187654",
			"reason": "", "state": "Done",
		} {
			annotations["machineconfiguration.openshift.io/"+key] = v
		}
	}

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{ProviderID: "baremetalhost:///openshift-machine-api/bench-" + name},
	}
	now := metav1.Now()
	quantity := resource.MustParse
	node.Status = corev1.NodeStatus{
		Capacity: corev1.ResourceList{
			"cpu": quantity("96"), "memory": quantity("527951268Ki"), "pods": quantity("250"),
			"ephemeral-storage": quantity("936568812Ki"), "hugepages-1Gi": quantity("0"), "hugepages-2Mi": quantity("0"),
			"devices.kubevirt.io/kvm": quantity("1k"), "devices.kubevirt.io/tun": quantity("1k"),
			"devices.kubevirt.io/vhost-net": quantity("1k"),
		},
		Allocatable: corev1.ResourceList{
			"cpu": quantity("95500m"), "memory": quantity("526800292Ki"), "pods": quantity("250"),
			"ephemeral-storage": quantity("862067005741"), "hugepages-1Gi": quantity("0"), "hugepages-2Mi": quantity("0"),
			"devices.kubevirt.io/kvm": quantity("1k"), "devices.kubevirt.io/tun": quantity("1k"),
			"devices.kubevirt.io/vhost-net": quantity("1k"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name},
		},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID: uuidFor("machine", name), SystemUUID: uuidFor("system", name), BootID: uuidFor("boot", name),
			KernelVersion: "5.14.0-427.50.1.el9_4.x86_64", OSImage: "Red Hat Enterprise Linux CoreOS 418.94.202501221327-0",
			ContainerRuntimeVersion: "cri-o://1.31.4-4.rhaos4.18.gitd1ba28c.el9", KubeletVersion: "v1.31.5",
			OperatingSystem: "linux", Architecture: "amd64",
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
	}
	for _, c := range []struct {
		kind   corev1.NodeConditionType
		status corev1.ConditionStatus
		reason string
	}{
		{corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"},
		{corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"},
		{corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"},
		{corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"},
	} {
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
			Type: c.kind, Status: c.status, Reason: c.reason, LastHeartbeatTime: now, LastTransitionTime: now,
		})
	}
	for j := range 40 {
		digest := sha256.Sum256([]byte(fmt.Sprintf("image-%d", j)))
		ref := "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + hex.EncodeToString(digest[:])
		node.Status.Images = append(node.Status.Images,
			corev1.ContainerImage{Names: []string{ref}, SizeBytes: int64(200_000_000 + j*7_000_000)})
	}
	return node
}

// uuidFor is a UUID-shaped identifier derived from kind and name.
func uuidFor(kind, name string) string {
	sum := sha256.Sum256([]byte(kind + "/" + name))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// metadataBytes is the size of a node's labels and annotations as JSON.
func metadataBytes(n *corev1.Node) int {
	data, _ := json.Marshal(map[string]any{"labels": n.Labels, "annotations": n.Annotations})
	return len(data)
}

// createNodes creates count nodes of the kind, with their status, from parallel clients.
func (cp *controlPlane) createNodes(ctx context.Context, kind nodeKind, count int) error {
	return parallel(ctx, count, func(ctx context.Context, i int) error {
		node := kind.node(i)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(node)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion("v1")
		u.SetKind("Node")
		status := u.Object["status"]
		delete(u.Object, "status")
		created, err := cp.dyn.Resource(nodeGVR).Create(ctx, u, metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return fmt.Errorf("create node %s: %w", node.Name, err)
		}
		created.Object["status"] = status
		_, err = cp.dyn.Resource(nodeGVR).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: fieldManager})
		if err != nil {
			return fmt.Errorf("report the status of node %s: %w", node.Name, err)
		}
		return nil
	})
}

// parallelClients is how many requests the benchmark's bulk loads send at once.
const parallelClients = 16

// parallel runs do(0) ... do(count-1) on parallelClients goroutines and returns the first
// error.
func parallel(ctx context.Context, count int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for range min(parallelClients, count) {
		wg.Go(func() {
			for i := range next {
				if err := do(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
				}
			}
		})
	}
feed:
	for i := range count {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil && count > 0 {
		// The parent context ended.
		return ctx.Err()
	}
	return firstErr
}
