package pluginserver

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

func site(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{
		"plugin-manifest.json", "plugin-entry.8734fa0a47d0b80ad8e2.min.js", "plugin-entry.js",
		"exposed-ConfigPage-chunk-5e41640a4b3e6245a4aa.min.js", "locales/en/plugin__virt-advisor-plugin.json",
	} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func get(t *testing.T, h http.Handler, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Result()
}

func TestTheFilesTheConsoleReadsByNameAreRevalidated(t *testing.T) {
	h := Handler(site(t))
	for _, p := range []string{
		"/plugin-manifest.json", "/plugin-entry.8734fa0a47d0b80ad8e2.min.js", "/plugin-entry.js",
		"/locales/en/plugin__virt-advisor-plugin.json",
	} {
		res := get(t, h, p)
		if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s = %d, Cache-Control %q; want 200, no-cache", p, res.StatusCode, res.Header.Get("Cache-Control"))
		}
	}
}

func TestFilesNamedByTheirContentAreServedAsTheyAre(t *testing.T) {
	res := get(t, Handler(site(t)), "/exposed-ConfigPage-chunk-5e41640a4b3e6245a4aa.min.js")
	if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "" {
		t.Errorf("GET a chunk = %d, Cache-Control %q; want 200 without Cache-Control", res.StatusCode, res.Header.Get("Cache-Control"))
	}
}

func TestNoDirectoryListingsNorFilesOutsideTheDirectory(t *testing.T) {
	h := Handler(site(t))
	for _, p := range []string{"/", "/locales/", "/locales/en", "/missing.js", "/../../etc/passwd"} {
		if res := get(t, h, p); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d; want 404", p, res.StatusCode)
		}
	}
}
