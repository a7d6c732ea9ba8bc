package chaos

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// loseTail does to a stopped broker's store what a power loss does to a
// store under async flush: the unsynced tail of its CommitLog is gone. It
// cuts the newest segment file's written bytes (up to its last non-zero
// byte: the files are preallocated) back by a seeded 64 KiB to 1 MiB, at
// any byte (a power loss tears records), never below the segment's start
// nor below what the store's checkpoint says was fsynced (a power loss
// keeps that), and removes the stages (Dir/stage: a new boot drops them; replayed, they
// would give the tail back). It returns the bytes cut.
func loseTail(storeDir string, rng *rand.Rand) (int64, error) {
	clDir := filepath.Join(storeDir, "commitlog")
	ents, err := os.ReadDir(clDir)
	if err != nil {
		return 0, err
	}
	durable, err := checkpointDurable(filepath.Join(storeDir, "checkpoint"))
	if err != nil {
		return 0, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && len(e.Name()) == 20 {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	for i := len(names) - 1; i >= 0; i-- {
		path := filepath.Join(clDir, names[i])
		end, err := lastNonZero(path)
		if err != nil {
			return 0, err
		}
		if end == 0 {
			continue // an empty newest segment: the tail is in the one before
		}
		base, err := strconv.ParseInt(names[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("segment name %s: %w", names[i], err)
		}
		keep := max(end-(64<<10+rng.Int64N(1<<20-64<<10+1)), durable-base, 0)
		if keep >= end {
			return 0, os.RemoveAll(filepath.Join(storeDir, "stage"))
		}
		cut := end - keep
		if err := os.Truncate(path, keep); err != nil {
			return 0, err
		}
		if err := os.RemoveAll(filepath.Join(storeDir, "stage")); err != nil {
			return cut, err
		}
		return cut, nil
	}
	return 0, fmt.Errorf("%s holds no written segment", clDir)
}

// lastNonZero returns the offset just past the last non-zero byte of path.
func lastNonZero(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read only
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 1<<20)
	for end := st.Size(); end > 0; {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil && err != io.EOF {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				return end - n + i + 1, nil
			}
		}
		end -= n
	}
	return 0, nil
}

// checkpointDurable reads the DURABLE field of a store's checkpoint file
// (package storage's checkpoint.go layout: magic "SAMSACP1" at 0, DURABLE
// big-endian at 20); 0 when there is no checkpoint.
func checkpointDurable(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(b) < 28 || string(b[:8]) != "SAMSACP1" {
		return 0, fmt.Errorf("%s: not a checkpoint", path)
	}
	return int64(binary.BigEndian.Uint64(b[20:28])), nil
}

// damageSealed flips one byte inside a seeded record of a broker's newest
// sealed CommitLog segment (damage at rest, as a bad sector or a stray
// write does), behind the running broker's back. It returns the record's
// offset in the log, or -1 when the log has no sealed segment yet.
func damageSealed(storeDir string, rng *rand.Rand) (int64, error) {
	clDir := filepath.Join(storeDir, "commitlog")
	ents, err := os.ReadDir(clDir)
	if err != nil {
		return -1, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && len(e.Name()) == 20 {
			names = append(names, e.Name())
		}
	}
	if len(names) < 2 {
		return -1, nil
	}
	slices.Sort(names)
	name := names[len(names)-2]
	base, err := strconv.ParseInt(name, 10, 64)
	if err != nil {
		return -1, fmt.Errorf("segment name %s: %w", name, err)
	}
	path := filepath.Join(clDir, name)
	data, err := os.ReadFile(path)
	if err != nil {
		return -1, err
	}
	// Walk the records (total size, big-endian, first) up to the blank
	// filler (its magic differs: a record's size is followed by the
	// message magic).
	var starts []int64
	for p := int64(0); p+8 <= int64(len(data)); {
		size := int64(binary.BigEndian.Uint32(data[p:]))
		if size < 120 || p+size > int64(len(data)) || binary.BigEndian.Uint32(data[p+4:]) != recordMagic {
			break
		}
		starts = append(starts, p)
		p += size
	}
	if len(starts) == 0 {
		return -1, nil
	}
	at := starts[rng.IntN(len(starts))]
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return -1, err
	}
	defer func() { _ = f.Close() }()
	b := []byte{data[at+100] ^ 0x20}
	if _, err := f.WriteAt(b, at+100); err != nil {
		return -1, err
	}
	return base + at, nil
}

// recordMagic is a message record's magic code as it lies on disk
// (package storage/record's MagicMessage, -626843481, big-endian).
const recordMagic = uint32(0xDAA320A7)
