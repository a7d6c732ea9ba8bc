// Package uring is a small io_uring client on raw system calls
// (golang.org/x/sys/unix, no cgo): set up a ring, register buffers,
// submit a batch of operations with one io_uring_enter and reap every
// completion. It holds what the storage backends need (read, write, fixed
// buffers, fsync, links) and nothing else.
//
// Ring layout. io_uring_setup(2) returns a descriptor and, in Params, the
// offsets of three shared memory areas, each mapped with mmap(2) on that
// descriptor at a fixed "page offset":
//
//	area        mmap offset   holds
//	SQ ring     0             head, tail, ring_mask, ring_entries, flags,
//	                          dropped (u32 each, at sq_off.*) and array[]
//	                          (u32 indexes into the SQE array)
//	CQ ring     0x8000000     head, tail, ring_mask, ring_entries, overflow
//	                          (u32, at cq_off.*) and cqes[] (16 bytes each:
//	                          user_data u64, res s32, flags u32)
//	SQE array   0x10000000    sq_entries submission entries of 64 bytes
//
// With IORING_FEAT_SINGLE_MMAP (Linux 5.4+) the SQ and CQ rings share one
// mapping. We produce SQEs: write entries at tail & mask, set array[i] = i,
// then publish them by storing the SQ tail; the kernel consumes from the
// SQ head. The kernel produces CQEs at the CQ tail; we consume from the CQ
// head and publish it back. The producer's tail store must come after its
// entry writes, and the consumer's entry reads after its tail load: the
// sync/atomic loads and stores on head and tail give those barriers (they
// are sequentially consistent in Go, stronger than the acquire/release
// liburing uses).
//
// Contract: a Ring is not safe for concurrent use; its owner serialises
// calls. SubmitAndWait takes a whole batch, submits it, and returns only
// when every operation has completed, so no operation (and no buffer) is
// in flight between calls. Buffers passed in an Op must stay untouched by
// the caller until SubmitAndWait returns; the Ring keeps them reachable.
//
// Where the kernel refuses io_uring (ENOSYS: not built in; EPERM/EACCES:
// the kernel.io_uring_disabled sysctl, io_uring_group, or a seccomp filter
// as in many container runtimes) or lacks an operation we need, Setup
// fails with an error wrapping ErrUnavailable (which wraps
// errors.ErrUnsupported). Callers must report it, not hide it.
package uring
