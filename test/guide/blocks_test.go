package guide

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kubevirt/virt-advisor-operator/internal/testenv"
)

// testedInfo is the info string of a fenced block whose commands the test runs.
const testedInfo = "sh test"

// shellLanguages are the info strings (their first word) of blocks a reader would run in a
// shell. Each such block is either tested ("sh test") or listed in untestedBlocks.
var shellLanguages = map[string]bool{
	"sh": true, "bash": true, "shell": true, "console": true, "zsh": true, "shell-session": true,
}

// block is one fenced code block of a page.
type block struct {
	// info is the fence's info string, e.g. "sh test" or "yaml".
	info string
	// text is the block's content, without the fences and without the indentation of the
	// opening fence (blocks inside list items).
	text string
	// line is the 1-based line of the opening fence.
	line int
}

// tested reports whether the test runs the block.
func (b block) tested() bool { return b.info == testedInfo }

// shell reports whether the block holds commands for a shell.
func (b block) shell() bool {
	fields := strings.Fields(b.info)
	return len(fields) > 0 && shellLanguages[fields[0]]
}

// page is one Markdown document whose command blocks the test runs (a page of the guide, or
// the repository's README.md) with its fenced blocks.
type page struct {
	// name is the page's path from the repository root, e.g. docs/guide/drift.md.
	name string
	path string
	// body is the whole page; prose is the page without its fenced blocks.
	body   string
	prose  string
	blocks []block
}

// readmePage is the repository's README.md: its commands run like the guide's (TestReadme).
const readmePage = "README.md"

// guideDir is docs/guide.
func guideDir() string { return testenv.Path("docs", "guide") }

// guidePage is the path from the repository root of the guide's page file.
func guidePage(file string) string { return "docs/guide/" + file }

// readPage reads and parses the page at name, a path from the repository root.
func readPage(name string) (page, error) {
	path := testenv.Path(filepath.FromSlash(name))
	data, err := os.ReadFile(path)
	if err != nil {
		return page{}, err
	}
	blocks, prose, err := parseBlocks(string(data))
	if err != nil {
		return page{}, fmt.Errorf("%s: %w", name, err)
	}
	return page{name: name, path: path, body: string(data), prose: prose, blocks: blocks}, nil
}

// fence matches an opening or closing code fence, with its indentation and info string.
var fence = regexp.MustCompile("^( *)(```+)(.*)$")

// parseBlocks returns the fenced code blocks of a Markdown document, in order, and the
// document without them.
func parseBlocks(doc string) ([]block, string, error) {
	var (
		blocks  []block
		prose   []string
		open    *block
		indent  int
		ticks   int
		content []string
	)
	scanner := bufio.NewScanner(strings.NewReader(doc))
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		m := fence.FindStringSubmatch(line)
		if open == nil {
			if m == nil {
				prose = append(prose, line)
				continue
			}
			open = &block{info: strings.TrimSpace(m[3]), line: n}
			indent, ticks, content = len(m[1]), len(m[2]), nil
			continue
		}
		if m != nil && len(m[2]) >= ticks && strings.TrimSpace(m[3]) == "" {
			open.text = strings.Join(content, "\n")
			blocks = append(blocks, *open)
			open = nil
			continue
		}
		// Content lines lose the opening fence's indentation (a block inside a list item).
		trimmed := line
		for i := 0; i < indent && strings.HasPrefix(trimmed, " "); i++ {
			trimmed = trimmed[1:]
		}
		content = append(content, trimmed)
	}
	if err := scanner.Err(); err != nil {
		return nil, "", err
	}
	if open != nil {
		return nil, "", fmt.Errorf("the code block opened on line %d is never closed", open.line)
	}
	return blocks, strings.Join(prose, "\n"), nil
}

// TestGuidePages checks the pages, and README.md, without a control plane: every page is in
// the order the guide test runs them, every block has a language, every shell block is tested
// or listed as deliberately untested (with the reason), the untested list names only blocks
// that exist, tested blocks wait with kubectl wait and never sleep, relative links resolve,
// and the troubleshooting and alert pages cover every condition reason and every alert.
func TestGuidePages(t *testing.T) {
	entries, err := os.ReadDir(guideDir())
	if err != nil {
		t.Fatalf("read %s: %v", guideDir(), err)
	}
	ordered := map[string]bool{}
	for _, name := range pageOrder {
		ordered[name] = true
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") && !ordered[e.Name()] {
			t.Errorf("docs/guide/%s is not in pageOrder: add it where its blocks can run", e.Name())
		}
	}

	pages := []string{readmePage}
	for _, name := range pageOrder {
		pages = append(pages, guidePage(name))
	}
	for _, name := range pages {
		p, err := readPage(name)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		checkBlocks(t, p)
		checkLinks(t, p)
	}
	for name := range untestedBlocks {
		if !slices.Contains(pages, name) {
			t.Errorf("untestedBlocks lists %s, which is neither a page of the guide nor %s", name, readmePage)
		}
	}
	checkCoverage(t)
}

// checkBlocks checks the fenced blocks of one page.
func checkBlocks(t *testing.T, p page) {
	t.Helper()
	listed := map[string]bool{}
	for _, u := range untestedBlocks[p.name] {
		if strings.TrimSpace(u.reason) == "" {
			t.Errorf("%s: the untested block %q has no reason", p.name, firstLine(u.text))
		}
		listed[u.text] = false
	}
	for i, b := range p.blocks {
		where := fmt.Sprintf("%s block %d (line %d)", p.name, i+1, b.line)
		switch {
		case b.info == "":
			t.Errorf("%s has no language: mark commands %q, output \"text\", manifests \"yaml\"", where, testedInfo)
		case b.tested():
			checkTestedBlock(t, where, b)
		case b.shell():
			if _, ok := listed[b.text]; !ok {
				t.Errorf("%s is a %q block that is neither marked %q nor listed in untestedBlocks:\n%s",
					where, b.info, testedInfo, b.text)
				continue
			}
			listed[b.text] = true
		case strings.HasSuffix(b.info, " test"):
			t.Errorf("%s is marked %q: only %q blocks are run", where, b.info, testedInfo)
		}
	}
	for text, found := range listed {
		if !found {
			t.Errorf("untestedBlocks lists a block that %s does not have (changed or removed?):\n%s", p.name, text)
		}
	}
}

var (
	sleepCommand = regexp.MustCompile(`(^|[\s;&|(])sleep\s`)
	kubectlWait  = regexp.MustCompile(`kubectl wait\b[^\n]*`)
)

// checkTestedBlock checks what a tested block may do: wait with kubectl wait and a
// timeout, never with sleep.
func checkTestedBlock(t *testing.T, where string, b block) {
	t.Helper()
	if strings.TrimSpace(b.text) == "" {
		t.Errorf("%s is empty", where)
	}
	if sleepCommand.MatchString(b.text) {
		t.Errorf("%s sleeps: wait for a condition with kubectl wait --for=... --timeout=60s instead", where)
	}
	// A kubectl wait may continue on the next line; join continuation lines first.
	joined := strings.ReplaceAll(b.text, "\\\n", " ")
	for _, w := range kubectlWait.FindAllString(joined, -1) {
		if !strings.Contains(w, "--timeout") {
			t.Errorf("%s: %q has no --timeout", where, w)
		}
	}
}

// markdownLink matches the target of an inline Markdown link.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// checkLinks checks that the relative links of a page point to files that exist.
func checkLinks(t *testing.T, p page) {
	t.Helper()
	// Links inside code blocks are not links.
	for _, m := range markdownLink.FindAllStringSubmatch(p.prose, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, _, _ := strings.Cut(target, "#")
		if _, err := os.Stat(filepath.Join(filepath.Dir(p.path), filepath.FromSlash(file))); err != nil {
			t.Errorf("%s links to %s, which does not exist", p.name, target)
		}
	}
}

var (
	reasonConst = regexp.MustCompile(`(?m)^\s+Reason\w+\s*=\s*"(\w+)"`)
	alertRule   = regexp.MustCompile(`(?m)^\s*- alert: (\w+)\s*$`)
)

// checkCoverage checks that troubleshooting.md explains every condition reason of
// api/v1alpha1/reasons.go and alerts.md every alert of the PrometheusRule, with its runbook.
func checkCoverage(t *testing.T) {
	t.Helper()
	reasons, err := os.ReadFile(testenv.Path("api", "v1alpha1", "reasons.go"))
	if err != nil {
		t.Fatalf("read reasons.go: %v", err)
	}
	troubleshooting, err := readPage(guidePage("troubleshooting.md"))
	if err != nil {
		t.Fatalf("%v", err)
	}
	matches := reasonConst.FindAllStringSubmatch(string(reasons), -1)
	if len(matches) == 0 {
		t.Fatalf("found no condition reasons in api/v1alpha1/reasons.go")
	}
	for _, m := range matches {
		if !strings.Contains(troubleshooting.body, "`"+m[1]+"`") {
			t.Errorf("docs/guide/troubleshooting.md does not explain the condition reason `%s`", m[1])
		}
	}

	rules, err := os.ReadFile(testenv.Path("config", "prometheus", "prometheus_rule.yaml"))
	if err != nil {
		t.Fatalf("read the PrometheusRule: %v", err)
	}
	alerts, err := readPage(guidePage("alerts.md"))
	if err != nil {
		t.Fatalf("%v", err)
	}
	names := alertRule.FindAllStringSubmatch(string(rules), -1)
	if len(names) == 0 {
		t.Fatalf("found no alerts in config/prometheus/prometheus_rule.yaml")
	}
	for _, m := range names {
		if !strings.Contains(alerts.body, "../runbooks/"+m[1]+".md") {
			t.Errorf("docs/guide/alerts.md does not link the runbook of %s (../runbooks/%s.md)", m[1], m[1])
		}
	}
}

// firstLine is the first line of a text, for messages.
func firstLine(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	return line
}
