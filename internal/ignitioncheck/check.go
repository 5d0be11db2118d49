// Package ignitioncheck validates the Ignition config of a MachineConfig the way the
// Machine Config Operator does: with the real Ignition config parser and validator, at
// the spec version the config declares, plus a parse of every systemd unit and drop-in
// it carries. Only tests import it, so the operator binary does not carry Ignition.
package ignitioncheck

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
	v3_2 "github.com/coreos/ignition/v2/config/v3_2"
	v3_2types "github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/coreos/vcontext/report"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Check validates the Ignition config of the MachineConfig mc (spec.config). It fails on
// any error or warning of the Ignition validator, and on a unit or drop-in whose contents
// are not a unit file.
func Check(mc *unstructured.Unstructured) error {
	config, found, err := unstructured.NestedMap(mc.Object, "spec", "config")
	if err != nil || !found {
		return fmt.Errorf("MachineConfig %s has no spec.config", mc.GetName())
	}
	raw, err := json.Marshal(config)
	if err != nil {
		return err
	}
	return CheckRaw(raw)
}

// CheckRaw validates a raw Ignition config; see Check.
func CheckRaw(raw []byte) error {
	cfg, rpt, err := v3_2.Parse(raw)
	if err != nil {
		return fmt.Errorf("ignition %s parser: %w%s", v3_2types.MaxVersion, err, entries(rpt))
	}
	if len(rpt.Entries) > 0 {
		return fmt.Errorf("ignition %s validator reports:%s", v3_2types.MaxVersion, entries(rpt))
	}
	for _, u := range cfg.Systemd.Units {
		if u.Contents != nil {
			if err := parseUnit(*u.Contents); err != nil {
				return fmt.Errorf("systemd unit %s: %w", u.Name, err)
			}
		}
		for _, d := range u.Dropins {
			if d.Contents == nil {
				return fmt.Errorf("systemd unit %s: drop-in %s has no contents", u.Name, d.Name)
			}
			if err := parseUnit(*d.Contents); err != nil {
				return fmt.Errorf("systemd unit %s drop-in %s: %w", u.Name, d.Name, err)
			}
		}
	}
	return nil
}

// parseUnit parses contents as a unit file: at least one section, every option inside one.
func parseUnit(contents string) error {
	for _, line := range strings.Split(contents, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if !strings.HasPrefix(line, "[") {
			return fmt.Errorf("line %q is outside any section", line)
		}
		break
	}
	opts, err := unit.DeserializeOptions(strings.NewReader(contents))
	if err != nil {
		return err
	}
	if len(opts) == 0 {
		return fmt.Errorf("no options in a section")
	}
	for _, o := range opts {
		if o.Section == "" {
			return fmt.Errorf("option %s is outside any section", o.Name)
		}
	}
	return nil
}

func entries(rpt report.Report) string {
	var b strings.Builder
	for _, e := range rpt.Entries {
		fmt.Fprintf(&b, "\n  %s", e.String())
	}
	return b.String()
}
