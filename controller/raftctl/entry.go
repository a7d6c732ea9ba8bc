package raftctl

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/samsamq/samsa/controller"
)

// A Raft log entry holds one replicated command:
//
//	byte   field    why
//	0      version  entryVersion; an entry of a newer build is refused, not misread
//	1      kind     kindRegister, kindAlter, kindElect or kindRenew
//	2..5   crc      big-endian CRC-32C of body: the log store keeps no checksum
//	6..    body     JSON of the controller command struct (field names as in Go)
//
// A master's heartbeat is an entry too (kindRenew): the leader answers it
// only once it is committed, so every replica has applied the master's
// last renewal before it can lead. Other heartbeats are never in the log
// (see Node.Heartbeat).
const entryVersion = 1

const (
	kindRegister byte = 1
	kindAlter    byte = 2
	kindElect    byte = 3
	kindRenew    byte = 4
)

const entryHeader = 6

// ErrBadEntry: a log entry that does not decode.
var ErrBadEntry = errors.New("raftctl: bad log entry")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeEntry(cmd controller.Command) ([]byte, error) {
	var kind byte
	switch cmd.(type) {
	case controller.RegisterBroker:
		kind = kindRegister
	case controller.AlterSyncStateSet:
		kind = kindAlter
	case controller.ElectMaster:
		kind = kindElect
	case controller.Heartbeat:
		kind = kindRenew
	default:
		return nil, fmt.Errorf("raftctl: %T is not a replicated command", cmd)
	}
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("raftctl: encode %T: %w", cmd, err)
	}
	out := make([]byte, entryHeader, entryHeader+len(body))
	out[0], out[1] = entryVersion, kind
	binary.BigEndian.PutUint32(out[2:], crc32.Checksum(body, castagnoli))
	return append(out, body...), nil
}

func decodeEntry(b []byte) (controller.Command, error) {
	if len(b) < entryHeader {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadEntry, len(b))
	}
	if b[0] != entryVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads %d", ErrBadEntry, b[0], entryVersion)
	}
	body := b[entryHeader:]
	if got, want := crc32.Checksum(body, castagnoli), binary.BigEndian.Uint32(b[2:]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, header says %08x", ErrBadEntry, got, want)
	}
	var (
		cmd controller.Command
		err error
	)
	switch b[1] {
	case kindRegister:
		var c controller.RegisterBroker
		err = strictJSON(body, &c)
		cmd = c
	case kindAlter:
		var c controller.AlterSyncStateSet
		err = strictJSON(body, &c)
		cmd = c
	case kindElect:
		var c controller.ElectMaster
		err = strictJSON(body, &c)
		cmd = c
	case kindRenew:
		var c controller.Heartbeat
		err = strictJSON(body, &c)
		cmd = c
	default:
		return nil, fmt.Errorf("%w: kind %d", ErrBadEntry, b[1])
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadEntry, err)
	}
	return cmd, nil
}
