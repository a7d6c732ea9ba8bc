package storage

import (
	"errors"
	"syscall"
	"testing"

	"github.com/samsamq/samsa/storage/vfs/errorfs"
)

// TestResourceErrorsRefuseAndCarryOn: running out of descriptors or memory
// (EMFILE, ENFILE, ENOMEM) while a segment is created, mapped or its
// directory opened for a sync refuses the append that met it with
// ErrResourceBusy, breaks nothing, and the next append after the resource
// is back lands in a proper segment; after a power loss every
// acknowledged record is there. Every backend that runs on MemFS.
func TestResourceErrorsRefuseAndCarryOn(t *testing.T) {
	cases := []struct {
		name string
		rule errorfs.Rule
		only string // backend, if the fault is one backend's
	}{
		{"EMFILE on create", errorfs.Rule{Op: errorfs.OpCreate, Path: "commitlog", Err: syscall.EMFILE}, ""},
		{"ENFILE on create", errorfs.Rule{Op: errorfs.OpCreate, Path: "commitlog", Err: syscall.ENFILE}, ""},
		{"ENOMEM on map", errorfs.Rule{Op: errorfs.OpMap, Path: "commitlog", Err: syscall.ENOMEM}, "mmap"},
		{"EMFILE on dir sync", errorfs.Rule{Op: errorfs.OpSyncDir, Path: "commitlog", Err: syscall.EMFILE}, ""},
	}
	for _, be := range memBackends(t) {
		for _, tc := range cases {
			if tc.only != "" && tc.only != be {
				continue
			}
			t.Run(be+"/"+tc.name, func(t *testing.T) {
				e := newFaultEnv(t, be, false)
				e.mustAppend(10, 900) // into the second segment
				rule := tc.rule
				rule.Sticky = true
				e.efs.AddRule(rule)
				var err error
				for i := 0; i < 40 && err == nil; i++ { // until a roll meets the fault
					_, err = e.append(900)
				}
				if !errors.Is(err, ErrResourceBusy) || !errors.Is(err, rule.Err) {
					t.Fatalf("append at a roll with %v: %v, want ErrResourceBusy wrapping it", rule, err)
				}
				if errors.Is(err, ErrBroken) || e.s.Err() != nil {
					t.Fatalf("a resource error broke the store: %v", err)
				}
				// Still refused while the fault lasts, still not broken.
				if _, err := e.append(900); !errors.Is(err, ErrResourceBusy) {
					t.Fatalf("append while the fault lasts: %v", err)
				}
				if e.s.Err() != nil {
					t.Fatalf("store broken: %v", e.s.Err())
				}
				e.efs.ClearRules()
				e.mustAppend(30, 900) // across more rolls
				if err := e.s.Err(); err != nil {
					t.Fatalf("store broken: %v", err)
				}
				e.reopenAfterPowerLoss()
			})
		}
	}
}
