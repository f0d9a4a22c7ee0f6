#!/usr/bin/env bash
# Re-creates a patched module of third_party/: upstream at VERSION (default:
# the one in go.mod's require line) with its patches applied, in the order
# README.md lists them.
#
#   third_party/update.sh go-fuse [VERSION]    github.com/hanwen/go-fuse/v2
#   third_party/update.sh pkg-sftp [VERSION]   github.com/pkg/sftp
#   third_party/update.sh p9 [VERSION]         github.com/hugelgupf/p9
#   third_party/update.sh jlaffaye-ftp [VERSION] github.com/jlaffaye/ftp
set -euo pipefail
cd "$(dirname "$0")"
case ${1:-} in
go-fuse)
	module=github.com/hanwen/go-fuse/v2
	patches="go-fuse-poll.patch go-fuse-nonblock.patch go-fuse-datareply.patch go-fuse-cloexec.patch" ;;
pkg-sftp)
	module=github.com/pkg/sftp
	patches="pkg-sftp-startwrite.patch pkg-sftp-startrequests.patch" ;;
p9)
	module=github.com/hugelgupf/p9
	patches="p9-sendfail.patch" ;;
jlaffaye-ftp)
	module=github.com/jlaffaye/ftp
	patches="jlaffaye-ftp-parselistline.patch" ;;
*) echo "usage: update.sh go-fuse|pkg-sftp|p9|jlaffaye-ftp [VERSION]" >&2; exit 2 ;;
esac
dir=$1
version=${2:-$(cd .. && go list -m -f '{{.Version}}' "$module" 2>/dev/null || true)}
[ -n "$version" ] || { echo "update.sh: no version of $module in go.mod; name one" >&2; exit 2; }
src=$(cd .. && GOFLAGS=-mod=mod go mod download -json "$module@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
rm -rf "$dir"
cp -r "$src" "$dir"
chmod -R u+w "$dir"
for p in $patches; do patch -d "$dir" -p1 < "$p"; done
# Every Go file of the project is gofmt's (pkg/sftp v1.13.12 ships one
# that is not: server_windows.go).
gofmt -w "$dir"
echo "third_party/$dir: $module $version + $patches"
