package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"

	"github.com/samsamq/samsa/client"
)

// Store is a client.OffsetStore over a database: one group's offsets in
// one table (the package doc gives its columns).
type Store struct {
	db    *sql.DB
	group string
	table string
}

// DefaultTable is the offsets' table unless StoreOptions.Table says
// otherwise.
const DefaultTable = "samsa_offsets"

// StoreOptions configure NewStore.
type StoreOptions struct {
	// Table is the offsets' table, created when missing. Default
	// DefaultTable. Letters, digits and underscores, as SQL names go.
	Table string
}

var sqlName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// NewStore returns group's offset store in db, creating its table when
// missing.
func NewStore(ctx context.Context, db *sql.DB, group string, o StoreOptions) (*Store, error) {
	if db == nil {
		return nil, errors.New("sqlstore: no database")
	}
	if group == "" {
		return nil, errors.New("sqlstore: empty consumer group")
	}
	if o.Table == "" {
		o.Table = DefaultTable
	}
	if !sqlName.MatchString(o.Table) {
		return nil, fmt.Errorf("sqlstore: table name %q: want letters, digits and underscores, not starting with a digit", o.Table)
	}
	s := &Store{db: db, group: group, table: o.Table}
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+s.table+` (
	consumer_group TEXT NOT NULL, topic TEXT NOT NULL, broker TEXT NOT NULL, queue_id INTEGER NOT NULL,
	next_offset BIGINT NOT NULL,
	PRIMARY KEY (consumer_group, topic, broker, queue_id))`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: create table %s: %w", s.table, err)
	}
	return s, nil
}

// Group is the consumer group whose offsets the store keeps.
func (s *Store) Group() string { return s.group }

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Read implements client.OffsetStore.
func (s *Store) Read(ctx context.Context, q client.MessageQueue) (int64, error) {
	return s.read(ctx, s.db, q)
}

// ReadTx reads q's offset inside tx.
func (s *Store) ReadTx(ctx context.Context, tx *sql.Tx, q client.MessageQueue) (int64, error) {
	return s.read(ctx, tx, q)
}

func (s *Store) read(ctx context.Context, db querier, q client.MessageQueue) (int64, error) {
	var off int64
	err := db.QueryRowContext(ctx, `SELECT next_offset FROM `+s.table+
		` WHERE consumer_group = $1 AND topic = $2 AND broker = $3 AND queue_id = $4`,
		s.group, q.Topic, q.BrokerName, q.QueueID).Scan(&off)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w for %v in table %s", client.ErrNoOffset, q, s.table)
	}
	if err != nil {
		return 0, fmt.Errorf("sqlstore: read offset of %v: %w", q, err)
	}
	return off, nil
}

// Commit implements client.OffsetStore: every offset in one transaction.
func (s *Store) Commit(ctx context.Context, offsets map[client.MessageQueue]int64) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: commit offsets: %w", err)
	}
	if err := s.CommitTx(ctx, tx, offsets); err != nil {
		_ = tx.Rollback() // the error above is the one that matters
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: commit offsets: %w", err)
	}
	return nil
}

// CommitTx stores offsets inside the application's transaction tx: they
// are committed, or not, with the rest of tx.
func (s *Store) CommitTx(ctx context.Context, tx *sql.Tx, offsets map[client.MessageQueue]int64) error {
	qs := make([]client.MessageQueue, 0, len(offsets))
	for q := range offsets {
		qs = append(qs, q)
	}
	client.SortQueues(qs) // one order: two transactions never lock rows crosswise
	for _, q := range qs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+s.table+
			` (consumer_group, topic, broker, queue_id, next_offset) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (consumer_group, topic, broker, queue_id) DO UPDATE SET next_offset = excluded.next_offset`,
			s.group, q.Topic, q.BrokerName, q.QueueID, offsets[q]); err != nil {
			return fmt.Errorf("sqlstore: commit offset of %v: %w", q, err)
		}
	}
	return nil
}

// ErrOffsetMoved: the stored offset is not where the caller's batch
// began: another consumer moved it (or none was stored and one now is).
// The transaction must roll back.
var ErrOffsetMoved = errors.New("sqlstore: the stored offset moved under this consumer")

// Advance moves q's stored offset from `from` to `to` inside tx, as a
// compare-and-set: with exists false there must be no stored offset yet.
// It returns ErrOffsetMoved when the stored offset is not `from`.
func (s *Store) Advance(ctx context.Context, tx *sql.Tx, q client.MessageQueue, from int64, exists bool, to int64) error {
	var res sql.Result
	var err error
	if exists {
		res, err = tx.ExecContext(ctx, `UPDATE `+s.table+` SET next_offset = $1
			WHERE consumer_group = $2 AND topic = $3 AND broker = $4 AND queue_id = $5 AND next_offset = $6`,
			to, s.group, q.Topic, q.BrokerName, q.QueueID, from)
	} else {
		res, err = tx.ExecContext(ctx, `INSERT INTO `+s.table+
			` (consumer_group, topic, broker, queue_id, next_offset) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (consumer_group, topic, broker, queue_id) DO NOTHING`,
			s.group, q.Topic, q.BrokerName, q.QueueID, to)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: advance offset of %v: %w", q, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlstore: advance offset of %v: %w", q, err)
	}
	if n != 1 {
		return fmt.Errorf("%w: %v was to be at %d", ErrOffsetMoved, q, from)
	}
	return nil
}
