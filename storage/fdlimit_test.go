//go:build linux

package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/samsamq/samsa/storage/vfs"
)

// The descriptor tests change the process's RLIMIT_NOFILE or use up its
// descriptors, so each runs in a child: the test binary again, running
// TestFdChild with fdChildEnv naming the case. Other tests never see the
// limit.
const fdChildEnv = "SAMSA_STORAGE_FD_CHILD"

// runFdChild runs case name in a child process and fails with its output
// if it fails.
func runFdChild(t *testing.T, name string) {
	if testing.Short() {
		t.Skip("-short: the descriptor tests run a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFdChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fdChildEnv+"="+name, "SAMSA_STORAGE_FD_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestFdChild")) {
		t.Fatalf("child %s: %v\n%s", name, err, out)
	}
	if testing.Verbose() {
		t.Logf("child %s:\n%s", name, out)
	}
}

// TestManyQueuesUnderFdLimit: 10,000 queues written, read, reopened and
// read again by a process whose soft RLIMIT_NOFILE is 512, with the
// default ConsumeQueue handle cap (1024, above the limit: the cap shrinks
// to fit when an open meets EMFILE).
func TestManyQueuesUnderFdLimit(t *testing.T) { runFdChild(t, "many-queues") }

// TestOutOfDescriptorsThenRecover: with every descriptor taken, an append
// that needs a new segment fails with ErrResourceBusy and the store stays
// usable; once descriptors are free appends succeed again, and after a
// reopen every acknowledged message is there.
func TestOutOfDescriptorsThenRecover(t *testing.T) { runFdChild(t, "exhaust") }

// TestFdChild is the child's side; it skips unless fdChildEnv is set.
func TestFdChild(t *testing.T) {
	dir := os.Getenv("SAMSA_STORAGE_FD_DIR")
	switch os.Getenv(fdChildEnv) {
	case "":
		t.Skip("runs only in a child of TestManyQueuesUnderFdLimit or TestOutOfDescriptorsThenRecover")
	case "many-queues":
		setNofile(t, 512)
		childManyQueues(t, dir)
	case "exhaust":
		setNofile(t, 256)
		childExhaust(t, dir)
	default:
		t.Fatalf("unknown child case %q", os.Getenv(fdChildEnv))
	}
}

func setNofile(t *testing.T, soft uint64) {
	t.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = min(soft, lim.Max)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
}

// fdOptions is a store on the OS file system in dir.
func fdOptions(dir string, policy FlushPolicy) Options {
	o := testOptions(vfs.Default, "pwrite", policy)
	o.Dir = dir
	o.SegmentSize = 256 << 10
	o.ConsumeQueueEntries = 1024
	o.MessageIndex.Disabled = false
	return o
}

// ackLog is what a child acknowledged, by queue.
type ackLog map[queueKey][]expected

func (a ackLog) add(m *Message, r AppendResult) {
	k := queueKey{m.Topic, m.QueueID}
	a[k] = append(a[k], expectedOf(m, r))
}

// check reads every queue of a back and compares it with what was
// acknowledged.
func (a ackLog) check(t *testing.T, s *Store, where string) {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for k, want := range a {
		for s.MaxQueueOffset(k.topic, k.qid) < int64(len(want)) {
			if time.Now().After(deadline) {
				m := s.Metrics()
				t.Fatalf("%s: %s/%d indexes %d messages, %d acknowledged (dispatched %d of %d, %d records held, %d dispatch errors)",
					where, k.topic, k.qid, s.MaxQueueOffset(k.topic, k.qid), len(want),
					s.dispatchOK.Load(), s.WrittenOffset(), m.DispatchHeld, m.DispatchErrors)
			}
			time.Sleep(time.Millisecond)
		}
		res, err := s.GetMessages(k.topic, k.qid, 0, len(want)+1, 0, nil)
		if err != nil {
			t.Fatalf("%s: read %s/%d: %v", where, k.topic, k.qid, err)
		}
		if len(res.Records) != len(want) {
			t.Fatalf("%s: %s/%d: %d records, %d acknowledged", where, k.topic, k.qid, len(res.Records), len(want))
		}
		for i, e := range want {
			if !bytes.Equal(res.Records[i], e.bytes) || res.QueueOffsets[i] != e.qoff {
				t.Fatalf("%s: %s/%d offset %d differs from what was acknowledged", where, k.topic, k.qid, e.qoff)
			}
		}
	}
}

func childManyQueues(t *testing.T, dir string) {
	const topics, queues, perQueue = 2000, 5, 2
	opts := fdOptions(dir, FlushAsync)
	if testing.Verbose() {
		opts.Logger = nil // the default: show what the store logs
	}
	s := mustOpen(t, opts)
	acked := ackLog{}
	for round := 0; round < perQueue; round++ {
		for i := 0; i < topics; i++ {
			for q := int32(0); q < queues; q++ {
				m := testMessage(fmt.Sprintf("T%04d", i), q, 40)
				r, err := s.Append(context.Background(), m)
				if err != nil {
					t.Fatalf("append %s/%d: %v", m.Topic, q, err)
				}
				acked.add(m, r)
			}
		}
	}
	acked.check(t, s, "written")
	if n := s.cq.OpenFiles(); n > 512 {
		t.Fatalf("%d ConsumeQueue files open under a limit of 512", n)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s = mustOpen(t, opts)
	defer s.Close()
	acked.check(t, s, "reopened")
	t.Logf("%d queues under RLIMIT_NOFILE 512: %d ConsumeQueue files open at the end", topics*queues, s.cq.OpenFiles())
}

func childExhaust(t *testing.T, dir string) {
	opts := fdOptions(dir, FlushSync)
	opts.SegmentSize = 64 << 10
	s := mustOpen(t, opts)
	acked := ackLog{}
	appendOne := func(topic string, q int32) error {
		m := testMessage(topic, q, 3000)
		r, err := s.Append(context.Background(), m)
		if err == nil || (errors.Is(err, ErrResourceBusy) && r.Size > 0) {
			// Refused at its flush (the directory sync could not open
			// the directory): written, and durable by a later flush.
			acked.add(m, r)
		}
		return err
	}
	for i := 0; i < 30; i++ {
		if err := appendOne("A", int32(i%4)); err != nil {
			t.Fatal(err)
		}
	}
	// Take every descriptor left.
	var held []*os.File
	for len(held) < 100_000 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatalf("open %s: %v", os.DevNull, err)
			}
			break
		}
		held = append(held, f)
	}
	var busy error
	for i := 0; i < 100 && busy == nil; i++ { // until a roll needs a descriptor
		busy = appendOne("B", int32(i%4)) // new queues too: their files wait
	}
	if !errors.Is(busy, ErrResourceBusy) || !errors.Is(busy, syscall.EMFILE) {
		t.Fatalf("append with no descriptor free: %v, want ErrResourceBusy wrapping EMFILE", busy)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("out of descriptors broke the store: %v", err)
	}
	if _, err := s.GetMessages("A", 0, 0, 4, 0, nil); err != nil && !errors.Is(err, ErrResourceBusy) {
		t.Fatalf("read with no descriptor free: %v", err)
	}
	t.Logf("refused with %d descriptors held: %v", len(held), busy)
	for _, f := range held {
		f.Close()
	}
	for i := 0; i < 40; i++ {
		if err := appendOne("B", int32(i%4)); err != nil {
			t.Fatalf("append %d once descriptors are free: %v", i, err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	acked.check(t, s, "after")
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s = mustOpen(t, opts)
	defer s.Close()
	acked.check(t, s, "reopened")
}
