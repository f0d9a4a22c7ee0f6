#!/usr/bin/env bash
# Readiness through the mount: poll/select/epoll and O_NONBLOCK on /net
# files beside a raw socket to the same loopback echo server (socat).
# Prints a Markdown table of medians (microseconds) over BENCH_RUNS runs
# (default 5) of BENCH_N operations each (default 2000).
#
# Needs root, go, socat, python3, /dev/fuse. Everything it starts is
# removed on exit.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
RUNS=${BENCH_RUNS:-5} N=${BENCH_N:-2000}
[ "$(id -u)" = 0 ] || { echo "poll.sh: must run as root (mount)" >&2; exit 1; }
work=$(mktemp -d /tmp/wirefs-bench-poll.XXXXXX)
cleanup() {
	[ -n "${echo_pid:-}" ] && kill "$echo_pid" 2>/dev/null
	mountpoint -q "$work/m" && { "$work/wirefs" umount "$work/m" || umount -l "$work/m"; }
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/wirefs" ./cmd/wirefs
mkdir "$work/m"
"$work/wirefs" mount --log "$work/log" --cache-dir "$work/cache" "$work/m"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
socat TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork EXEC:cat &
echo_pid=$!
until socat -u /dev/null TCP:127.0.0.1:$port 2>/dev/null; do :; done
for i in $(seq "$RUNS"); do
	/usr/bin/python3 bench/poll/poll.py "$work/m" "$port" "$N"
done | /usr/bin/python3 -c '
import json, statistics, sys
runs = [json.loads(l) for l in sys.stdin]
print("| operation (median µs, %d runs) | wirefs /net file | raw socket | ratio |" % len(runs))
print("|---|---|---|---|")
for op in runs[0]:
    w = statistics.median(r[op]["wirefs"] for r in runs)
    s = statistics.median(r[op]["socket"] for r in runs)
    print("| %s | %.1f | %.1f | %.1f× |" % (op, w, s, w / s))
'
