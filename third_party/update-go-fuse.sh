#!/usr/bin/env bash
# Re-creates third_party/go-fuse: upstream go-fuse VERSION (default: the one
# in go.mod's require line) with the go-fuse-*.patch files applied, in the
# order README.md lists them.
set -euo pipefail
cd "$(dirname "$0")"
version=${1:-$(cd .. && go list -m -f '{{.Version}}' github.com/hanwen/go-fuse/v2 2>/dev/null || true)}
version=${version:-v2.12.1}
src=$(cd .. && GOFLAGS=-mod=mod go mod download -json "github.com/hanwen/go-fuse/v2@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
rm -rf go-fuse
cp -r "$src" go-fuse
chmod -R u+w go-fuse
patches="go-fuse-poll.patch go-fuse-nonblock.patch go-fuse-datareply.patch"
for p in $patches; do patch -d go-fuse -p1 < "$p"; done
echo "third_party/go-fuse: go-fuse $version + $patches"
