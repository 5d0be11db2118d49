package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// request is one API request of the audit log.
type request struct {
	// operator: sent by the manager; otherwise by the benchmark (the sample, the approval,
	// the pool simulator).
	operator              bool
	at, done              time.Time
	verb                  string
	resource, subresource string
	dryRun                bool
	code                  int
}

// writeVerbs are the verbs that change objects (server-side apply is a patch).
var writeVerbs = map[string]bool{
	"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true,
}

// readRequests reads the requests of operatorUser and of the benchmark from an audit log,
// each once: a watch has two events (ResponseStarted, ResponseComplete), every other
// request one. The API server's own requests (users system:*) are left out.
func readRequests(path, operatorUser string) ([]request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	byID := map[string]int{}
	var out []request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var e testenv.AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		operator := e.User.Username == operatorUser
		if !operator && strings.HasPrefix(e.User.Username, "system:") {
			continue
		}
		code := 0
		if e.ResponseStatus != nil {
			code = e.ResponseStatus.Code
		}
		if i, seen := byID[e.AuditID]; seen {
			if e.Stage == "ResponseComplete" || e.Stage == "Panic" {
				out[i].code, out[i].done = code, e.Done
			}
			continue
		}
		byID[e.AuditID] = len(out)
		r := request{operator: operator, at: e.Received, done: e.Done, verb: e.Verb,
			dryRun: isDryRun(e.RequestURI), code: code}
		if e.ObjectRef != nil {
			r.resource, r.subresource = e.ObjectRef.Resource, e.ObjectRef.Subresource
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

func isDryRun(uri string) bool {
	u, err := url.Parse(uri)
	if err != nil {
		return false
	}
	for _, v := range u.Query()["dryRun"] {
		if v == "All" {
			return true
		}
	}
	return false
}

// counts are the figures of the requests of one stage.
type counts struct {
	// requests is every request, of any verb; a watch counts once.
	requests int
	// writes are the write requests that were not dry runs.
	writes int
	// dryRuns are the write requests sent with dryRun=All.
	dryRuns int
	// conflicts are the requests answered 409 Conflict.
	conflicts int
	// watches are the watch requests among requests.
	watches int
}

// count sums the operator's requests received in [from, to).
func count(reqs []request, from, to time.Time) counts {
	var c counts
	for _, r := range reqs {
		if !r.operator || r.at.Before(from) || !r.at.Before(to) {
			continue
		}
		c.requests++
		switch {
		case writeVerbs[r.verb] && r.dryRun:
			c.dryRuns++
		case writeVerbs[r.verb]:
			c.writes++
		}
		if r.code == 409 {
			c.conflicts++
		}
		if r.verb == "watch" {
			c.watches++
		}
	}
	return c
}

// describe lists the operator's requests received in [from, to) other than watches, as
// "verb resource[/subresource] ×count", most frequent first.
func describe(reqs []request, from, to time.Time) string {
	counts := map[string]int{}
	for _, r := range reqs {
		if !r.operator || r.verb == "watch" || r.at.Before(from) || !r.at.Before(to) {
			continue
		}
		what := r.verb + " " + r.resource
		if r.subresource != "" {
			what += "/" + r.subresource
		}
		if r.dryRun {
			what += " (dry run)"
		}
		counts[what]++
	}
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if counts[kinds[i]] != counts[kinds[j]] {
			return counts[kinds[i]] > counts[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}
