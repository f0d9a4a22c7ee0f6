#!/usr/bin/env bash
# Sets up and runs the whole test suite: unit, fuzz seed corpora (with the
# race detector) and end-to-end tests against a real FUSE mount.
# Tests that need root or /dev/fuse skip with a reason, unless
# WIREFS_REQUIRE_PRIV=1 (set by CI), where such a skip is a failure.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
test -z "$(gofmt -l cmd internal e2e bench 2>/dev/null)" || { gofmt -l cmd internal e2e bench; echo "test: gofmt needed" >&2; exit 1; }
go vet ./...
go test -count=1 -race ./internal/... ./cmd/...
go test -count=1 -timeout 15m ./e2e/...
