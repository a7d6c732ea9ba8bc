package backend_test

import (
	"fmt"
	"testing"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/backend/backendtest"
)

// TestPwriteSmallBuffers runs the conformance suite with write buffers
// small enough that appends restart the buffer often, some appends are
// larger than it, and reads cross from the file to the buffer.
func TestPwriteSmallBuffers(t *testing.T) {
	for _, o := range []backend.PwriteOptions{{BufferSize: 4 << 10}, {BufferSize: 10000}} {
		b, err := backend.NewPwrite(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, fs := range []string{"mem", "os"} {
			t.Run(fmt.Sprintf("%s/%s", o, fs), func(t *testing.T) {
				backendtest.Run(t, b, fileSystems[fs])
			})
		}
	}
}
