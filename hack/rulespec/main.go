// Command rulespec writes the spec of a PrometheusRule manifest (its rule groups) as a
// Prometheus rule file, the form promtool checks and unit-tests:
//
//	go run ./hack/rulespec config/prometheus/prometheus_rule.yaml bin/alerts/rules.yaml
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: rulespec <PrometheusRule manifest> <rule file to write>")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "rulespec:", err)
		os.Exit(1)
	}
}

func run(manifest, out string) error {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	var rule struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       map[string]any `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(data, &rule); err != nil {
		return fmt.Errorf("read %s: %w", manifest, err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" {
		return fmt.Errorf("%s is a %s %s, not a monitoring.coreos.com/v1 PrometheusRule",
			manifest, rule.APIVersion, rule.Kind)
	}
	if len(rule.Spec) == 0 {
		return fmt.Errorf("%s has no spec", manifest)
	}
	spec, err := yaml.Marshal(rule.Spec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	header := fmt.Sprintf("# Generated from %s by hack/rulespec: edit that file, not this one.\n", manifest)
	return os.WriteFile(out, append([]byte(header), spec...), 0o644)
}
