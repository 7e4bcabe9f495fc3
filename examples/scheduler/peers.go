package main

import (
	"bufio"
	"os"
	"strings"

	"ergo.services/ergo/gen"
)

// readPeers reads the static peer list: one node name a line; blank lines
// and lines starting with # are skipped. The file is re-read on every
// discovery round, so editing it adds and removes peers at run time.
func readPeers(path string) ([]gen.Atom, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var nodes []gen.Atom
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		nodes = append(nodes, gen.Atom(line))
	}
	return nodes, scanner.Err()
}
