package tests

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("V330_SIGNAL_CHILD"); mode != "" {
		runSignalChild(mode)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
