#!/usr/bin/env bash
# Re-creates third_party/go-fuse: upstream go-fuse VERSION (default: the one
# in go.mod's require line) with go-fuse-poll.patch applied.
set -euo pipefail
cd "$(dirname "$0")"
version=${1:-$(cd .. && go list -m -f '{{.Version}}' github.com/hanwen/go-fuse/v2 2>/dev/null || true)}
version=${version:-v2.12.1}
src=$(cd .. && GOFLAGS=-mod=mod go mod download -json "github.com/hanwen/go-fuse/v2@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
rm -rf go-fuse
cp -r "$src" go-fuse
chmod -R u+w go-fuse
patch -d go-fuse -p1 < go-fuse-poll.patch
echo "third_party/go-fuse: go-fuse $version + go-fuse-poll.patch"
