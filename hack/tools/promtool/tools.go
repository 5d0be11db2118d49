//go:build tools

// Package tools records the commands this module builds.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
