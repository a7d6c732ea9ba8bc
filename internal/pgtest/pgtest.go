// Package pgtest starts a private PostgreSQL server for tests: a new
// cluster (initdb) in a temporary directory, one postgres process on a
// loopback port from package freeport with max_prepared_transactions set
// (two-phase commit needs it), stopped by its pid when the test ends.
//
// The binaries are looked for in SAMSA_PG_BIN, then in Debian's
// /usr/lib/postgresql/<version>/bin, then on PATH. Where none is found
// Start skips the test and says how to install them; with
// SAMSA_PG_TEST=require it fails instead (CI sets it once it installed the
// package). PostgreSQL refuses to run as root: under root the cluster is
// owned by, and the server run as, the "postgres" user (Debian's package
// creates it), or the test skips saying so.
//
// The server runs with fsync off: it is never killed in these tests, only
// the processes that use it, and a test's data lives no longer than the
// test.
package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/samsamq/samsa/internal/freeport"
)

// Server is a running private PostgreSQL server.
type Server struct {
	// Port is its loopback port.
	Port int
	// Dir holds the cluster (Dir/data) and the server's log (Dir/log).
	Dir string
	cmd *exec.Cmd
	// done closes when the server process exits.
	done chan struct{}
}

// DSN returns a connection string (libpq's keyword form, which pgx
// reads) for database db as the superuser "postgres".
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable", s.Port, db)
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// binDir finds the directory holding initdb and postgres.
func binDir() (string, error) {
	if d := os.Getenv("SAMSA_PG_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("SAMSA_PG_BIN=%s holds no initdb", d)
		}
		return d, nil
	}
	if ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres"); len(ms) > 0 {
		sort.Strings(ms)
		return filepath.Dir(ms[len(ms)-1]), nil
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL's binaries (initdb, postgres) are not installed: apt-get install postgresql, or set SAMSA_PG_BIN")
}

func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("SAMSA_PG_TEST") == "require" {
		t.Fatal("pgtest: " + msg)
	}
	t.Skip("pgtest: " + msg + "; this test needs a PostgreSQL server and is skipped")
}

// Start starts a server for t and stops it when t ends. It skips t where
// PostgreSQL is missing (see the package doc).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		skipOrFail(t, err.Error())
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			skipOrFail(t, "running as root and there is no user postgres to run the server as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "samsa-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	var s *Server
	for attempt := 0; ; attempt++ {
		s, err = launch(bin, dir, data, cred)
		if err == nil {
			break
		}
		if attempt == 4 { // a port taken between the pick and the bind, each time
			t.Fatalf("pgtest: %v", err)
		}
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// launch starts postgres on a free port and waits until it takes
// connections (its log says so) or exits.
func launch(bin, dir, data string, cred *syscall.Credential) (*Server, error) {
	port, err := freeport.One()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }() // the child holds its own descriptor
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_prepared_transactions=64", "-c", "max_connections=100",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "shared_buffers=32MB")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig: a test binary killed outright leaves no server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	if cred != nil {
		_ = os.Chown(logPath, int(cred.Uid), int(cred.Gid))
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &Server{Port: port, Dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	// Ready when the unix socket's lock file names the port and the log
	// says so; generous: a loaded machine starts postgres slowly.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("postgres exited at start:\n%s", b)
		case <-time.After(50 * time.Millisecond):
		}
		if ready(logPath) {
			return s, nil
		}
	}
	_ = cmd.Process.Signal(syscall.SIGQUIT)
	<-s.done
	return nil, errors.New("postgres did not become ready within 60 s")
}

// ready reports whether the server's log says it takes connections.
func ready(logPath string) bool {
	b, err := os.ReadFile(logPath)
	return err == nil && bytes.Contains(b, []byte("database system is ready to accept connections"))
}

// stop asks the server to shut down fast (SIGINT to its pid) and waits
// for it; after 30 s it is killed.
func (s *Server) stop(t testing.TB) {
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Logf("pgtest: postgres (pid %d) did not stop within 30 s; killed", s.Pid())
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}
