package resultfile

import (
	"os"
	"path/filepath"
	"strings"
)

// RelativePaths rewrites the absolute paths in s that lie under the
// working directory (the repository's root when make bench runs) as paths
// relative to it, so that a result file or a PERFORMANCE.md section names
// ".benchdata/e2e", not the machine's "/home/ci/samsa/.benchdata/e2e"; the
// directory itself becomes ".". Paths elsewhere (the temp dir) stay.
func RelativePaths(s string) string {
	wd, err := os.Getwd()
	if err != nil {
		return s
	}
	roots := []string{wd}
	if r, err := filepath.EvalSymlinks(wd); err == nil && r != wd {
		roots = append(roots, r)
	}
	return relativeTo(s, roots...)
}

// relativeTo rewrites the paths in s under each root: root itself as ".",
// root/rest as rest. A root is only matched as a whole path prefix: not
// inside a longer path ("/x/work/a") nor as a prefix of a longer name
// ("/work/ab").
func relativeTo(s string, roots ...string) string {
	for _, root := range roots {
		root = strings.TrimRight(root, "/")
		if root == "" || !strings.HasPrefix(root, "/") {
			continue
		}
		var b strings.Builder
		rest := s
		for {
			i := strings.Index(rest, root)
			if i < 0 {
				b.WriteString(rest)
				break
			}
			before := byte(0)
			if i > 0 {
				before = rest[i-1]
			}
			after := rest[i+len(root):]
			switch {
			case isPathByte(before):
				b.WriteString(rest[:i+len(root)]) // inside a longer path
			case after == "" || !isPathByte(after[0]):
				b.WriteString(rest[:i] + ".")
			case after[0] == '/' && (len(after) == 1 || !isPathByte(after[1])):
				b.WriteString(rest[:i] + ".")
				after = after[1:]
			case after[0] == '/':
				b.WriteString(rest[:i])
				after = after[1:]
			default:
				b.WriteString(rest[:i+len(root)]) // a longer name
			}
			rest = after
		}
		s = b.String()
	}
	return s
}

// isPathByte reports whether c may be part of a path as the lab writes
// them (0: none, the start of the text).
func isPathByte(c byte) bool {
	switch {
	case c == 0:
		return false
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("/._-+@~", c) >= 0
}
