package resultfile

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Markers around a generated section of PERFORMANCE.md. Everything
// outside them is hand-written and kept.
const (
	beginMarker = "<!-- BEGIN GENERATED: %s -->"
	endMarker   = "<!-- END GENERATED: %s -->"
)

// UpdateSections rewrites the generated sections named in order: the text
// between each section's markers is replaced; a section without markers
// is appended at the end. A missing file is created.
func UpdateSections(path string, order []string, sections map[string]string) error {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	doc := string(b)
	for _, name := range order {
		if doc, err = replaceSection(doc, name, sections[name]); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(doc), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// replaceSection puts body between name's markers in doc.
func replaceSection(doc, name, body string) (string, error) {
	begin, end := fmt.Sprintf(beginMarker, name), fmt.Sprintf(endMarker, name)
	block := begin + "\n" + strings.TrimRight(body, "\n") + "\n" + end
	i := strings.Index(doc, begin)
	if i < 0 {
		if strings.Contains(doc, end) {
			return "", fmt.Errorf("section %s: end marker without a begin marker", name)
		}
		if doc != "" && !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		if doc != "" {
			doc += "\n"
		}
		return doc + block + "\n", nil
	}
	j := strings.Index(doc[i:], end)
	if j < 0 {
		return "", fmt.Errorf("section %s: begin marker without an end marker", name)
	}
	return doc[:i] + block + doc[i+j+len(end):], nil
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
