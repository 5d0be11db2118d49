package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
)

func ignoredConfig(name string) *advisorv1alpha1.VirtPlatformConfig {
	vpc := reviewConfig()
	vpc.Name = name
	vpc.Spec.Profile = advisorv1alpha1.ProfileName(name)
	vpc.Spec.Action = advisorv1alpha1.ActionIgnore
	vpc.Status = advisorv1alpha1.VirtPlatformConfigStatus{Phase: advisorv1alpha1.PhaseIgnored, ObservedGeneration: 2}
	setCondition(vpc, advisorv1alpha1.ConditionIgnored, advisorv1alpha1.ReasonActionIgnore, "spec.action is Ignore")
	return vpc
}

func TestStatusTable(t *testing.T) {
	c := fakeClient(completedConfig(), ignoredConfig("virt-higher-density"))
	out, errOut, code := run(t, c, "status")
	if code != ExitOK {
		t.Fatalf("status exit %d: %s", code, errOut)
	}
	want := "PROFILE                  ACTION   PHASE       IMPACT   ITEMS   REASON         AGE\n" +
		"load-aware-rebalancing   Apply    Completed   High     2/2     Applied        90m\n" +
		"virt-higher-density      Ignore   Ignored     -        0/0     ActionIgnore   90m\n"
	if out != want {
		t.Errorf("status =\n%s\nwant\n%s", out, want)
	}
}

func TestStatusJSONAndYAML(t *testing.T) {
	c := fakeClient(reviewConfig(), ignoredConfig("virt-higher-density"))
	out, _, code := run(t, c, "status", "-o", "json")
	if code != ExitOK {
		t.Fatalf("status -o json exit %d", code)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("status -o json is not a JSON list: %v\n%s", err, out)
	}
	if len(rows) != 2 {
		t.Fatalf("want 2 rows:\n%s", out)
	}
	first := rows[0]
	for key, want := range map[string]any{
		"name": "load-aware-rebalancing", "profile": "load-aware-rebalancing", "action": "DryRun",
		"phase": "ReviewRequired", "impact": "High", "itemsCompleted": 0.0, "itemsTotal": 2.0,
		"reason": "AwaitingApproval", "planHash": hashA, "approvalRequired": true, "age": "90m",
		"created": "2026-05-04T10:30:00Z",
	} {
		if first[key] != want {
			t.Errorf("%s = %v (%T); want %v", key, first[key], first[key], want)
		}
	}
	if !strings.HasPrefix(fmt.Sprint(first["message"]), "the plan changes 2 target(s)") {
		t.Errorf("message = %v", first["message"])
	}

	out, _, _ = run(t, c, "status", "virt-higher-density", "-o", "yaml")
	var yrows []StatusRow
	if err := yaml.Unmarshal([]byte(out), &yrows); err != nil || len(yrows) != 1 || yrows[0].Phase != "Ignored" {
		t.Errorf("status NAME -o yaml = %v, %v:\n%s", yrows, err, out)
	}
	if _, _, code = run(t, c, "status", "-o", "wide-json"); code != ExitError {
		t.Errorf("an unknown -o exits %d", code)
	}
}

func TestExplainMissingCRD(t *testing.T) {
	gk := schema.GroupKind{Group: "advisor.kubevirt.io", Kind: "VirtPlatformConfig"}
	err := explain(fmt.Errorf("list: %w", &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: []string{"v1alpha1"}}))
	if !errors.Is(err, errNotInstalled) {
		t.Fatalf("explain = %v", err)
	}
	for _, want := range []string{"virt-advisor-operator is not installed", "dist/chart", "dist/install.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the missing CRD error lacks %q: %v", want, err)
		}
	}
	other := errors.New("connection refused")
	if explain(other) != other {
		t.Error("explain changed an unrelated error")
	}
}

func TestUnknownProfile(t *testing.T) {
	err := notFound("virt-higher-density", []advisorv1alpha1.VirtPlatformConfig{*reviewConfig()})
	want := `no VirtPlatformConfig "virt-higher-density" (the profile exists, but its config was deleted; ` +
		`create it with: kubectl virt-advisor dry-run virt-higher-density). ` +
		`Existing VirtPlatformConfigs: load-aware-rebalancing (ReviewRequired). ` +
		`Valid profile names: load-aware-rebalancing, virt-higher-density, platform-baseline`
	if err.Error() != want {
		t.Errorf("notFound =\n%s\nwant\n%s", err, want)
	}
	if err := notFound("x", nil); !strings.Contains(err.Error(), `"x" is not a profile. There are no VirtPlatformConfigs. Valid profile names`) {
		t.Errorf("notFound without configs = %v", err)
	}
}
