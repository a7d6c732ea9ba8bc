package uring

import (
	"fmt"
	"unsafe"
)

// Opcode is an io_uring operation (enum io_uring_op).
type Opcode uint8

// The operations this package supports.
const (
	OpNop        Opcode = 0
	OpFsync      Opcode = 3
	OpReadFixed  Opcode = 4
	OpWriteFixed Opcode = 5
	OpRead       Opcode = 22
	OpWrite      Opcode = 23
)

func (o Opcode) String() string {
	switch o {
	case OpNop:
		return "nop"
	case OpFsync:
		return "fsync"
	case OpReadFixed:
		return "read_fixed"
	case OpWriteFixed:
		return "write_fixed"
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// FsyncDatasync (IORING_FSYNC_DATASYNC) in Op.Flags of an OpFsync makes it
// fdatasync.
const FsyncDatasync = 1 << 0

// sqeIOLink is IOSQE_IO_LINK: the next entry starts only after this one
// completes successfully, and is cancelled (-ECANCELED) otherwise.
const sqeIOLink = 1 << 2

// Op is one operation of a batch.
type Op struct {
	Code Opcode
	Fd   int
	// Buf is the memory read into or written from (nil for fsync and nop).
	// For the fixed operations it must lie inside the registered buffer
	// BufIndex.
	Buf      []byte
	Off      int64
	BufIndex uint16
	// Flags are the operation's flags word (rw_flags, fsync_flags).
	Flags uint32
	// Link starts the next operation of the batch only after this one
	// succeeded (a short read or write counts as a failure).
	Link bool
}

func (op Op) String() string {
	s := fmt.Sprintf("%s fd=%d %d@%d", op.Code, op.Fd, len(op.Buf), op.Off)
	if op.Link {
		s += " link"
	}
	return s
}

// sqe mirrors struct io_uring_sqe (64 bytes).
type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	pad         uint64
}

// cqe mirrors struct io_uring_cqe (16 bytes).
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

var _ [64 - unsafe.Sizeof(sqe{})]byte
var _ [unsafe.Sizeof(sqe{}) - 64]byte
var _ [16 - unsafe.Sizeof(cqe{})]byte
var _ [120 - unsafe.Sizeof(params{})]byte
var _ [unsafe.Sizeof(params{}) - 120]byte

// fill writes op into the submission entry e.
func (e *sqe) fill(op *Op, userData uint64) {
	*e = sqe{opcode: uint8(op.Code), fd: int32(op.Fd), off: uint64(op.Off), opFlags: op.Flags, userData: userData}
	if len(op.Buf) > 0 {
		e.addr = uint64(uintptr(unsafe.Pointer(&op.Buf[0])))
		e.len = uint32(len(op.Buf))
	}
	if op.Code == OpReadFixed || op.Code == OpWriteFixed {
		e.bufIndex = op.BufIndex
	}
	if op.Link {
		e.flags |= sqeIOLink
	}
}
