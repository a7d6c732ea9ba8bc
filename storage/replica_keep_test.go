package storage

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/samsamq/samsa/storage/vfs"
)

// TestTruncateToKeepsTheCut: what TruncateTo cuts from a replica's log (a
// diverged tail, which after a fail-over may hold acknowledged messages)
// is in Dir/lost+found/<time>/ afterwards, byte for byte, with a manifest
// that counts its records, and the metrics count it too.
func TestTruncateToKeepsTheCut(t *testing.T) {
	for _, be := range memBackends(t) {
		t.Run("backend="+be, func(t *testing.T) {
			rng := rand.New(rand.NewSource(1))
			fsys := vfs.NewMem()
			m := mustOpen(t, replOptions(t, vfs.NewMem(), "/master", be, FlushAsync))
			defer m.Close()
			s := mustOpen(t, replOptions(t, fsys, "/slave", be, FlushAsync))
			defer s.Close()
			appendRandom(t, m, rng, 120)
			newReplicator(m, s, 64<<10).catchUp(t)
			off := cutPoint(t, s, 1)
			var cut []logRecord
			for _, r := range walkLog(t, s, "before the cut") {
				if r.phys >= off {
					cut = append(cut, logRecord{r.phys, bytes.Clone(r.b)})
				}
			}
			records := int64(len(cut))
			if err := s.TruncateTo(off); err != nil {
				t.Fatal(err)
			}
			root := filepath.Join("/slave", lostFoundDir)
			dirs, err := fsys.List(root)
			if err != nil || len(dirs) != 1 {
				t.Fatalf("lost+found holds %v (%v), want one directory", dirs, err)
			}
			lf := filepath.Join(root, dirs[0])
			var man LostFoundManifest
			if err := json.Unmarshal(readMemFile(t, fsys, filepath.Join(lf, "manifest.json")), &man); err != nil {
				t.Fatal(err)
			}
			if man.Cut != off || man.Valid.Records != records || man.Valid.FirstPhys != off {
				t.Fatalf("manifest: cut %d, %d records from %d; want cut %d, %d records", man.Cut, man.Valid.Records,
					man.Valid.FirstPhys, off, records)
			}
			// Every cut record is in the file that covers its offset, at
			// its place.
			files := map[string][]byte{}
			for _, f := range man.Files {
				files[f.Name] = readMemFile(t, fsys, filepath.Join(lf, f.Name))
				if int64(len(files[f.Name])) != f.Bytes {
					t.Fatalf("%s holds %d bytes, the manifest says %d", f.Name, len(files[f.Name]), f.Bytes)
				}
			}
			for _, r := range cut {
				found := false
				for _, f := range man.Files {
					if r.phys >= f.Offset && r.phys+int64(len(r.b)) <= f.Offset+f.Bytes {
						at := r.phys - f.Offset
						found = bytes.Equal(files[f.Name][at:at+int64(len(r.b))], r.b)
						break
					}
				}
				if !found {
					t.Fatalf("the record at %d is not in lost+found", r.phys)
				}
			}
			if mt := s.Metrics(); mt.CutRecords != records || mt.CutBytes <= 0 {
				t.Fatalf("metrics: cut %d records, %d bytes; want %d records", mt.CutRecords, mt.CutBytes, records)
			}
		})
	}
}
