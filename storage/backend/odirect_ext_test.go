package backend_test

import (
	"fmt"
	"testing"

	"github.com/samsamq/samsa/storage/backend"
	"github.com/samsamq/samsa/storage/backend/backendtest"
)

// TestODirectSmallBuffers runs the conformance suite with append buffers
// small enough that appends spill, flushes wrap the ring and reads cross
// from memory to the file.
func TestODirectSmallBuffers(t *testing.T) {
	for _, o := range []backend.ODirectOptions{
		{BufferSize: 8 << 10, StageSize: 4 << 10},
		{BufferSize: 24 << 10, StageSize: 8 << 10, ZeroAhead: 32 << 10},
	} {
		b, err := backend.NewODirect(o)
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

// TestUringVariants runs the conformance suite over the uring options that
// the registered default does not use.
func TestUringVariants(t *testing.T) {
	for _, o := range []backend.UringOptions{
		{Buffered: true},
		{NoFixedBuffers: true},
		{ODirectOptions: backend.ODirectOptions{BufferSize: 8 << 10, StageSize: 4 << 10, ZeroAhead: 16 << 10}, Entries: 4},
	} {
		b, err := backend.NewUring(o)
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
