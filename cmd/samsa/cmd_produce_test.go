package main

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestFirstError: the first error wins, whatever the types of the later
// ones, from concurrent senders (produce's report callback).
func TestFirstError(t *testing.T) {
	var f firstError
	if err := f.get(); err != nil {
		t.Fatalf("get before any set = %v, want nil", err)
	}
	first := fmt.Errorf("send 0: %w", errors.New("refused"))
	f.set(first)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.set(errors.New("another type of error")) // *errors.errorString, not *fmt.wrapError
			f.set(fmt.Errorf("send %d: %w", i+1, errors.ErrUnsupported))
		}()
	}
	wg.Wait()
	if err := f.get(); err != first {
		t.Fatalf("get = %v, want the first error %v", err, first)
	}
}
