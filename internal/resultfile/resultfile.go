// Package resultfile names and writes the lab's result files, so the
// storage lab (bench) and the end-to-end lab (loadgen) lay results out the
// same way: <dir>/<experiment>/<host>-<UTC start time>.json, indented JSON.
package resultfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Write marshals v into <dir>/<experiment>/<host>-<start>.json, creating
// the directory, and returns the path. An empty host becomes "host".
func Write(dir, experiment, host string, start time.Time, v any) (string, error) {
	if host == "" {
		host = "host"
	}
	host = strings.NewReplacer("/", "_", " ", "_").Replace(host)
	d := filepath.Join(dir, experiment)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(d, fmt.Sprintf("%s-%s.json", host, start.UTC().Format("20060102T150405Z")))
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, append(b, '\n'), 0o644)
}

// Read unmarshals the result file at path into a new T; an error names
// the file.
func Read[T any](path string) (*T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &v, nil
}

// Heading writes the start of an experiment's PERFORMANCE.md section: its
// title, its description and the command that ran it (marked quick).
func Heading(b *strings.Builder, experiment, description, command string, quick bool) {
	fmt.Fprintf(b, "### %s\n\n", experiment)
	if description != "" {
		fmt.Fprintf(b, "%s\n\n", description)
	}
	if command != "" {
		fmt.Fprintf(b, "Command: `%s`", command)
		if quick {
			b.WriteString(" (quick)")
		}
		b.WriteString("\n\n")
	}
}
