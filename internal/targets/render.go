package targets

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BatchRendered tells whether the configuration a pool targets (spec.configuration) holds
// what every object of a batch puts on its nodes: a MachineConfig as written, a
// KubeletConfig through the MachineConfig the Machine Config Operator generated from its
// latest generation. The operator's render controller renders a paused pool too, and its
// kubelet-config controller generates a KubeletConfig's MachineConfig on its own time: a
// pool resumed before its configuration holds the whole batch would roll out one without
// part of it, then another one, and its nodes would reboot twice. A KubeletConfig that is
// gone or failed is no reason to wait: its item's health check fails it. When it is false,
// the message says what the configuration still lacks.
func BatchRendered(ctx context.Context, reader client.Reader, pool *unstructured.Unstructured, batch []*unstructured.Unstructured) (bool, string, error) {
	name := pool.GetName()
	target, _, _ := unstructured.NestedString(pool.Object, "spec", "configuration", "name")
	if target == "" {
		return false, fmt.Sprintf("MachineConfigPool %s has rendered no configuration yet", name), nil
	}
	rendered := &unstructured.Unstructured{}
	rendered.SetGroupVersionKind(MachineConfig.GVK)
	if err := reader.Get(ctx, client.ObjectKey{Name: target}, rendered); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("MachineConfigPool %s targets %s, a MachineConfig that does not exist yet", name, target), nil
		}
		return false, "", fmt.Errorf("read rendered MachineConfig %s of MachineConfigPool %s: %w", target, name, err)
	}
	holds, err := ContentOf(rendered)
	if err != nil {
		return false, "", err
	}
	var lacking, pending []string
	for _, obj := range batch {
		var content NodeContent
		source := "MachineConfig " + obj.GetName()
		switch obj.GroupVersionKind().GroupKind() {
		case MachineConfig.GroupKind():
			if content, err = ContentOf(obj); err != nil {
				return false, "", err
			}
		case KubeletConfig.GroupKind():
			kc := &unstructured.Unstructured{}
			kc.SetGroupVersionKind(obj.GroupVersionKind())
			if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), kc); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return false, "", fmt.Errorf("read %s: %w", Describe(obj), err)
			}
			if kubeletConfigFailure(kc) != "" {
				continue
			}
			if msg, processed := kubeletConfigProcessed(kc); !processed {
				pending = append(pending, msg)
				continue
			}
			generated, msg, err := generatedMachineConfig(ctx, reader, kc, name)
			if err != nil {
				return false, "", err
			}
			if generated == nil {
				pending = append(pending, msg)
				continue
			}
			if content, err = ContentOf(generated); err != nil {
				return false, "", err
			}
			source = fmt.Sprintf("MachineConfig %s (KubeletConfig %s)", generated.GetName(), kc.GetName())
		default:
			continue
		}
		if lacks := holds.Missing(content); len(lacks) > 0 {
			lacking = append(lacking, fmt.Sprintf("%s of %s", strings.Join(lacks, ", "), source))
		}
	}
	if len(lacking) > 0 {
		pending = append(pending, fmt.Sprintf("MachineConfigPool %s targets %s, which lacks %s yet", name, target, strings.Join(lacking, "; ")))
	}
	return len(pending) == 0, strings.Join(pending, "; "), nil
}

// PoolDegraded tells whether the pool is Degraded, NodeDegraded or RenderDegraded.
func PoolDegraded(pool *unstructured.Unstructured) bool {
	_, degraded := degradedMessage(pool)
	return degraded
}
