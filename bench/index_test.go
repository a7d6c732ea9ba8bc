package bench

import "testing"

// TestIndexLookup runs the key index benchmark small (the 10M figure is
// `samsa bench index`): every lookup of an indexed key finds it, across
// rolled files and a reopen.
func TestIndexLookup(t *testing.T) {
	res, err := IndexLookup(IndexOptions{Dir: t.TempDir(), Messages: 20_000, Lookups: 3_000, MaxHashSlots: 4096, MaxEntries: 15_000, Reopen: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 3 || res.Entries != 40_000 || res.All.Count != 3_000 || res.ByKind["uniq"].Count != 1_000 {
		t.Fatalf("%+v", res)
	}
}
