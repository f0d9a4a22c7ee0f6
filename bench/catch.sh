#!/usr/bin/env bash
# The catcher door (issues 4 and 12): native vs `wirefs run` vs PRoot, side
# by side, and where a trapped call spends its time.
#
#   bench/catch.sh              (~5 minutes on 2 vCPUs)
#   BENCH_RUNS=N                runs per cell (default 5)
#   BENCH_WIREFS=PATH           measure this wirefs binary instead of building one
#   BENCH_BEFORE=PATH           also measure this (older) wirefs binary, in
#                               the same runs: a "before" column
#
# Part 1, the workloads (each cell the median of BENCH_RUNS runs; the
# variants of a row run in turn within each round, so that load from
# other users of the machine falls on all of them alike):
#   (a) the open/stat-heavy scan: cat every header under /usr/include
#       (find -exec cat) and ls -lR /usr/share/doc, one after the other
#       in one shell (~25 000 path calls), and each half on its own
#       (PRoot only on the whole scan: it takes ~40x as long), and the
#       whole scan with the fast path off (--fast-path=false: every call
#       traps, as for a static program);
#   (b) make -B of a C project of 20 files (also with the fast path off);
#   (c) connection setup: open("/net/tcp/127.0.0.1:PORT") + close under
#       wirefs run vs socket+connect+close natively (bench/nb.c, median
#       of 500 per run; the library keeps a literal address's recipe, so
#       only the first open traps), the same by a host name
#       (/net/tcp/localhost:PORT: every open traps, the daemon resolves
#       it), and under a minimal C supervisor that does only
#       receive, read, connect, ADDFD (catchfloor connect: the floor), or
#       only receive, read, socket, ADDFD, the program connecting (the
#       floor of a connect in the program's thread of a socket the daemon
#       made), or only receive, read, the answer written into the program
#       and a plain reply, the program making its socket and connecting it
#       (catchfloor connect ... make: the floor of the fast path's design);
#   (d) 1 GiB written to the injected socket vs a raw one (nb xfer),
#       alternating raw and injected runs, and which of them goes first.
# Wall times include starting wirefs run (and PRoot) once per run.
#
# Part 2, the floor: stat(2) of a local file in a loop (bench/catchfloor.c)
# natively, under a minimal C supervisor (receive, CONTINUE; with and
# without reading the path) and under wirefs run with the fast path off
# (every call traps) and on: the kernel's round trip, the read of the path
# and what the Go supervisor adds, per call.
#
# Part 3, the breakdown: `wirefs run --timing` (supervisor time per phase)
# for the scan and for the connection rows.
# Needs go, cc, make, proot (optional), /dev/fuse. No root needed.
set -euo pipefail

SELF=$(readlink -f "$0")
cd "$(dirname "$SELF")/.."
ROOT=$PWD
OUT=$ROOT/bench/out/catch
RUNS=${BENCH_RUNS:-5}
mkdir -p "$OUT"
for t in go cc make awk; do
	command -v $t >/dev/null || { echo "catch.sh: $t is missing" >&2; exit 1; }
done
PROOT=$(command -v proot || true)

WF=${BENCH_WIREFS:-$OUT/wirefs}
[ -n "${BENCH_WIREFS:-}" ] || go build -o "$WF" ./cmd/wirefs
BEFORE=${BENCH_BEFORE:-}
cc -O2 -Wall -o "$OUT/nb" bench/nb.c -lpthread
cc -O2 -Wall -o "$OUT/catchfloor" bench/catchfloor.c
NB=$OUT/nb CF=$OUT/catchfloor
RUN=("$WF" run --cache-dir "$OUT/cache" --)
RUNNF=("$WF" run --fast-path=false --cache-dir "$OUT/cache" --) # every call traps: static programs' case
RUNB=()
[ -z "$BEFORE" ] || RUNB=("$BEFORE" run --cache-dir "$OUT/cache" --)

PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM

# The C project: 20 files, each with a few functions, and a Makefile.
PROJ=$OUT/proj
rm -rf "$PROJ" && mkdir -p "$PROJ"
for i in $(seq 1 19); do
	{
		echo "#include <stdio.h>"
		echo "#include <string.h>"
		echo "#include <stdlib.h>"
		for j in 1 2 3 4; do
			echo "int f${i}_$j(const char *s) { int n = 0; for (size_t k = 0; k < strlen(s); k++) n += s[k] * $j; return n % ($i + $j); }"
		done
	} >"$PROJ/m$i.c"
done
{
	echo "#include <stdio.h>"
	for i in $(seq 1 19); do echo "int f${i}_1(const char *);"; done
	echo "int main(int c, char **v) { int t = 0;"
	for i in $(seq 1 19); do echo "t += f${i}_1(v[0]);"; done
	echo 'printf("%d\n", t); return 0; }'
} >"$PROJ/main.c"
printf 'OBJS := $(patsubst %%.c,%%.o,$(wildcard *.c))\nprog: $(OBJS)\n\t$(CC) -o $@ $^\n%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\n' >"$PROJ/Makefile"

# secs CMD...: the wall time of one run, in seconds.
secs() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || { echo "catch.sh: failed: $*" >&2; exit 1; }
	t1=$(date +%s%N)
	awk -v d=$((t1 - t0)) 'BEGIN { printf "%.4f", d / 1e9 }'
}
# med: the median of the numbers on stdin.
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "n/a" }'; }
us() { awk -v a="$1" -v b="${2:-0}" 'BEGIN { printf "%.2f", (a - b) / 1000 }'; } # ns -> µs
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0 || a == "n/a") print "n/a"; else printf "%.2f", a / b }'; }

echo "## bench/catch.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, kernel $(uname -r)"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); wirefs $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'); $RUNS runs per cell"
echo

# --- Part 1 ---------------------------------------------------------------
SCAN="find /usr/include -name '*.h' -exec cat {} + >/dev/null"
LSR="ls -lR /usr/share/doc >/dev/null"
MAKE="make -s -B -C $PROJ"

hdr="| workload | native | wirefs run | ratio |"
sep="|---|---|---|---|"
if [ -n "$BEFORE" ]; then hdr="$hdr before | ratio |"; sep="$sep---|---|"; fi
echo "$hdr PRoot | ratio | target |"
echo "$sep---|---|---|"

row() { # NAME TARGET CMD [noproot|nofast]: nofast runs wirefs without the fast path, and no before or PRoot
	local n=() w=() b=() p=() run=("${RUN[@]}")
	[ "${4:-}" != nofast ] || run=("${RUNNF[@]}")
	for _ in $(seq "$RUNS"); do
		n+=("$(secs bash -c "$3")")
		w+=("$(secs "${run[@]}" bash -c "$3")")
		[ -z "$BEFORE" ] || [ "${4:-}" = nofast ] || b+=("$(secs "${RUNB[@]}" bash -c "$3")")
		[ -z "$PROOT" ] || [ -n "${4:-}" ] || p+=("$(secs "$PROOT" bash -c "$3")")
	done
	local nm wm line
	nm=$(printf '%s\n' "${n[@]}" | med)
	wm=$(printf '%s\n' "${w[@]}" | med)
	line="| $1 | $nm s | $wm s | $(ratio "$wm" "$nm")x |"
	if [ -n "$BEFORE" ] && [ "${4:-}" = nofast ]; then
		line="$line | |"
	elif [ -n "$BEFORE" ]; then
		local bm
		bm=$(printf '%s\n' "${b[@]}" | med)
		line="$line $bm s | $(ratio "$bm" "$nm")x |"
	fi
	if [ -n "$PROOT" ] && [ -z "${4:-}" ]; then
		local pm
		pm=$(printf '%s\n' "${p[@]}" | med)
		line="$line $pm s | $(ratio "$pm" "$nm")x |"
	else
		line="$line | |"
	fi
	echo "$line $2 |"
}
row "(a) the scan: headers, then ls -lR" "≤ 1.6x" "$SCAN; $LSR"
row "(a) cat every header under /usr/include" "" "$SCAN" noproot
row "(a) ls -lR /usr/share/doc" "" "$LSR" noproot
row "(b) make -B, 20 C files" "≤ 1.1x" "$MAKE"
row "(a) the scan, fast path off (every call traps, as for static programs)" "" "$SCAN; $LSR" nofast
row "(b) make -B, fast path off" "" "$MAKE" nofast

# (c), (d): servers: drain (connection setup), sink (1 GiB, then a 1-byte ack).
start_server() { # MODE PORT BYTES
	local ready=$OUT/ready.$2
	rm -f "$ready"
	"$NB" server "$1" "$2" -s "$3" -R "$ready" &
	PIDS="$PIDS $!"
	for _ in $(seq 100); do [ -e "$ready" ] && { rm -f "$ready"; return 0; }; sleep 0.05; done
	echo "catch.sh: server $1 on $2 did not start" >&2; exit 1
}
P_DRAIN=5201 P_SINK=5202 GIB=1073741824
start_server drain $P_DRAIN 0
start_server sink $P_SINK $GIB
first() { "$@" | awk '{ print $1 }'; } # nb's per-operation median
raw=() file=() fileh=() fileb=() cfl=() cfs=() cfm=()
for _ in $(seq "$RUNS"); do
	raw+=("$(first "$NB" connect raw:127.0.0.1:$P_DRAIN -n 500)")
	file+=("$(first "${RUN[@]}" "$NB" connect file:/net/tcp/127.0.0.1:$P_DRAIN -n 500)")
	fileh+=("$(first "${RUN[@]}" "$NB" connect file:/net/tcp/localhost:$P_DRAIN -n 500)")
	[ -z "$BEFORE" ] || fileb+=("$(first "${RUNB[@]}" "$NB" connect file:/net/tcp/127.0.0.1:$P_DRAIN -n 500)")
	cfl+=("$(first "$CF" connect 500 $P_DRAIN sync)")
	cfs+=("$(first "$CF" connect 500 $P_DRAIN sync self)")
	cfm+=("$(first "$CF" connect 500 $P_DRAIN sync make)")
done
rm=$(printf '%s\n' "${raw[@]}" | med) fm=$(printf '%s\n' "${file[@]}" | med)
line="| (c) connection setup + close (µs, median of 500) | $rm µs | $fm µs | $(ratio "$fm" "$rm")x |"
if [ -n "$BEFORE" ]; then
	bm=$(printf '%s\n' "${fileb[@]}" | med)
	line="$line $bm µs | $(ratio "$bm" "$rm")x |"
fi
echo "$line | | ≤ 2x |"
hm=$(printf '%s\n' "${fileh[@]}" | med)
line="| (c) the same by a host name (localhost: every open asks the daemon) | $rm µs | $hm µs | $(ratio "$hm" "$rm")x |"
[ -z "$BEFORE" ] || line="$line | |"
echo "$line | | |"
cm=$(printf '%s\n' "${cfl[@]}" | med)
line="| (c) the same under a minimal C supervisor (catchfloor connect: the floor) | $rm µs | $(us "$cm") µs | $(ratio "$(us "$cm")" "$rm")x |"
[ -z "$BEFORE" ] || line="$line | |"
echo "$line | | |"
cm=$(printf '%s\n' "${cfs[@]}" | med)
line="| (c) the same, the program connecting the socket it is given (catchfloor connect ... self) | $rm µs | $(us "$cm") µs | $(ratio "$(us "$cm")" "$rm")x |"
[ -z "$BEFORE" ] || line="$line | |"
echo "$line | | |"
cm=$(printf '%s\n' "${cfm[@]}" | med)
line="| (c) the same, the program making its socket (catchfloor connect ... make: the fast path's floor) | $rm µs | $(us "$cm") µs | $(ratio "$(us "$cm")" "$rm")x |"
[ -z "$BEFORE" ] || line="$line | |"
echo "$line | | |"
raw=() file=() fileb=()
for i in $(seq "$RUNS"); do
	# Which goes first alternates: a transfer right after another one
	# was seen to differ.
	[ $((i % 2)) = 0 ] || raw+=("$(first "$NB" xfer raw:127.0.0.1:$P_SINK -s $GIB -r 1)")
	file+=("$(first "${RUN[@]}" "$NB" xfer file:/net/tcp/127.0.0.1:$P_SINK -s $GIB -r 1)")
	[ -z "$BEFORE" ] || fileb+=("$(first "${RUNB[@]}" "$NB" xfer file:/net/tcp/127.0.0.1:$P_SINK -s $GIB -r 1)")
	[ $((i % 2)) = 1 ] || raw+=("$(first "$NB" xfer raw:127.0.0.1:$P_SINK -s $GIB -r 1)")
done
mbs() { awk -v us="$1" -v b=$GIB 'BEGIN { printf "%.0f", b / us }'; }
rm=$(printf '%s\n' "${raw[@]}" | med) fm=$(printf '%s\n' "${file[@]}" | med)
line="| (d) 1 GiB through the socket (MB/s) | $(mbs "$rm") MB/s | $(mbs "$fm") MB/s | $(ratio "$rm" "$fm")x |"
if [ -n "$BEFORE" ]; then
	bm=$(printf '%s\n' "${fileb[@]}" | med)
	line="$line $(mbs "$bm") MB/s | $(ratio "$rm" "$bm")x |"
fi
echo "$line | | ≥ 0.99x |"
echo
echo "(d): each run is one transfer; raw and injected runs alternate. Per round, raw / injected MB/s:"
for i in $(seq 0 $((RUNS - 1))); do printf ' %s/%s' "$(mbs "${raw[$i]}")" "$(mbs "${file[$i]}")"; done
echo
echo

# --- Part 2: the floor ----------------------------------------------------
N=100000
nat=() flo=() flr=() wfs=() wff=()
for _ in $(seq "$RUNS"); do
	nat+=("$(first "$CF" loop $((2 * N)))")
	flr+=("$(first "$CF" floor $N sync noread)")
	flo+=("$(first "$CF" floor $N sync)")
	wfs+=("$(first "${RUNNF[@]}" "$CF" loop $N)")
	wff+=("$(first "${RUN[@]}" "$CF" loop $N)")
done
nm=$(printf '%s\n' "${nat[@]}" | med) rm=$(printf '%s\n' "${flr[@]}" | med)
fm=$(printf '%s\n' "${flo[@]}" | med) wm=$(printf '%s\n' "${wfs[@]}" | med)
ffm=$(printf '%s\n' "${wff[@]}" | med)
echo "Per trapped call: stat(2) of a local file in a loop, median of $RUNS runs of $N calls (µs per call);"
echo "\"wirefs run, trapped\" is --fast-path=false (a static program's case), \"fast path\" the default."
echo
echo "| native | C supervisor: receive + CONTINUE | + read the path | wirefs run, trapped | wirefs run, fast path | kernel round trip | read of the path | Go supervisor beyond the C one |"
echo "|---|---|---|---|---|---|---|---|"
echo "| $(us "$nm") | $(us "$rm") | $(us "$fm") | $(us "$wm") | $(us "$ffm") | $(us "$rm" "$nm") | $(us "$fm" "$rm") | $(us "$wm" "$fm") |"
echo

# --- Part 3: the breakdown ------------------------------------------------
echo "Supervisor time per phase (\`wirefs run --timing\`), one run each:"
echo
timing() { # TITLE CMD...
	echo "$1:"
	echo '```'
	"$WF" run --timing --cache-dir "$OUT/cache" -- "${@:2}" 2>&1 >/dev/null | sed -n '/supervisor time per phase/,$p'
	echo '```'
}
timing "(a) the scan" bash -c "$SCAN; $LSR"
timing "(b) make" bash -c "$MAKE"
timing "(c) 500 connections by a host name (a literal address traps once)" "$NB" connect file:/net/tcp/localhost:$P_DRAIN -n 500
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
