package loadgen

import (
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
		e, err := LoadExperiment(f)
		if err != nil && e == nil {
			// storage experiments are another kind; only e2e ones load here
			continue
		}
		require.NoError(t, err)
		for _, quick := range []bool{false, true} {
			cells, err := e.Expand(quick)
			require.NoError(t, err, f)
			require.NotEmpty(t, cells)
		}
		n++
	}
	require.GreaterOrEqual(t, n, 5)
}
