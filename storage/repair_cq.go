package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/samsamq/samsa/storage/consumequeue"
	"github.com/samsamq/samsa/storage/vfs"
)

// trimQueuesAtRest drops every ConsumeQueue entry whose record starts at
// or past cut, working on the files as they lie (package consumequeue's
// layout) so Repair needs no EntriesPerFile: a queue's entries point at
// increasing offsets, so the dropped ones are a suffix; the file holding
// the first is truncated before it and the files after it removed,
// durably. A zero entry (the end of a queue) counts as past the cut. It
// returns how many entries went (would go, with dryRun).
func trimQueuesAtRest(fsys vfs.FS, root string, cut int64, dryRun bool) (int64, error) {
	topics, err := fsys.List(root)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("storage: list %s: %w", root, err)
	}
	var dropped int64
	for _, topic := range topics {
		qids, err := fsys.List(filepath.Join(root, topic))
		if err != nil {
			continue // not a directory: the store ignores it too
		}
		for _, q := range qids {
			if _, err := strconv.ParseInt(q, 10, 32); err != nil {
				continue
			}
			n, err := trimQueueAtRest(fsys, filepath.Join(root, topic, q), cut, dryRun)
			dropped += n
			if err != nil {
				return dropped, err
			}
		}
	}
	return dropped, nil
}

func trimQueueAtRest(fsys vfs.FS, dir string, cut int64, dryRun bool) (int64, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return 0, fmt.Errorf("storage: list %s: %w", dir, err)
	}
	names = slices.DeleteFunc(names, func(n string) bool {
		off, err := strconv.ParseInt(n, 10, 64)
		return len(n) != 20 || err != nil || off%consumequeue.EntrySize != 0
	})
	var dropped int64
	var removed bool
	// From the last file back to the one holding the first entry to drop.
	for j := len(names) - 1; j >= 0; j-- {
		path := filepath.Join(dir, names[j])
		b, err := readFile(fsys, path)
		if err != nil {
			return dropped, fmt.Errorf("storage: read %s: %w", path, err)
		}
		n := len(b) / consumequeue.EntrySize
		keep := n
		for keep > 0 {
			e := b[(keep-1)*consumequeue.EntrySize:]
			if binary.BigEndian.Uint32(e[8:]) != 0 && int64(binary.BigEndian.Uint64(e)) < cut {
				break
			}
			keep--
		}
		dropped += int64(n - keep)
		if keep == 0 && j > 0 {
			if !dryRun {
				if err := fsys.Remove(path); err != nil {
					return dropped, fmt.Errorf("storage: remove %s: %w", path, err)
				}
				removed = true
			}
			continue
		}
		if !dryRun && int64(keep*consumequeue.EntrySize) != int64(len(b)) {
			if err := truncateSegment(fsys, path, int64(keep*consumequeue.EntrySize), 0); err != nil {
				return dropped, err
			}
		}
		break
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return dropped, fmt.Errorf("storage: sync dir %s: %w", dir, err)
		}
	}
	return dropped, nil
}

// queueEndsAtRest returns each queue's max offset as its files lie: the
// last file's start plus its entries up to the first zero or partial one.
func queueEndsAtRest(fsys vfs.FS, root string) (map[queueKey]int64, error) {
	ends := map[queueKey]int64{}
	topics, err := fsys.List(root)
	if errors.Is(err, fs.ErrNotExist) {
		return ends, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: list %s: %w", root, err)
	}
	for _, topic := range topics {
		qids, err := fsys.List(filepath.Join(root, topic))
		if err != nil {
			continue
		}
		for _, q := range qids {
			qid, err := strconv.ParseInt(q, 10, 32)
			if err != nil {
				continue
			}
			dir := filepath.Join(root, topic, q)
			names, err := fsys.List(dir)
			if err != nil {
				return nil, fmt.Errorf("storage: list %s: %w", dir, err)
			}
			var last string
			for _, n := range names {
				if off, err := strconv.ParseInt(n, 10, 64); err == nil && len(n) == 20 && off%consumequeue.EntrySize == 0 {
					last = n
				}
			}
			if last == "" {
				continue
			}
			b, err := readFile(fsys, filepath.Join(dir, last))
			if err != nil {
				return nil, fmt.Errorf("storage: read %s: %w", filepath.Join(dir, last), err)
			}
			off, _ := strconv.ParseInt(last, 10, 64)
			n := int64(0)
			for ; (n+1)*consumequeue.EntrySize <= int64(len(b)); n++ {
				if binary.BigEndian.Uint32(b[n*consumequeue.EntrySize+8:]) == 0 {
					break
				}
			}
			ends[queueKey{topic, int32(qid)}] = off/consumequeue.EntrySize + n
		}
	}
	return ends, nil
}
