#!/usr/bin/env bash
# The whole test suite: vet and race-enabled tests of every module in the
# workspace (the library, the framework stand-in, the examples).
set -euo pipefail
cd "$(dirname "$0")"
modules=(./... ./ergo-standin/... ./examples/...)
go vet "${modules[@]}"
go test -race -count=1 -timeout 30m "${modules[@]}"
