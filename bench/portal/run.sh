#!/usr/bin/env bash
# bench/portal/run.sh — open-to-first-byte of an exec portal (issue 14,
# seed 004 §4.6) against running the same program from a shell, all in
# the same run:
#
#   shell        sh -c '/bin/echo x' spawned by the timing program (fork/exec)
#   direct       /bin/echo x spawned directly (the floor: one fork/exec)
#   mount        open(MOUNT/e) + read 1 byte, MOUNT a wirefs mount whose
#                mounts file says "portal e exec /bin/echo x"
#   run          open(/net/e) + read 1 byte under wirefs run (the catcher
#                hands over the pipe itself)
#   shell (run)  sh -c spawned under wirefs run (what a shell pays there)
#
# and 100 of each started at once (wall time until all have their first
# byte). Each cell is the median of BENCH_RUNS runs (default 5), each run
# the median of BENCH_N samples (default 200). Prints a markdown table;
# raw numbers in bench/out/portal/samples.tsv. Needs root (FUSE mount).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "bench/portal: needs root (FUSE mount)" >&2; exit 1; }
RUNS=${BENCH_RUNS:-5}
N=${BENCH_N:-200}
PAR=${BENCH_PAR:-100}
OUT=bench/out/portal
mkdir -p "$OUT"
log() { echo "bench/portal: $*" >&2; }

go build -o "$OUT/wirefs" ./cmd/wirefs
go build -o "$OUT/ttfb" ./bench/portal/_ttfb
W=$PWD/$OUT/wirefs T=$PWD/$OUT/ttfb
CFG=$PWD/$OUT/mounts MNT=$PWD/$OUT/mnt
echo "portal e exec /bin/echo x" >"$CFG"
mkdir -p "$MNT"
cleanup() {
	local rc=$?
	set +e
	"$W" umount "$MNT" 2>/dev/null || fusermount3 -u "$MNT" 2>/dev/null
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$W" mount --config "$CFG" --log "$PWD/$OUT/wirefs.log" --cache-dir "$PWD/$OUT/cache" "$MNT"
under_run() { "$W" run --config "$CFG" --cache-dir "$PWD/$OUT/cache-run" -- "$@"; }

: >"$OUT/samples.tsv"
for r in $(seq "$RUNS"); do
	log "run $r of $RUNS"
	{
		echo -e "shell\t$("$T" spawn "$N" sh -c '/bin/echo x')"
		echo -e "direct\t$("$T" spawn "$N" /bin/echo x)"
		echo -e "mount\t$("$T" open "$N" "$MNT/e")"
		echo -e "run\t$(under_run "$T" open "$N" /net/e)"
		echo -e "shell-run\t$(under_run "$T" spawn "$N" sh -c '/bin/echo x')"
		echo -e "par-shell\t$("$T" spawn-par "$PAR" sh -c '/bin/echo x')"
		echo -e "par-mount\t$("$T" open-par "$PAR" "$MNT/e")"
		echo -e "par-run\t$(under_run "$T" open-par "$PAR" /net/e)"
		echo -e "par-shell-run\t$(under_run "$T" spawn-par "$PAR" sh -c '/bin/echo x')"
	} >>"$OUT/samples.tsv"
done

# median of the runs' medians (column 2) per row
med() { awk -v k="$1" -F'\t' '$1==k { split($2, f, " "); print f[1] }' "$OUT/samples.tsv" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }
shell=$(med shell) direct=$(med direct) mount=$(med mount) run=$(med run) shellrun=$(med shell-run)
pshell=$(med par-shell) pmount=$(med par-mount) prun=$(med par-run) pshellrun=$(med par-shell-run)
cat <<TABLE
| open-to-first-byte, /bin/echo x | median µs | vs sh -c | target |
|---|---|---|---|
| sh -c spawn (peer) | $shell | 1.00× | |
| direct spawn (floor) | $direct | $(ratio "$direct" "$shell") | |
| exec portal through the mount | $mount | $(ratio "$mount" "$shell") | ≤ 1.5× |
| exec portal under wirefs run | $run | $(ratio "$run" "$shell") | ≤ 1.2× |
| sh -c spawn under wirefs run | $shellrun | $(ratio "$shellrun" "$shell") | |

| $PAR at once, wall µs until all have a byte | µs | vs sh -c | per open, µs |
|---|---|---|---|
| sh -c spawns (peer) | $pshell | 1.00× | $((pshell / PAR)) |
| exec portal through the mount | $pmount | $(ratio "$pmount" "$pshell") | $((pmount / PAR)) |
| exec portal under wirefs run | $prun | $(ratio "$prun" "$pshell") | $((prun / PAR)) |
| sh -c spawns under wirefs run | $pshellrun | $(ratio "$pshellrun" "$pshell") | $((pshellrun / PAR)) |

$RUNS runs × $N samples (parallel: $RUNS runs); $(nproc) CPUs; $(uname -r).
TABLE
