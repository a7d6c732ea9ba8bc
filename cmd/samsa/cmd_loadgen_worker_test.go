package main

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/loadgen"
)

const testLoadgenToken = "a-test-token-of-more-than-16-bytes"

// TestLoadgenOverWorkers: two `samsa loadgen worker` processes drive an
// embedded cluster for `samsa loadgen --workers`; the result file has
// both workers and the sum of their acknowledgements.
func TestLoadgenOverWorkers(t *testing.T) {
	bin := os.Getenv("SAMSA_BIN")
	if bin == "" {
		t.Skip("SAMSA_BIN is not set: the workers are samsa processes (make test sets it)")
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(testLoadgenToken+"\n"), 0o600))
	var addrs []string
	for range 2 {
		cmd := exec.Command(bin, "loadgen", "worker", "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--quiet")
		cmd.Env = append(os.Environ(), tokenEnv+"=")
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) // the worker serves until killed
		lines := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(stdout).ReadString('\n')
			lines <- line
			_, _ = io.Copy(io.Discard, stdout)
		}()
		select {
		case line := <-lines:
			addr, ok := strings.CutPrefix(strings.TrimSpace(line), "loadgen worker: serving coordinators on ")
			require.True(t, ok, "worker said %q", line)
			addrs = append(addrs, addr)
		case <-time.After(30 * time.Second):
			t.Fatal("a worker did not start")
		}
	}
	dev, err := devcluster.Start(devcluster.Options{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Close()) }()

	jsonPath := filepath.Join(dir, "run.json")
	out, err := stdio(t, "", func() error {
		return runLoadgen([]string{"--workers", strings.Join(addrs, ","), "--token-file", tokenFile,
			"--namesrv", dev.NamesrvAddr(), "--topic", "workers", "--producers", "2", "--size", "64", "--rate", "200",
			"--warmup", "1s", "--duration", "2s", "--report-interval", "1s", "--drain", "10s", "--json", jsonPath})
	})
	require.NoError(t, err, out)
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var res loadgen.Result
	require.NoError(t, json.Unmarshal(b, &res))
	require.Len(t, res.Workers, 2)
	var acked int64
	for i, ws := range res.Workers {
		require.Equal(t, addrs[i], ws.Worker)
		require.Equal(t, 1, ws.Producers)
		acked += ws.Acked
	}
	require.Greater(t, res.Acked, int64(0))
	require.Equal(t, acked, res.Acked)
	require.Contains(t, out, "2 workers")
}

// TestLoadgenWorkersRefusals: what a distributed run cannot do is refused
// before anything is sent.
func TestLoadgenWorkersRefusals(t *testing.T) {
	t.Setenv(tokenEnv, "")
	for _, c := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"--workers", "127.0.0.1:1", "--namesrv", "127.0.0.1:9876"}, "shared token is required"},
		{"short", []string{"--workers", "127.0.0.1:1", "--namesrv", "127.0.0.1:9876"}, "at least 16 bytes"},
		{testLoadgenToken, []string{"--workers", "127.0.0.1:1", "--driver", "redis"}, "starts a server of its own"},
		{testLoadgenToken, []string{"--workers", "127.0.0.1:1"}, "give its --namesrv"},
		{testLoadgenToken, []string{"--workers", "127.0.0.1:1", "--namesrv", "127.0.0.1:9876", "--hdr", "x.hlog"}, "--hdr"},
		{testLoadgenToken, []string{"--token-file", "x"}, "goes with --workers"},
		{"", []string{"worker", "--listen", "127.0.0.1:0"}, "shared token is required"},
	} {
		t.Setenv(tokenEnv, c.env)
		err := runLoadgen(c.args)
		require.ErrorContains(t, err, c.want, "%q", c.args)
	}
}
