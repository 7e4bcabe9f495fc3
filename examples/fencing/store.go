package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"
)

// store is the resource that arbitrates: the token counter and the fenced
// resource row, in SQLite or PostgreSQL. Each node opens its own store, as
// separate processes would.
type store struct {
	db       *sql.DB
	postgres bool
}

// schema is portable SQL: both databases take BIGINT, TEXT and
// ON CONFLICT DO NOTHING.
var schema = []string{
	// One counter per cluster. Every claim of leadership increments it, so a
	// newer leader always holds a larger token, across restarts of every
	// node: the counter lives here, not in the election.
	`CREATE TABLE IF NOT EXISTS fencing_tokens (
		cluster TEXT PRIMARY KEY,
		token   BIGINT NOT NULL,
		holder  TEXT NOT NULL DEFAULT ''
	)`,
	// The resource only the leader may write. owner_token is the token of
	// the last writer; a smaller one can no longer take effect.
	`CREATE TABLE IF NOT EXISTS fencing_resources (
		id          TEXT PRIMARY KEY,
		owner_token BIGINT,
		value       TEXT NOT NULL DEFAULT '',
		writes      BIGINT NOT NULL DEFAULT 0
	)`,
}

// openStore opens PostgreSQL when dsn is set, SQLite at path otherwise.
func openStore(dsn, path string) (*store, error) {
	if dsn != "" {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, err
		}
		return &store{db: db, postgres: true}, nil
	}
	// WAL and a busy timeout let the nodes' connections share the file;
	// immediate transactions take the write lock up front, so two claims
	// cannot deadlock upgrading a read lock.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	return &store{db: db}, nil
}

func (s *store) close() error { return s.db.Close() }

func (s *store) kind() string {
	if s.postgres {
		return "PostgreSQL"
	}
	return "SQLite"
}

// rebind turns the ? placeholders into PostgreSQL's $1, $2, ...
func (s *store) rebind(query string) string {
	if s.postgres == false {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return s.db.ExecContext(ctx, s.rebind(query), args...)
}

// setUp creates the tables and the resource row if they do not exist.
func (s *store) setUp(ctx context.Context, resource string) error {
	for _, statement := range schema {
		if _, err := s.exec(ctx, statement); err != nil {
			return err
		}
	}
	_, err := s.exec(ctx, `INSERT INTO fencing_resources (id) VALUES (?) ON CONFLICT (id) DO NOTHING`, resource)
	return err
}

// claimToken records holder as the cluster's leader and returns its
// fencing token: the counter, incremented in one transaction.
func (s *store) claimToken(ctx context.Context, cluster, holder string) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO fencing_tokens (cluster, token) VALUES (?, 0) ON CONFLICT (cluster) DO NOTHING`), cluster); err != nil {
		return 0, err
	}
	var token int64
	err = tx.QueryRowContext(ctx, s.rebind(`UPDATE fencing_tokens SET token = token + 1, holder = ? WHERE cluster = ? RETURNING token`), holder, cluster).Scan(&token)
	if err != nil {
		return 0, err
	}
	return token, tx.Commit()
}

// claimResource is the first write of a leadership: the spec's conditional
// UPDATE, taking the row over only from an older token.
func (s *store) claimResource(ctx context.Context, resource string, token int64, value string) (int64, error) {
	result, err := s.exec(ctx, `UPDATE fencing_resources SET owner_token = ?, value = ?, writes = writes + 1
		WHERE id = ? AND (owner_token IS NULL OR owner_token < ?)`, token, value, resource, token)
	if err != nil {
		return 0, err
	}
	return result.RowsAffected()
}

// write is every later write of the same leadership: it goes through only
// while the row still carries this leadership's token.
func (s *store) write(ctx context.Context, resource string, token int64, value string) (int64, error) {
	result, err := s.exec(ctx, `UPDATE fencing_resources SET value = ?, writes = writes + 1
		WHERE id = ? AND owner_token = ?`, value, resource, token)
	if err != nil {
		return 0, err
	}
	return result.RowsAffected()
}

// row is the resource as stored.
type row struct {
	OwnerToken int64
	Value      string
	Writes     int64
}

func (s *store) read(ctx context.Context, resource string) (row, error) {
	var r row
	var owner sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT owner_token, value, writes FROM fencing_resources WHERE id = ?`), resource).
		Scan(&owner, &r.Value, &r.Writes)
	r.OwnerToken = owner.Int64
	return r, err
}

// token returns the cluster's counter: the newest token handed out, 0 if none.
func (s *store) token(ctx context.Context, cluster string) (int64, error) {
	var token int64
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT token FROM fencing_tokens WHERE cluster = ?`), cluster).Scan(&token)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return token, err
}
