package raftctl

import (
	"errors"
	"fmt"
	"testing"

	"github.com/samsamq/samsa/controller"
	"github.com/samsamq/samsa/protocol"
)

// Every controller error crosses the wire as a code and comes back
// matching the same Err value.
func TestErrorCodesRoundTrip(t *testing.T) {
	for _, base := range []error{controller.ErrFenced, controller.ErrStaleSyncEpoch, controller.ErrNotMaster,
		controller.ErrUnknownGroup, controller.ErrUnknownBroker, controller.ErrStaleElection, controller.ErrBadCommand, ErrNotLeader} {
		err := fmt.Errorf("%w: details", base)
		code := codeOf(err)
		if code == protocol.SystemError || code == protocol.Success {
			t.Fatalf("%v: code %d", base, code)
		}
		back := ErrorOf(code, err.Error())
		if !errors.Is(back, base) {
			t.Fatalf("%v: code %d came back as %v", base, code, back)
		}
		if back.Error() != err.Error() {
			t.Fatalf("remark %q, want %q", back.Error(), err.Error())
		}
	}
	if ErrorOf(protocol.Success, "") != nil {
		t.Fatal("SUCCESS is an error")
	}
	other := ErrorOf(protocol.SystemError, "boom")
	var re *RemoteError
	if !errors.As(other, &re) || re.Code != protocol.SystemError || errors.Is(other, controller.ErrFenced) {
		t.Fatalf("SYSTEM_ERROR: %v", other)
	}
	if codeOf(errors.New("anything else")) != protocol.SystemError {
		t.Fatal("an unknown error is not SYSTEM_ERROR")
	}
}
