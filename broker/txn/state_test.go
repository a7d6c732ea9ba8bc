package txn

import "testing"

// TestTxnStateWindow: a half is claimed once; a failed settlement reopens
// it; the progress moves over the settled prefix only, and the op progress
// is the lowest op still needed to rebuild the window.
func TestTxnStateWindow(t *testing.T) {
	s := newTxnState(10, 0)
	if s.claim(9) {
		t.Fatal("claimed a half below the progress")
	}
	if !s.claim(10, 11) || s.claim(11) || s.claim(12, 11) {
		t.Fatal("claims: each half once, all or none")
	}
	if s.state(12) != txnOpen {
		t.Fatal("a refused claim of several left one claimed")
	}
	s.settled(10, 100)
	s.settled(11, -1) // failed: open again
	if base, op := s.advance(500); base != 11 || op != 500 {
		t.Fatalf("advance: base %d op %d, want 11 500", base, op)
	}
	if !s.claim(11) {
		t.Fatal("a reopened half cannot be claimed")
	}
	s.settled(11, 103)
	s.claim(13)
	s.settled(13, 101) // settled out of order: 12 is open
	if base, op := s.advance(500); base != 12 || op != 101 {
		t.Fatalf("advance: base %d op %d, want 12 101", base, op)
	}
	s.claim(12)
	s.settled(12, txnDropped)
	if base, op := s.advance(500); base != 14 || op != 500 {
		t.Fatalf("advance: base %d op %d, want 14 500", base, op)
	}
}

// TestParseRefs: an END_TRANSACTION body is "queueOffset:commitLogOffset"
// lines; anything else is refused whole.
func TestParseRefs(t *testing.T) {
	got, err := ParseRefs([]byte("1:100\n2:200\n"))
	if err != nil || len(got) != 2 || got[1] != (Ref{2, 200}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"1", "x:1", "1:-2", "1:2\n\n3:4"} {
		if _, err := ParseRefs([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
