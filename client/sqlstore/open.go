package sqlstore

import (
	"database/sql"
	"fmt"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"
)

// OpenSQLite opens (creating it when missing) the SQLite database at
// path for an offset store: write-ahead logging, synchronous commits,
// and one connection, as SQLite takes one writer at a time.
func OpenSQLite(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		_ = db.Close() // the ping's error is the one reported
		return nil, fmt.Errorf("sqlstore: open %s: %w", path, err)
	}
	return db, nil
}

// OpenPostgres opens a PostgreSQL database by dsn (a URL or libpq's
// "host=... port=..." form) through the pgx driver.
func OpenPostgres(dsn string) (*sql.DB, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open postgres: %w", err)
	}
	return db, nil
}
