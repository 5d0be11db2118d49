package cli

import (
	"fmt"
	"strings"
)

// The ANSI escape sequences of the colored output.
const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
)

// Color modes of --color.
const (
	ColorAuto   = "auto"
	ColorAlways = "always"
	ColorNever  = "never"
)

// useColor decides --color: auto colors when stdout is a terminal and NO_COLOR is unset.
func useColor(mode string, isTerminal bool, getenv func(string) string) (bool, error) {
	switch mode {
	case ColorAlways:
		return true, nil
	case ColorNever:
		return false, nil
	case ColorAuto, "":
		if getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
			return false, nil
		}
		return isTerminal, nil
	}
	return false, fmt.Errorf("--color must be auto, always or never, not %q", mode)
}

// painter wraps text in escape sequences when colors are on.
type painter struct{ on bool }

func (p painter) paint(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return code + s + ansiReset
}

func (p painter) bold(s string) string { return p.paint(ansiBold, s) }

// diff colors a unified diff: the file headers bold, hunk headers cyan, added lines green,
// removed lines red.
func (p painter) diff(d string) string {
	lines := strings.SplitAfter(d, "\n")
	var b strings.Builder
	inHunk := false
	for _, line := range lines {
		if line == "" {
			continue
		}
		text := strings.TrimSuffix(line, "\n")
		nl := line[len(text):]
		switch {
		case strings.HasPrefix(text, "@@"):
			inHunk = true
			text = p.paint(ansiCyan, text)
		case !inHunk && (strings.HasPrefix(text, "--- ") || strings.HasPrefix(text, "+++ ")):
			text = p.bold(text)
		case inHunk && strings.HasPrefix(text, "+"):
			text = p.paint(ansiGreen, text)
		case inHunk && strings.HasPrefix(text, "-"):
			text = p.paint(ansiRed, text)
		}
		b.WriteString(text + nl)
	}
	return b.String()
}
