package xa

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"

	"github.com/samsamq/samsa/client"
)

// FormatID is the XA format id of this coordinator's branches ("SAMS").
const FormatID int32 = 0x53414d53

// Steps are Run's steps in order, as Options.Step names them.
var Steps = []string{"pg-begin", "samsa-start", "work", "samsa-end", "pg-prepare", "samsa-prepare",
	"log-commit", "pg-commit", "samsa-commit", "log-done"}

// ErrCrashed: Options.Step stopped Run (a simulated crash).
var ErrCrashed = errors.New("xa: coordinator stopped by its step hook")

// Options configure a Coordinator.
type Options struct {
	// Name tells this coordinator's transactions apart from other
	// coordinators' on the same resources (in each global id). Required:
	// letters, digits, '-' and '_', up to 32.
	Name string
	// LogPath is the coordinator log. Required.
	LogPath string
	// DB is the PostgreSQL database of the database branch (its server
	// needs max_prepared_transactions > 0). Required.
	DB *sql.DB
	// Samsa is the Samsa branch's resource (one broker). Required.
	Samsa *client.XAResource
	// Step, if set, is called before each step of Run (Steps) and of
	// Recover ("recover-pg" and "recover-samsa" before each branch it
	// decides, "recover-log" before it rewrites the log); an error stops
	// it there, leaving everything as a crash would.
	Step func(step string) error
	// Logger reports recoveries. Default slog.Default().
	Logger *slog.Logger
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Coordinator runs global transactions. Safe for concurrent use.
type Coordinator struct {
	o   Options
	log *coordLog
	mu  sync.Mutex
	// pending are the logged decisions not yet done (gtrid hex).
	pending map[string]bool
}

// Open opens the coordinator's log. Call Recover before Run after a
// restart.
func Open(o Options) (*Coordinator, error) {
	var errs []error
	if !nameRE.MatchString(o.Name) {
		errs = append(errs, fmt.Errorf("Name %q: want 1 to 32 letters, digits, '-' or '_'", o.Name))
	}
	if o.LogPath == "" {
		errs = append(errs, errors.New("LogPath: empty"))
	}
	if o.DB == nil {
		errs = append(errs, errors.New("DB: nil"))
	}
	if o.Samsa == nil {
		errs = append(errs, errors.New("Samsa: nil"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("xa: coordinator options: %w", errors.Join(errs...))
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	l, pending, err := openLog(o.LogPath)
	if err != nil {
		return nil, err
	}
	return &Coordinator{o: o, log: l, pending: pending}, nil
}

// Close closes the log.
func (c *Coordinator) Close() error { return c.log.close() }

// Tx is a running global transaction, handed to Run's work.
type Tx struct {
	// DB is the database branch's connection, inside its transaction:
	// the work's statements go here.
	DB *sql.Conn
	c  *Coordinator
	// XID is the Samsa branch's XID.
	XID client.XID
}

// Send sends m in the Samsa branch.
func (t *Tx) Send(ctx context.Context, m *client.Message) (*client.SendResult, error) {
	return t.c.o.Samsa.Send(ctx, t.XID, m)
}

// gtrid returns a new global transaction id: "<name>:<16 random hex>".
func (c *Coordinator) gtrid() []byte {
	var r [8]byte
	_, _ = rand.Read(r[:]) // crypto/rand does not fail
	return []byte(c.o.Name + ":" + hex.EncodeToString(r[:]))
}

func (c *Coordinator) step(s string) error {
	if c.o.Step == nil {
		return nil
	}
	if err := c.o.Step(s); err != nil {
		return fmt.Errorf("%w at %s: %w", ErrCrashed, s, err)
	}
	return nil
}

// pgGID is the PostgreSQL prepared transaction's name of a global id.
func pgGID(gtrid []byte) string { return "samsa:" + hex.EncodeToString(gtrid) }

// Run runs one global transaction: work's database statements (on tx.DB)
// and messages (tx.Send) commit together or not at all. It returns nil
// once both are committed; an error before the decision means both were
// rolled back (or will be, by the resources, if the rollback itself
// failed); ErrCrashed as Step decided.
func (c *Coordinator) Run(ctx context.Context, work func(ctx context.Context, tx *Tx) error) error {
	g := c.gtrid()
	x := client.XID{FormatID: FormatID, GTRID: g, BQUAL: []byte("samsa")}
	if err := c.step("pg-begin"); err != nil {
		return err
	}
	conn, err := c.o.DB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("xa: database: %w", err)
	}
	pgOpen := false
	defer func() {
		if pgOpen { // stopped with the transaction open: drop the connection, so the server rolls it back
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		_ = conn.Close() // back to the pool (or closed): its transaction is prepared or over
	}()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return fmt.Errorf("xa: database: begin: %w", err)
	}
	pgOpen = true
	abort := func(cause error) error {
		if errors.Is(cause, ErrCrashed) {
			return cause
		}
		var errs []error
		if pgOpen {
			if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
				errs = append(errs, err)
			} else {
				pgOpen = false
			}
		}
		if err := c.o.Samsa.Rollback(context.Background(), x); err != nil && !client.IsXACode(err, client.XAErrNoTA) {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("xa: rolled back (%w); the rollback itself: %w", cause, errors.Join(errs...))
		}
		return fmt.Errorf("xa: rolled back: %w", cause)
	}
	if err := c.step("samsa-start"); err != nil {
		return err
	}
	if err := c.o.Samsa.Start(ctx, x, client.TMNoFlags); err != nil {
		return abort(err)
	}
	if err := c.step("work"); err != nil {
		return err
	}
	if err := work(ctx, &Tx{DB: conn, c: c, XID: x}); err != nil {
		return abort(err)
	}
	if err := c.step("samsa-end"); err != nil {
		return err
	}
	if err := c.o.Samsa.End(ctx, x, client.TMSuccess); err != nil {
		return abort(err)
	}
	if err := c.step("pg-prepare"); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "PREPARE TRANSACTION '"+pgGID(g)+"'"); err != nil {
		pgOpen = false // a failed PREPARE TRANSACTION rolls the transaction back
		return abort(err)
	}
	pgOpen = false
	pgRollback := func(cause error) error {
		if _, err := c.o.DB.ExecContext(context.Background(), "ROLLBACK PREPARED '"+pgGID(g)+"'"); err != nil {
			return abort(errors.Join(cause, err))
		}
		return abort(cause)
	}
	if err := c.step("samsa-prepare"); err != nil {
		return err
	}
	code, err := c.o.Samsa.Prepare(ctx, x)
	if err != nil {
		if errors.Is(err, ErrCrashed) {
			return err
		}
		return pgRollback(err)
	}
	samsaRO := code == client.XARDOnly
	if err := c.step("log-commit"); err != nil {
		return err
	}
	gh := hex.EncodeToString(g)
	c.mu.Lock() // with the append: Recover's rewrite of the log never drops it
	err = c.log.append("commit", gh, true)
	if err == nil {
		c.pending[gh] = true
	}
	c.mu.Unlock()
	if err != nil {
		return pgRollback(err)
	}
	// Decided: from here on, commit whatever it takes (Recover finishes
	// what a failure leaves).
	if err := c.step("pg-commit"); err != nil {
		return err
	}
	if err := c.commitPG(ctx, g); err != nil {
		return fmt.Errorf("xa: committed, but the database branch's commit failed; Recover finishes it: %w", err)
	}
	if err := c.step("samsa-commit"); err != nil {
		return err
	}
	if !samsaRO {
		if err := c.commitSamsa(ctx, x); err != nil {
			return fmt.Errorf("xa: committed, but the Samsa branch's commit failed; Recover finishes it: %w", err)
		}
	}
	if err := c.step("log-done"); err != nil {
		return err
	}
	c.done(gh)
	return nil
}

// done logs that a decision's branches are committed.
func (c *Coordinator) done(gh string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.log.append("done", gh, false); err != nil {
		c.o.Logger.Warn("xa: a finished transaction is not logged as done; Recover commits it again, which changes nothing", "gtrid", gh, "err", err)
	}
	delete(c.pending, gh)
}

// commitPG commits the database branch; one already gone was committed.
func (c *Coordinator) commitPG(ctx context.Context, g []byte) error {
	_, err := c.o.DB.ExecContext(ctx, "COMMIT PREPARED '"+pgGID(g)+"'")
	if err != nil && notPrepared(err) {
		return nil // committed by an earlier attempt: only commits are issued after the decision
	}
	return err
}

// commitSamsa commits the Samsa branch; one the broker no longer knows
// was committed.
func (c *Coordinator) commitSamsa(ctx context.Context, x client.XID) error {
	err := c.o.Samsa.Commit(ctx, x, false)
	if client.IsXACode(err, client.XAErrNoTA) {
		return nil
	}
	return err
}

// notPrepared reports PostgreSQL's "prepared transaction ... does not
// exist" (SQLSTATE 42704).
func notPrepared(err error) bool {
	return err != nil && strings.Contains(err.Error(), "does not exist") && strings.Contains(err.Error(), "42704")
}

// Recovered counts what Recover did.
type Recovered struct{ Committed, RolledBack int }

// Recover finishes what an earlier run of this coordinator (same Name
// and log) left: every prepared branch of its global transactions is
// committed if the commit was logged, else rolled back. Call it when the
// coordinator starts, before any Run: a Run between its prepares and its
// decision would be rolled back.
func (c *Coordinator) Recover(ctx context.Context) (Recovered, error) {
	var r Recovered
	prefix := c.o.Name + ":"
	c.mu.Lock()
	decided := make(map[string]bool, len(c.pending))
	for g := range c.pending {
		decided[g] = true
	}
	c.mu.Unlock()
	// The database's prepared transactions of this coordinator.
	rows, err := c.o.DB.QueryContext(ctx, "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND gid LIKE 'samsa:%'")
	if err != nil {
		return r, fmt.Errorf("xa: recover the database branches: %w", err)
	}
	var gids []string
	for rows.Next() {
		var gid string
		if err := rows.Scan(&gid); err != nil {
			_ = rows.Close() // the scan's error is the one reported
			return r, err
		}
		gids = append(gids, gid)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return r, fmt.Errorf("xa: recover the database branches: %w", err)
	}
	for _, gid := range gids {
		gh := strings.TrimPrefix(gid, "samsa:")
		g, err := hex.DecodeString(gh)
		if err != nil || !strings.HasPrefix(string(g), prefix) {
			continue // another coordinator's
		}
		if err := c.step("recover-pg"); err != nil {
			return r, err
		}
		if decided[gh] {
			err = c.commitPG(ctx, g)
			r.Committed++
		} else {
			_, err = c.o.DB.ExecContext(ctx, "ROLLBACK PREPARED '"+gid+"'")
			if notPrepared(err) {
				err = nil
			}
			r.RolledBack++
		}
		if err != nil {
			return r, fmt.Errorf("xa: recover database branch %s: %w", gid, err)
		}
	}
	// The broker's prepared branches of this coordinator.
	prepared, err := c.o.Samsa.Recover(ctx)
	if err != nil {
		return r, fmt.Errorf("xa: recover the Samsa branches: %w", err)
	}
	for _, p := range prepared {
		if p.XID.FormatID != FormatID || !strings.HasPrefix(string(p.XID.GTRID), prefix) {
			continue
		}
		gh := hex.EncodeToString(p.XID.GTRID)
		if err := c.step("recover-samsa"); err != nil {
			return r, err
		}
		if decided[gh] {
			err = c.commitSamsa(ctx, p.XID)
			r.Committed++
		} else {
			err = c.o.Samsa.Rollback(ctx, p.XID)
			if client.IsXACode(err, client.XAErrNoTA) {
				err = nil
			}
			r.RolledBack++
		}
		if err != nil {
			return r, fmt.Errorf("xa: recover Samsa branch %s: %w", p.XID, err)
		}
	}
	// Every logged decision is now done.
	if err := c.step("recover-log"); err != nil {
		return r, err
	}
	c.mu.Lock()
	for gh := range decided {
		delete(c.pending, gh)
	}
	err = c.log.rewrite(c.pending)
	c.mu.Unlock()
	if err != nil {
		return r, err
	}
	if r.Committed+r.RolledBack > 0 {
		c.o.Logger.Info("xa: recovered the branches of an earlier run", "committed", r.Committed, "rolledBack", r.RolledBack)
	}
	return r, nil
}
