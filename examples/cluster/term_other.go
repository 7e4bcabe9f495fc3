//go:build !unix

package main

import "os"

// fileTerminalSize treats a character device as a terminal of the size
// the environment reports.
func fileTerminalSize(f *os.File) (cols, rows int, ok bool) {
	info, err := f.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return 0, 0, false
	}
	cols, rows = fallbackSize(f)
	return cols, rows, true
}
