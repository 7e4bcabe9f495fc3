// Command fencing makes the spec's Leadership Safety concrete with a
// database. Leadership is confirmed only by taking a fencing token from the
// database (HandleConfirmLeader), and every write carries the token in a
// conditional UPDATE, so a leader that was superseded without knowing it
// cannot take effect: its write updates zero rows, and it stops.
//
// The program forces that situation: the leader stalls between its
// leadership check and its next write, the network cuts it off, the
// majority elects a new leader that writes with a newer token, and then the
// stale leader resumes and writes.
//
// SQLite is used by default (a file that keeps the token counter across
// runs: a full restart of the cluster continues above the last token);
// PostgreSQL when a DSN is given:
//
//	go run ./examples/fencing
//	go run ./examples/fencing -dsn postgres://user:pass@localhost:5432/db
//	LEADER_FENCING_DSN=postgres://... go run ./examples/fencing
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"ergo.services/actor/leader/examples/internal/lab"
)

func main() { lab.Main("fencing", run) }

// config is the command line, parsed.
type config struct {
	dsn         string
	db          string
	cluster     string
	resource    string
	every       time.Duration
	electionMin int
}

func parseConfig(args []string, output io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("fencing", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&c.dsn, "dsn", os.Getenv("LEADER_FENCING_DSN"), "PostgreSQL DSN (default $LEADER_FENCING_DSN); SQLite when empty")
	fs.StringVar(&c.db, "db", filepath.Join(os.TempDir(), "leader-fencing-demo.db"), "SQLite database file")
	fs.StringVar(&c.cluster, "cluster", "fencing-demo", "key of the token counter in the database")
	fs.StringVar(&c.resource, "resource", "report", "id of the fenced resource row")
	fs.DurationVar(&c.every, "every", 200*time.Millisecond, "how often the leader writes")
	fs.IntVar(&c.electionMin, "election-min", 250, "ElectionTimeoutMin, ms (max is twice it, heartbeat a fifth)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return c, nil
}

// electionMax is ElectionTimeoutMax, ms: twice the minimum.
func (c config) electionMax() int { return 2 * c.electionMin }

// confirmTimeout bounds HandleConfirmLeader's token query: half the
// election timeout, so a slow database delays a leadership, not the lease.
func (c config) confirmTimeout() time.Duration {
	return time.Duration(c.electionMin) * time.Millisecond / 2
}

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseConfig(args, out)
	if err != nil {
		return err
	}
	report, err := runDemo(ctx, cfg, out)
	if err != nil {
		return err
	}
	if report.Fenced == false || report.StaleRows != 0 || report.Row.OwnerToken != report.Newest {
		return errors.New("the stale leader's write was not fenced")
	}
	return nil
}
