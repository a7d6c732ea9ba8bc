// Package resultfile names and writes the lab's result files, so the
// storage lab (bench) and the end-to-end lab (loadgen) lay results out the
// same way: <dir>/<experiment>/<host>-<UTC start time>.json, indented JSON.
package resultfile

import (
	"bytes"
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

// Header is what every lab result file starts with; result types embed it
// (encoding/json flattens it, so the file's fields stay top-level).
type Header struct {
	Experiment  string    `json:"experiment"`
	Kind        string    `json:"kind"`
	Description string    `json:"description"`
	Command     string    `json:"command"`
	Quick       bool      `json:"quick"`
	Start       time.Time `json:"start"`
	Machine     any       `json:"machine,omitempty"`
}

// WriteResult writes v, whose header h is, as
// <dir>/<experiment>/<this host>-<start>.json and returns the path.
func (h *Header) WriteResult(dir string, v any) (string, error) {
	host, _ := os.Hostname()
	return Write(dir, h.Experiment, host, h.Start, v)
}

// Heading writes the section's title, description and command.
func (h *Header) Heading(b *strings.Builder) {
	Heading(b, h.Experiment, h.Description, h.Command, h.Quick)
}

// DecodeStrict unmarshals b into v, rejecting unknown fields (a typo in
// an experiment file is an error, not a default).
func DecodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// ReadStrict reads the file at path into v with DecodeStrict; an error
// names the file.
func ReadStrict(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := DecodeStrict(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
