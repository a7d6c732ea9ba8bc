package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/samsamq/samsa/client"
)

// testStore runs the store's contract on one database.
func testStore(t *testing.T, db *sql.DB) {
	ctx := context.Background()
	s, err := NewStore(ctx, db, "g1", StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewStore(ctx, db, "g1", StoreOptions{}); err != nil { // the table exists: fine
		t.Fatal(err)
	}
	q := client.MessageQueue{Topic: "t", BrokerName: "broker-a", QueueID: 2}
	if _, err := s.Read(ctx, q); !errors.Is(err, client.ErrNoOffset) {
		t.Fatalf("Read before any commit: %v, want ErrNoOffset", err)
	}
	if err := s.Commit(ctx, map[client.MessageQueue]int64{q: 7}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, map[client.MessageQueue]int64{q: 9}); err != nil {
		t.Fatal(err)
	}
	if off, err := s.Read(ctx, q); err != nil || off != 9 {
		t.Fatalf("Read = %d, %v; want 9", off, err)
	}
	// Another group's offsets are its own.
	other, err := NewStore(ctx, db, "g2", StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Read(ctx, q); !errors.Is(err, client.ErrNoOffset) {
		t.Fatalf("g2 reads g1's offset: %v", err)
	}
	// Advance is a compare-and-set inside the caller's transaction.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Advance(ctx, tx, q, 8, true, 12); !errors.Is(err, ErrOffsetMoved) {
		t.Fatalf("Advance from the wrong offset: %v, want ErrOffsetMoved", err)
	}
	if err := s.Advance(ctx, tx, q, 9, true, 12); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if off, _ := s.Read(ctx, q); off != 9 {
		t.Fatalf("a rolled back Advance moved the offset to %d", off)
	}
	tx, _ = db.BeginTx(ctx, nil)
	if err := other.Advance(ctx, tx, q, 0, false, 3); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx, _ = db.BeginTx(ctx, nil)
	if err := other.Advance(ctx, tx, q, 0, false, 5); !errors.Is(err, ErrOffsetMoved) {
		t.Fatalf("a first Advance over a stored offset: %v, want ErrOffsetMoved", err)
	}
	_ = tx.Rollback()
	if off, _ := other.Read(ctx, q); off != 3 {
		t.Fatalf("g2's offset = %d, want 3", off)
	}
	if _, err := NewStore(ctx, db, "g", StoreOptions{Table: "x; DROP TABLE y"}); err == nil {
		t.Fatal("a table name that is not a name was taken")
	}
	if _, err := NewStore(ctx, db, "", StoreOptions{}); err == nil {
		t.Fatal("an empty group was taken")
	}
}

func TestStoreSQLite(t *testing.T) { testStore(t, sqliteDB(t)) }

func TestStorePostgres(t *testing.T) {
	db, _ := postgresDB(t)
	testStore(t, db)
}
