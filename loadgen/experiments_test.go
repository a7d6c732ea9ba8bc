package loadgen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShippedExperimentsParse keeps every e2e experiment file loadable.
func TestShippedExperimentsParse(t *testing.T) {
	files, err := filepath.Glob("../experiments/*.json")
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var k struct {
			Kind string `json:"kind"`
		}
		require.NoError(t, json.Unmarshal(b, &k), f)
		if k.Kind != "e2e" {
			continue // storage, durability and catch-up experiments load elsewhere
		}
		e, err := LoadExperiment(f)
		require.NoError(t, err, f)
		for _, quick := range []bool{false, true} {
			cells, err := e.Expand(quick)
			require.NoError(t, err, f)
			require.NotEmpty(t, cells)
		}
		n++
	}
	require.GreaterOrEqual(t, n, 6)
}
