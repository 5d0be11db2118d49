// Package alerts checks the alerting rules shipped in config/prometheus against their
// runbooks in docs/runbooks and their promtool unit tests (prometheus_rule*_test.yaml, run by
// make test-alerts).
package alerts

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	ruleFile    = "../../config/prometheus/prometheus_rule.yaml"
	unitTests   = "prometheus_rule*_test.yaml"
	runbookDir  = "../../docs/runbooks"
	runbookBase = "https://github.com/kubevirt/virt-advisor-operator/blob/main/docs/runbooks/"
)

type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func readAlerts(t *testing.T) []alertRule {
	t.Helper()
	var manifest struct {
		Spec struct {
			Groups []struct {
				Rules []alertRule `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	readYAML(t, ruleFile, &manifest)
	var alerts []alertRule
	for _, g := range manifest.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r)
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatalf("%s defines no alerts", ruleFile)
	}
	return alerts
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
}

func TestEveryAlertIsNamedLabelledAndAnnotated(t *testing.T) {
	for _, a := range readAlerts(t) {
		t.Run(a.Alert, func(t *testing.T) {
			if !strings.HasPrefix(a.Alert, "VirtAdvisor") {
				t.Errorf("alert name %q does not start with VirtAdvisor", a.Alert)
			}
			if sev := a.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, sev) {
				t.Errorf("labels.severity is %q, want critical, warning or info", sev)
			}
			for _, k := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(a.Annotations[k]) == "" {
					t.Errorf("annotation %s is missing", k)
				}
			}
			// An alert about one config must say which config it is about.
			if strings.Contains(a.Expr, "virt_advisor_config_") && !strings.Contains(a.Annotations["description"], "{{ $labels.name }}") {
				t.Errorf("description does not name the config ({{ $labels.name }}): %q", a.Annotations["description"])
			}
			// An alert about a MachineConfigPool must say which pool it is about.
			if strings.Contains(a.Expr, "virt_advisor_pool_") && !strings.Contains(a.Annotations["description"], "{{ $labels.pool }}") {
				t.Errorf("description does not name the pool ({{ $labels.pool }}): %q", a.Annotations["description"])
			}
		})
	}
}

func TestEveryRunbookURLResolvesToARunbookOfThatAlert(t *testing.T) {
	for _, a := range readAlerts(t) {
		t.Run(a.Alert, func(t *testing.T) {
			want := runbookBase + a.Alert + ".md"
			if got := a.Annotations["runbook_url"]; got != want {
				t.Errorf("runbook_url is %q, want %q", got, want)
			}
			page := filepath.Join(runbookDir, a.Alert+".md")
			data, err := os.ReadFile(page)
			if err != nil {
				t.Fatalf("runbook %s: %v", page, err)
			}
			if !strings.HasPrefix(string(data), "# "+a.Alert+"\n") {
				t.Errorf("%s does not start with the heading \"# %s\"", page, a.Alert)
			}
		})
	}
}

func TestEveryRunbookBelongsToAnAlert(t *testing.T) {
	alerts := map[string]bool{}
	for _, a := range readAlerts(t) {
		alerts[a.Alert] = true
	}
	entries, err := os.ReadDir(runbookDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".md"); !ok || !alerts[name] {
			t.Errorf("%s/%s is not the runbook of an alert in %s", runbookDir, e.Name(), ruleFile)
		}
	}
}

// Every alert needs a promtool case where it fires and one where it stays quiet, or a rule
// that never fires (or always fires) would pass its tests.
func TestEveryAlertHasFiringAndQuietUnitTests(t *testing.T) {
	files, err := filepath.Glob(unitTests)
	if err != nil || len(files) == 0 {
		t.Fatalf("no unit test files %s: %v", unitTests, err)
	}
	firing, quiet := map[string]int{}, map[string]int{}
	for _, f := range files {
		var suite struct {
			Tests []struct {
				AlertTest []struct {
					Alertname string           `json:"alertname"`
					ExpAlerts []map[string]any `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		readYAML(t, f, &suite)
		for _, g := range suite.Tests {
			for _, c := range g.AlertTest {
				if len(c.ExpAlerts) > 0 {
					firing[c.Alertname]++
				} else {
					quiet[c.Alertname]++
				}
			}
		}
	}
	for _, a := range readAlerts(t) {
		if firing[a.Alert] == 0 {
			t.Errorf("%s: no case in %s where it fires", a.Alert, unitTests)
		}
		if quiet[a.Alert] == 0 {
			t.Errorf("%s: no case in %s where it stays quiet", a.Alert, unitTests)
		}
	}
}
