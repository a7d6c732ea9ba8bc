// Package testutil holds helpers for the project's tests (and only its
// tests): it imports testing and is not for production code.
package testutil

import (
	"bytes"
	"runtime/pprof"
	"testing"
	"time"
)

// CloseBound is how long CloseWithin lets a Close run: orders of magnitude
// above a normal Close, even under the race detector on a loaded machine.
const CloseBound = 30 * time.Second

// CloseWithin calls closeFn and fails the test if it does not return
// within CloseBound, printing every goroutine's stack, instead of letting
// the whole package hang until its timeout (which loses the test's own
// failure message). An error from closeFn fails the test too, unless
// ignoreErr is set. The Close goroutine is left behind on a timeout: the
// test has failed by then.
//
// Call it from the test's goroutine or a t.Cleanup, never from another
// goroutine (it may call t.Fatalf).
func CloseWithin(t testing.TB, what string, closeFn func() error, ignoreErr bool) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- closeFn() }()
	timer := time.NewTimer(CloseBound)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil && !ignoreErr {
			t.Errorf("%s: Close: %v", what, err)
		}
	case <-timer.C:
		var stacks bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 2)
		t.Fatalf("%s: Close still running after %v (a gate or waiter left held?); goroutines:\n%s", what, CloseBound, stacks.String())
	}
}

// CleanupClose registers a t.Cleanup that closes with CloseWithin,
// ignoring Close's error (the test checks it where it matters). Cleanups
// run last-registered first: register it before the cleanups that release
// whatever Close would wait on (an fsync gate, a held waiter), so those run
// first.
func CleanupClose(t testing.TB, what string, closeFn func() error) {
	t.Helper()
	t.Cleanup(func() { CloseWithin(t, what, closeFn, true) })
}
