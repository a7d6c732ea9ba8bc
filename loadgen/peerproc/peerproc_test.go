package peerproc

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/internal/freeport"
)

func TestFindMissing(t *testing.T) {
	_, err := Find("no-such-server-binary", "no-such-package")
	require.True(t, errors.Is(err, ErrNotInstalled))
	require.ErrorContains(t, err, "sudo apt-get install -y no-such-package")
}

func TestStartStop(t *testing.T) {
	sh, err := Find("sh", "dash")
	require.NoError(t, err)
	dir := t.TempDir()
	p, err := Start(sh, []string{"-c", "echo hello; exec sleep 60"}, nil, dir, filepath.Join(dir, "log"))
	require.NoError(t, err)
	require.NoError(t, p.WaitReady(20*time.Second, func() error {
		if p.LogTail(100) != "hello" {
			return errors.New("no hello yet")
		}
		return nil
	}))
	require.NoError(t, p.Stop(20*time.Second))
	require.NoError(t, p.Stop(time.Second), "Stop is idempotent")

	// One that ignores SIGTERM is killed after the grace.
	p, err = Start(sh, []string{"-c", "trap '' TERM; echo up; while :; do sleep 1; done"}, nil, dir, filepath.Join(dir, "log2"))
	require.NoError(t, err)
	require.NoError(t, p.WaitReady(20*time.Second, func() error {
		if p.LogTail(100) != "up" {
			return errors.New("not up")
		}
		return nil
	}))
	require.ErrorContains(t, p.Stop(300*time.Millisecond), "killed")
	select {
	case <-p.Exited():
	default:
		t.Fatal("not exited after Stop")
	}
}

func TestWaitReadyExited(t *testing.T) {
	sh, err := Find("sh", "dash")
	require.NoError(t, err)
	dir := t.TempDir()
	p, err := Start(sh, []string{"-c", "echo bad config; exit 3"}, nil, dir, filepath.Join(dir, "log"))
	require.NoError(t, err)
	err = p.WaitReady(20*time.Second, func() error { return errors.New("never") })
	require.ErrorContains(t, err, "exited before it was ready")
	require.ErrorContains(t, err, "bad config")
}

func TestFreePortAndAddrInUse(t *testing.T) {
	p, err := freeport.One()
	require.NoError(t, err)
	require.Positive(t, p)
	require.True(t, AddrInUse(errors.New("x: {dist_port_already_used,43247,not_erlang}")))
	require.True(t, AddrInUse(errors.New("Could not create server TCP listening socket 127.0.0.1:6379: bind: Address already in use")))
	require.False(t, AddrInUse(errors.New("bad config")))
	require.False(t, AddrInUse(nil))
}
