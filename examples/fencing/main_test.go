package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer collects the demo's output from the nodes' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fence runs the demo once and checks its verdict: the stale leader's write
// updated zero rows, and the row holds the newest token handed out.
func fence(t *testing.T, args ...string) fencingReport {
	t.Helper()
	// election timeouts wide enough for a loaded CI box under -race
	cfg, err := parseConfig(append([]string{"-election-min", "500"}, args...), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := runDemo(ctx, cfg, &out)
	if err != nil {
		t.Fatalf("%v\noutput:\n%s", err, out.String())
	}
	if r.Fenced == false || r.StaleRows != 0 {
		t.Errorf("stale write of %s with token %d: fenced=%v rows=%d, want fenced with 0 rows\n%s", r.Stale, r.StaleToken, r.Fenced, r.StaleRows, out.String())
	}
	if r.Fresh == r.Stale || r.FreshToken <= r.StaleToken {
		t.Errorf("new leader %s with token %d after stale %s with token %d", r.Fresh, r.FreshToken, r.Stale, r.StaleToken)
	}
	// Normally the new leader keeps leading and all three are equal; a
	// machine that stalls a leader long enough can hand out a later token,
	// and then the row must hold that one.
	if r.Row.OwnerToken != r.Newest || r.Newest < r.FreshToken || r.Newest > r.TokenAfter {
		t.Errorf("row owner_token %d, want the newest token written %d (new leader's %d, counter %d)", r.Row.OwnerToken, r.Newest, r.FreshToken, r.TokenAfter)
	}
	if strings.Contains(r.Row.Value, fmt.Sprintf("token %d", r.Newest)) == false {
		t.Errorf("row value %q was not written with token %d", r.Row.Value, r.Newest)
	}
	return r
}

// TestSQLite fences a stale leader, then restarts the whole cluster on the
// same database: the tokens continue above the first run's.
func TestSQLite(t *testing.T) {
	db := filepath.Join(t.TempDir(), "fencing.db")
	first := fence(t, "-db", db, "-dsn", "")
	if first.Database != "SQLite" {
		t.Fatalf("database %s, want SQLite", first.Database)
	}
	second := fence(t, "-db", db, "-dsn", "")
	if second.TokenBefore != first.TokenAfter || second.StaleToken <= first.FreshToken {
		t.Errorf("after a full restart: counter %d (was %d), first token %d (last before: %d)",
			second.TokenBefore, first.TokenAfter, second.StaleToken, first.FreshToken)
	}
}

// TestPostgres does the same against PostgreSQL when LEADER_FENCING_DSN
// names one. Its counter and row are keyed by this run, so runs do not
// disturb each other or a demo's data.
func TestPostgres(t *testing.T) {
	dsn := os.Getenv("LEADER_FENCING_DSN")
	if dsn == "" {
		if os.Getenv("LEADER_FENCING_REQUIRE") != "" {
			t.Fatal("LEADER_FENCING_REQUIRE is set but LEADER_FENCING_DSN is not: start PostgreSQL and name a database (.ci/run does)")
		}
		t.Skip("LEADER_FENCING_DSN is not set")
	}
	key := fmt.Sprintf("test-%d-%d", os.Getpid(), time.Now().UnixNano())
	args := []string{"-dsn", dsn, "-cluster", key, "-resource", key}
	first := fence(t, args...)
	if first.Database != "PostgreSQL" {
		t.Fatalf("database %s, want PostgreSQL", first.Database)
	}
	second := fence(t, args...)
	if second.TokenBefore != first.TokenAfter || second.StaleToken <= first.FreshToken {
		t.Errorf("after a full restart: counter %d (was %d), first token %d (last before: %d)",
			second.TokenBefore, first.TokenAfter, second.StaleToken, first.FreshToken)
	}

	s, err := openStore(dsn, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.exec(ctx, `DELETE FROM fencing_tokens WHERE cluster = ?`, key)
	s.exec(ctx, `DELETE FROM fencing_resources WHERE id = ?`, key)
}

// TestRebind checks the placeholder translation PostgreSQL needs.
func TestRebind(t *testing.T) {
	s := &store{postgres: true}
	got := s.rebind(`UPDATE t SET a = ? WHERE id = ? AND (b IS NULL OR b < ?)`)
	want := `UPDATE t SET a = $1 WHERE id = $2 AND (b IS NULL OR b < $3)`
	if got != want {
		t.Errorf("rebind: %s, want %s", got, want)
	}
	if s := (&store{}); s.rebind("a = ?") != "a = ?" {
		t.Error("rebind changed a SQLite query")
	}
}

// TestSummaryFlagsSlowFigures: a time far above the election timeout plus
// the token's confirmation is flagged as SLOW, never reported as ok.
func TestSummaryFlagsSlowFigures(t *testing.T) {
	cfg, err := parseConfig(nil, io.Discard) // max 500 ms, confirm 125 ms: the limit is 1.625s
	if err != nil {
		t.Fatal(err)
	}
	for took, want := range map[time.Duration]string{
		400 * time.Millisecond:  "400ms (ok)",
		1500 * time.Millisecond: "1.5s (ok)",
		4 * time.Second:         "4s - SLOW: above 1.625s",
	} {
		if got := cfg.figure(took); strings.HasPrefix(got, want) == false {
			t.Errorf("figure(%s) = %q, want it to start with %q", took, got, want)
		}
	}
}
