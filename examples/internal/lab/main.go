package lab

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main wires an example's run function to the process: the context ends on
// Ctrl-C or SIGTERM (so a node stops gracefully and hands leadership over),
// -h prints the flags and exits 0, and an error is printed with the
// program's name and exits 1. Examples keep run separate so tests can call
// it in-process.
func Main(name string, run func(ctx context.Context, args []string, out io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "%s: %s\n", name, err)
		os.Exit(1)
	}
}
