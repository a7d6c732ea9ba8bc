package resultfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUpdateSectionsAppendsAndRejectsBrokenMarkers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "P.md")
	require.NoError(t, UpdateSections(path, []string{"a", "b"}, map[string]string{"a": "A\n", "b": "B"}))
	b, _ := os.ReadFile(path)
	require.Equal(t, "<!-- BEGIN GENERATED: a -->\nA\n<!-- END GENERATED: a -->\n\n<!-- BEGIN GENERATED: b -->\nB\n<!-- END GENERATED: b -->\n", string(b))
	require.NoError(t, UpdateSections(path, []string{"a"}, map[string]string{"a": "A2"}))
	b, _ = os.ReadFile(path)
	require.Equal(t, "<!-- BEGIN GENERATED: a -->\nA2\n<!-- END GENERATED: a -->\n\n<!-- BEGIN GENERATED: b -->\nB\n<!-- END GENERATED: b -->\n", string(b))

	require.NoError(t, os.WriteFile(path, []byte("x\n<!-- BEGIN GENERATED: a -->\nno end\n"), 0o644))
	require.ErrorContains(t, UpdateSections(path, []string{"a"}, map[string]string{"a": "A"}), "without an end marker")
}
