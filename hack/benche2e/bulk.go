package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// bulkObjects are unrelated objects of a long-lived cluster that the manager must not
// bring into memory: MachineConfigs shaped like the Machine Config Operator's rendered
// configurations of past roll-outs (files, units, kernel arguments, an OS image; no role
// label, so no pool selects them), and ConfigMaps spread over namespaces.
type bulkObjects struct {
	machineConfigs, machineConfigBytes int
	configMaps, configMapBytes         int
	configMapNamespaces                int
}

func (b bulkObjects) String() string {
	return fmt.Sprintf("%d MachineConfigs of %d KiB, %d ConfigMaps of %d KiB in %d namespaces",
		b.machineConfigs, b.machineConfigBytes/1024, b.configMaps, b.configMapBytes/1024, b.configMapNamespaces)
}

// create creates the objects from parallel clients.
func (b bulkObjects) create(ctx context.Context, cp *controlPlane) error {
	err := parallel(ctx, b.machineConfigs, func(ctx context.Context, i int) error {
		_, err := cp.dyn.Resource(mcGVR).Create(ctx, b.machineConfig(i), metav1.CreateOptions{FieldManager: fieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("create the bulk MachineConfigs: %w", err)
	}
	for n := range b.configMapNamespaces {
		if err := cp.createNamespace(ctx, fmt.Sprintf("bench-bulk-%d", n)); err != nil {
			return err
		}
	}
	err = parallel(ctx, b.configMaps, func(ctx context.Context, i int) error {
		_, err := cp.dyn.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).
			Namespace(fmt.Sprintf("bench-bulk-%d", i%b.configMapNamespaces)).
			Create(ctx, b.configMap(i), metav1.CreateOptions{FieldManager: fieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("create the bulk ConfigMaps: %w", err)
	}
	return nil
}

// filler is n bytes of text that differs with seed.
func filler(seed string, n int) string {
	var b strings.Builder
	for b.Len() < n {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", seed, b.Len())))
		b.WriteString(hex.EncodeToString(sum[:]))
	}
	return b.String()[:n]
}

func (b bulkObjects) machineConfig(i int) *unstructured.Unstructured {
	sum := sha256.Sum256([]byte(fmt.Sprint("bulk-", i)))
	name := "rendered-worker-" + hex.EncodeToString(sum[:8])
	// Ten files share the spec's size; a file's contents is a base64 data URL, as in the
	// Machine Config Operator's rendered configurations.
	const files = 10
	perFile := b.machineConfigBytes / files * 3 / 4
	storage := make([]any, 0, files)
	for f := range files {
		storage = append(storage, map[string]any{
			"path": fmt.Sprintf("/etc/bench/file-%d.conf", f), "mode": int64(420), "overwrite": true,
			"contents": map[string]any{
				"source": "data:text/plain;charset=utf-8;base64," +
					base64.StdEncoding.EncodeToString([]byte(filler(fmt.Sprint(name, f), perFile))),
			},
		})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1",
		"kind":       "MachineConfig",
		"metadata": map[string]any{
			"name": name,
			"annotations": map[string]any{
				"machineconfiguration.openshift.io/generated-by-controller-version": "4a8e1c1a5c1b7b0b2f9b0c7a0d5c4f7e2b1a9c3d",
				"machineconfiguration.openshift.io/release-image-version":           "4.18.1",
			},
		},
		"spec": map[string]any{
			"osImageURL":      "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + filler(name+"/os", 64),
			"kernelArguments": []any{"systemd.unified_cgroup_hierarchy=1", "cgroup_no_v1=\"all\"", "psi=0"},
			"config": map[string]any{
				"ignition": map[string]any{"version": "3.4.0"},
				"storage":  map[string]any{"files": storage},
				"systemd": map[string]any{"units": []any{
					map[string]any{"name": "kubelet.service", "enabled": true, "contents": "[Unit]\nDescription=Kubernetes Kubelet\n"},
					map[string]any{"name": "crio.service", "enabled": true},
				}},
			},
		},
	}}
}

func (b bulkObjects) configMap(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": fmt.Sprintf("bench-bulk-%d", i)},
		"data":       map[string]any{"payload": filler(fmt.Sprint("cm-", i), b.configMapBytes)},
	}}
}
