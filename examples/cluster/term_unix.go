//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// fileTerminalSize asks the terminal behind f for its size; the ioctl fails
// on a file, a pipe or /dev/null, which is how those are told apart.
func fileTerminalSize(f *os.File) (cols, rows int, ok bool) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0, false
	}
	cols, rows = int(ws.Col), int(ws.Row)
	if cols == 0 || rows == 0 { // some terminals (a serial line, a bare pty) do not know
		cols, rows = fallbackSize(f)
	}
	return cols, rows, true
}
