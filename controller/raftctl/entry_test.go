package raftctl

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/samsamq/samsa/controller"
)

func TestEntryRoundTrip(t *testing.T) {
	g := controller.Group{Cluster: "c", Broker: "b"}
	cmds := []controller.Command{
		controller.RegisterBroker{Group: g, ID: 3, Addr: "127.0.0.1:10911", Epoch: 7},
		controller.AlterSyncStateSet{Group: g, From: 3, MasterEpoch: 7, NewSet: []int64{3, 4}, SyncSetEpoch: 2},
		controller.ElectMaster{Group: g, Alive: []int64{4}, MasterEpoch: 7, At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)},
		controller.Heartbeat{Group: g, ID: 3, Epoch: 7}, // the master's renewal
	}
	for _, c := range cmds {
		b, err := encodeEntry(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeEntry(b)
		if err != nil {
			t.Fatalf("%#v: %v", c, err)
		}
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", c) {
			t.Fatalf("round trip: %#v, want %#v", got, c)
		}
		for i := range b {
			bad := bytes.Clone(b)
			bad[i] ^= 0x04
			if _, err := decodeEntry(bad); !errors.Is(err, ErrBadEntry) {
				t.Fatalf("%T: a flipped bit at %d decoded (err %v)", c, i, err)
			}
		}
		if _, err := decodeEntry(b[:entryHeader-1]); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("short entry: %v", err)
		}
	}
	if _, err := encodeEntry(nil); err == nil {
		t.Fatal("a nil command was encoded for the log")
	}
}
