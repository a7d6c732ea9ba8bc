// Package resultfile is what every lab result file shares, so the storage
// lab (bench) and the end-to-end lab (loadgen and its kill loops, chaos,
// backlog and catch-up runs) record results the same way:
//
//   - the layout: <dir>/<experiment>/<host>-<UTC start time>.json,
//     indented JSON (Write, Header.WriteResult), read back with Read;
//   - the Header every result type embeds: experiment, kind, description,
//     command, quick, start and the Machine (CollectMachine: host, kernel,
//     CPU, memory, the data dir's file system and disk, the commit);
//   - Duration, the one JSON duration type of experiment and result files;
//   - what experiment files share: Spec (name, kind, description; the
//     result's Header of a run), ReadExperiment (strict, kind checked),
//     Forms (base settings and the quick form's overrides) and CheckForms;
//   - DecodeStrict and ReadStrict (an unknown field is an error) and Kind,
//     the "kind" an experiment or result file names;
//   - PERFORMANCE.md's generated sections (Heading, UpdateSections);
//   - RelativePaths: what a result file or a section records names the
//     paths under the working directory (the repository) relative to it.
//
// Nothing here keeps state; every function is safe for concurrent use on
// distinct files.
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
	return writeIn(filepath.Join(dir, experiment), host, start, v)
}

// writeIn marshals v into <d>/<host>-<start>.json, creating d.
func writeIn(d, host string, start time.Time, v any) (string, error) {
	if host == "" {
		host = "host"
	}
	host = strings.NewReplacer("/", "_", " ", "_").Replace(host)
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

// Header is what every lab result file starts with; result types embed it
// (encoding/json flattens it, so the file's fields stay top-level).
type Header struct {
	Experiment  string    `json:"experiment"`
	Kind        string    `json:"kind"`
	Description string    `json:"description"`
	Command     string    `json:"command"`
	Quick       bool      `json:"quick"`
	Start       time.Time `json:"start"`
	// Machine is where the run ran (CollectMachine on its data dir).
	Machine *Machine `json:"machine,omitempty"`
}

// Head returns h: a result that embeds a Header hands it out this way.
func (h *Header) Head() *Header { return h }

// host is the machine's host name, or this host's when none is recorded.
func (h *Header) host() string {
	if h.Machine != nil && h.Machine.Hostname != "" {
		return h.Machine.Hostname
	}
	host, _ := os.Hostname()
	return host
}

// WriteResult writes v, whose header h is, as
// <dir>/<experiment>/<host>-<start>.json and returns the path.
func (h *Header) WriteResult(dir string, v any) (string, error) {
	return Write(dir, h.Experiment, h.host(), h.Start, v)
}

// WriteResultIn writes v, whose header h is, as <dir>/<host>-<start>.json
// (dir itself, not a directory per experiment) and returns the path.
func (h *Header) WriteResultIn(dir string, v any) (string, error) {
	return writeIn(dir, h.host(), h.Start, v)
}

// MachineLine is the machine's one-line description ("" when none is
// recorded).
func (h *Header) MachineLine() string {
	if h.Machine == nil {
		return ""
	}
	return h.Machine.String()
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

// Kind returns the "kind" of an experiment or result file (both carry
// one), so a caller can route mixed files.
func Kind(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return k.Kind, nil
}
