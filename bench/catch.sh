#!/usr/bin/env bash
# The catcher door (issue 4): native vs `wirefs run` vs PRoot, side by side.
# Prints one Markdown table (median of BENCH_RUNS runs; ratios to native).
#
#   bench/catch.sh              (~3 minutes on 2 vCPUs)
#   BENCH_RUNS=N                runs per cell (default 5)
#   BENCH_WIREFS=PATH           measure this wirefs binary instead of building one
#
# Rows: (a) an open/stat-heavy scan: cat every header under /usr/include
# (find -exec cat), and ls -lR /usr/share/doc; (b) make -B of a C project
# of 20 files; (c) connection setup, open("/net/tcp/127.0.0.1:PORT") under
# wirefs run vs socket+connect natively (bench/nb.c), and the throughput
# of 1 GiB written to an injected socket vs a raw one.
# Wall times include starting wirefs run (and PRoot) once per run.
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
cc -O2 -Wall -o "$OUT/nb" bench/nb.c -lpthread
NB=$OUT/nb
RUN=("$WF" run --cache-dir "$OUT/cache" --)

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

# median SECONDS of RUNS runs of a command.
median() {
	local ts=()
	for _ in $(seq "$RUNS"); do
		local t0 t1
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1 || { echo "catch.sh: failed: $*" >&2; exit 1; }
		t1=$(date +%s%N)
		ts+=($(((t1 - t0) / 1000)))
	done
	printf '%s\n' "${ts[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] / 1e6 }'
}
# median of nb's per-operation median (first field), over RUNS runs.
nbmedian() {
	for _ in $(seq "$RUNS"); do "$@" | awk '{ print $1 }'; done | sort -n |
		awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

SCAN="find /usr/include -name '*.h' -exec cat {} + >/dev/null"
LSR="ls -lR /usr/share/doc >/dev/null"
MAKE="make -s -B -C $PROJ"

echo "| workload | native | wirefs run | ratio | PRoot | ratio | target |"
echo "|---|---|---|---|---|---|---|"
row() { # NAME TARGET CMD
	local n w p="" pr="n/a" pv="n/a"
	n=$(median bash -c "$3")
	w=$(median "${RUN[@]}" bash -c "$3")
	if [ -n "$PROOT" ]; then
		p=$(median "$PROOT" bash -c "$3")
		pv="$p s" pr="$(ratio "$p" "$n")x"
	fi
	echo "| $1 | $n s | $w s | $(ratio "$w" "$n")x | $pv | $pr | $2 |"
}
row "(a) cat every header under /usr/include" "≤ 1.3x" "$SCAN"
row "(a) ls -lR /usr/share/doc" "≤ 1.3x" "$LSR"
row "(b) make -B, 20 C files" "≤ 1.03x" "$MAKE"

# (c) servers: drain (connection setup), sink (1 GiB, then a 1-byte ack).
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
raw=$(nbmedian "$NB" connect raw:127.0.0.1:$P_DRAIN -n 500)
file=$(nbmedian "${RUN[@]}" "$NB" connect file:/net/tcp/127.0.0.1:$P_DRAIN -n 500)
echo "| (c) connection setup + close (µs, median of 500) | $raw µs | $file µs | $(ratio "$file" "$raw")x | | | ≤ 1.3x |"
raw=$(nbmedian "$NB" xfer raw:127.0.0.1:$P_SINK -s $GIB -r 1)
file=$(nbmedian "${RUN[@]}" "$NB" xfer file:/net/tcp/127.0.0.1:$P_SINK -s $GIB -r 1)
mbs() { awk -v us="$1" -v b=$GIB 'BEGIN { printf "%.0f", b / us }'; }
echo "| (c) 1 GiB through the socket (MB/s) | $(mbs "$raw") MB/s | $(mbs "$file") MB/s | $(ratio "$raw" "$file")x | | | ≥ 0.99x |"
