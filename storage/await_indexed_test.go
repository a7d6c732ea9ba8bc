package storage

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestAwaitIndexed: while the dispatcher is held, AwaitIndexed gives up
// at its bound and the queue reads short; once it runs, AwaitIndexed
// returns true and every record appended before the call is counted.
func TestAwaitIndexed(t *testing.T) {
	s := mustOpen(t, testOptions(vfs.NewMem(), "pwrite", FlushAsync))
	defer s.Close()
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	s.OnDispatch(func(string, int32, int64) { <-release })
	for i := 0; i < 5; i++ {
		if _, err := s.Append(context.Background(), testMessage("t", 0, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if s.AwaitIndexed(20 * time.Millisecond) {
		t.Fatal("AwaitIndexed returned true with the dispatcher held inside its round")
	}
	if got := s.MaxQueueOffset("t", 0); got >= 5 {
		t.Fatalf("max offset %d with the dispatcher held", got)
	}
	once.Do(func() { close(release) })
	if !s.AwaitIndexed(time.Minute) {
		t.Fatal("AwaitIndexed gave up with the dispatcher free")
	}
	if got := s.MaxQueueOffset("t", 0); got != 5 {
		t.Fatalf("max offset %d after AwaitIndexed, want 5", got)
	}
}
