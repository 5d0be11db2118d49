package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's Plugin (krew.googlecontainertools.github.com/v1alpha2)
// the manifest must fill in.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

func krewManifestPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "dist", "krew", "virt-advisor.yaml")
}

func TestKrewManifest(t *testing.T) {
	data, err := os.ReadFile(krewManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		// Strict: a misspelt field would be ignored by krew.
		var loose krewPlugin
		if lerr := yaml.Unmarshal(data, &loose); lerr != nil {
			t.Fatalf("the manifest is not YAML: %v", lerr)
		}
		t.Fatalf("the manifest has fields krew does not know: %v", err)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" {
		t.Errorf("apiVersion/kind = %s/%s", p.APIVersion, p.Kind)
	}
	if p.Metadata.Name != PluginName {
		t.Errorf("metadata.name = %q; want %q", p.Metadata.Name, PluginName)
	}
	// kubectl runs `kubectl virt-advisor` from kubectl-virt_advisor: dashes in a plugin
	// name become underscores in its binary.
	if want := "kubectl-" + strings.ReplaceAll(PluginName, "-", "_"); BinaryName != want {
		t.Errorf("BinaryName = %q; kubectl looks for %q", BinaryName, want)
	}
	if p.Spec.Version != "${VERSION}" {
		t.Errorf("spec.version = %q; want the ${VERSION} placeholder", p.Spec.Version)
	}
	if !strings.HasPrefix(p.Spec.Homepage, "https://") {
		t.Errorf("spec.homepage = %q", p.Spec.Homepage)
	}
	if p.Spec.ShortDescription == "" || len(p.Spec.ShortDescription) > 60 {
		t.Errorf("spec.shortDescription must be set and short: %q", p.Spec.ShortDescription)
	}
	if len(p.Spec.Description) < len(p.Spec.ShortDescription) {
		t.Errorf("spec.description is missing or shorter than the short description")
	}
	seen := map[string]bool{}
	for _, pl := range p.Spec.Platforms {
		osName, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		key := osName + "/" + arch
		if seen[key] {
			t.Errorf("platform %s listed twice", key)
		}
		seen[key] = true
		if pl.Bin != BinaryName {
			t.Errorf("%s: bin = %q; want %q", key, pl.Bin, BinaryName)
		}
		wantURI := regexp.MustCompile(`^https://\S+/` + regexp.QuoteMeta(BinaryName+"_${VERSION}_"+osName+"_"+arch+".tar.gz") + `$`)
		if !wantURI.MatchString(pl.URI) {
			t.Errorf("%s: uri = %q; want the %s/%s archive", key, pl.URI, osName, arch)
		}
		if want := "${SHA256_" + strings.ToUpper(osName+"_"+arch) + "}"; pl.SHA256 != want {
			t.Errorf("%s: sha256 = %q; want the placeholder %s", key, pl.SHA256, want)
		}
	}
	for _, want := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"} {
		if !seen[want] {
			t.Errorf("no platform %s", want)
		}
	}
}
