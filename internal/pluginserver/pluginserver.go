// Package pluginserver serves the built files of the console plugin (console/dist) to the
// OpenShift console, whose backend fetches them from the plugin's Service. The console reads
// the manifest, the entry script and the translations by fixed names every time it loads the
// plugin: they are sent with Cache-Control: no-cache, so a new version of the plugin is used as
// soon as it is rolled out. The other files carry their content hash in their names.
package pluginserver

import (
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// revalidated are the paths the console requests by a fixed name: plugin-manifest.json, the
// entry script (plugin-entry.js, or plugin-entry.<hash>.min.js in a production build) and the
// translations under locales/.
var revalidated = regexp.MustCompile(`^/(plugin-manifest\.json|plugin-entry(\.[0-9a-f]+)?(\.min)?\.js|locales/.+\.json)$`)

// Handler serves the files of dir; it lists no directories.
func Handler(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clean := path.Clean("/" + r.URL.Path)
		info, err := os.Stat(filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(clean, "/"))))
		if err != nil || info.IsDir() {
			http.NotFound(w, r)
			return
		}
		if revalidated.MatchString(clean) {
			w.Header().Set("Cache-Control", "no-cache")
		}
		files.ServeHTTP(w, r)
	})
}
