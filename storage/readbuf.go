package storage

import (
	"math/bits"
	"sync"
)

// Pooled read buffers (GetMessagesPooled): size classes from
// minReadBuffer to maxReadBuffer bytes, each twice the last; a read larger
// than the largest class gets a buffer of its own.
const (
	minReadBufferShift = 13 // 8 KiB
	maxReadBufferShift = 21 // 2 MiB: a pull's 1 MiB and a large first record
	minReadBuffer      = 1 << minReadBufferShift
	maxReadBuffer      = 1 << maxReadBufferShift
)

var readBuffers [maxReadBufferShift - minReadBufferShift + 1]sync.Pool

// ReadBuffer is a buffer from the store's pool that a GetMessagesPooled
// result lies in. The zero ReadBuffer is none; Release on it does nothing.
type ReadBuffer struct{ p *[]byte }

// readBufferClass is the index of the smallest class holding n bytes, or
// -1 when none does.
func readBufferClass(n int) int {
	if n > maxReadBuffer {
		return -1
	}
	if n <= minReadBuffer {
		return 0
	}
	return bits.Len(uint(n-1)) - minReadBufferShift
}

// getReadBuffer returns a buffer of at least n bytes.
func getReadBuffer(n int) ReadBuffer {
	c := readBufferClass(n)
	if c < 0 {
		b := make([]byte, n)
		return ReadBuffer{p: &b}
	}
	if p, ok := readBuffers[c].Get().(*[]byte); ok {
		return ReadBuffer{p: p}
	}
	b := make([]byte, minReadBuffer<<c)
	return ReadBuffer{p: &b}
}

// bytes is the buffer's first n bytes.
func (b ReadBuffer) bytes(n int) []byte { return (*b.p)[:n:n] }

// Release returns the buffer to the pool. Nothing may read what lay in it
// afterwards: the next pooled read overwrites it.
func (b ReadBuffer) Release() {
	if b.p == nil {
		return
	}
	if c := readBufferClass(cap(*b.p)); c >= 0 && cap(*b.p) == minReadBuffer<<c {
		readBuffers[c].Put(b.p)
	}
}

// Release hands r's pooled buffer back (GetMessagesPooled) and forgets
// what lay in it: Records, QueueOffsets and Whole become nil, so a later
// read finds nothing rather than another pull's bytes. Calling it again,
// or on a result that holds no pooled buffer, only clears those fields.
func (r *GetResult) Release() {
	r.Buffer.Release()
	r.Files.Close()
	r.Buffer, r.Records, r.QueueOffsets, r.Whole = ReadBuffer{}, nil, nil, nil
}
