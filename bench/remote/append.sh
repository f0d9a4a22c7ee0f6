#!/usr/bin/env bash
# Append-heavy work (issue 16): cycles of open(O_WRONLY|O_APPEND), write of
# one 50-byte record, close, against ONE OpenSSH sftp server on loopback,
# through wirefs sftp, sshfs (defaults, and with -o dir_cache=no) and, for
# reference, a local file; plus wirefs 9p against diod (another server:
# labelled as such). At 0 ms and 10 ms round-trip time (the user-space delay
# proxy, _delayproxy/). Prints one Markdown table per latency.
#
#   bench/remote/append.sh           full run: 3 runs per cell, 0 and 10 ms
#   bench/remote/append.sh --quick   1 run, fewer cycles (< 2 min)
#   BENCH_RUNS=N       runs per cell (median of N; default 3, quick 1)
#   BENCH_RTTS="0 10"  round-trip times in ms (default "0 10"; any list,
#                      e.g. "0 10 50"; each non-zero one gets a proxy)
#   BENCH_CYCLES=N     cycles per appender (default 200, quick 100)
#   BENCH_SYSTEMS="wirefs sshfs sshfs-nc 9p local"  only some systems
#                      (sshfs-nc: sshfs -o dir_cache=no, sshfs 3's name
#                      for sshfs 2's -o cache=no)
#   BENCH_WIREFS=PATH  measure this wirefs binary instead of building one
#   BENCH_REV=REV      measure wirefs as committed at REV (git archive into
#                      bench/out/append/src), not the working tree, which
#                      other sessions may be editing
#   BENCH_TIMEOUT=S    an appender stops after S seconds even if it has not
#                      done its cycles (default 20, quick 10); such a cell
#                      is marked "*" (its rate is still cycles / seconds)
#
# Rows: 1 appender to a new file; 4 concurrent appenders (4 processes,
# one mount) to a new file; 1 appender to a file that starts at 1 MiB
# (20972 records written on the server before the row). Each system is
# mounted fresh (empty cache) for each run and RTT and warmed up with 5
# untimed cycles on another file (sshfs connects at mount, wirefs at first
# use); the rows then run on that mount. Each appender does
# a fixed number of cycles (BENCH_CYCLES), so every system ends with the
# same file. Cells are cycles per second (all appenders together, higher is
# better), timed from the start until the last close returned and the
# server's file has every byte. "peer/wirefs" is the peer's time per cycle
# over wirefs's (= wirefs's rate / the peer's): > 1 means wirefs is faster,
# as in run.sh. After every run the server's own copy (read directly, not
# through a mount) is checked: every record (e2e/append_test.go's format)
# once, whole and in its appender's order, no NUL byte; LOST counts what is
# not (it must be 0) and errors.log says what. The writer is a small C
# program (append.c): its own cost is the local-file column.
#
# Needs root (FUSE mounts, diod), go, cc, sshd, sshfs, fusermount3, diod
# (without diod the 9p column is left out), unshare. Everything goes to
# bench/out/append/; every server, proxy and mount it starts is stopped on
# exit, also on failure or Ctrl-C, and only results.md, samples.tsv,
# errors.log and logs/ are left. The script runs in a mount namespace of
# its own (unshare -m): its FUSE mounts are invisible to every other
# process, so another session's grep -r, find or go vet never walks into
# them (through wirefs's sftp/ that is the server's whole tree, /proc
# included, and it holds a mount busy at unmount), and no mount of it can
# outlive it for anybody else, even after kill -9.
set -euo pipefail

SELF=$(readlink -f "$0")
cd "$(dirname "$SELF")/../.."
ROOT=$PWD
OUT=$ROOT/bench/out/append
QUICK=${BENCH_QUICK:-0}
for a in "$@"; do
	case $a in
	--quick) QUICK=1 ;;
	-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$SELF"; exit 0 ;;
	*) echo "append.sh: unknown argument $a" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "append.sh: must run as root (FUSE mounts, diod)" >&2; exit 1; }
for t in go cc ssh-keygen sshfs fusermount3 timeout awk ss unshare; do
	command -v $t >/dev/null || { echo "append.sh: $t is missing" >&2; exit 1; }
done
# into a private mount namespace (same pid: exec, no fork)
if [ "${APPEND_SH_NS:-}" != "$$" ]; then
	APPEND_SH_NS=$$ exec unshare --mount --propagation private "$SELF" "$@"
fi
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
[ -x "$SSHD" ] || { echo "append.sh: sshd is missing" >&2; exit 1; }
DIOD=$(command -v diod || echo /usr/sbin/diod)

if [ "$QUICK" = 1 ]; then
	RUNS=${BENCH_RUNS:-1}; CYCLES=${BENCH_CYCLES:-100}; TMO=${BENCH_TIMEOUT:-10}
else
	RUNS=${BENCH_RUNS:-3}; CYCLES=${BENCH_CYCLES:-200}; TMO=${BENCH_TIMEOUT:-20}
fi
RTTS=${BENCH_RTTS:-0 10}
SYSTEMS=${BENCH_SYSTEMS:-wirefs sshfs sshfs-nc 9p local}
SETTLE=10       # seconds to wait for the server's copy after the last close
PRE=20972       # records in the 1 MiB row's starting file (1048600 bytes)
ROWS="a1 a4 big"
for r in $RTTS; do [[ $r =~ ^[0-9]+$ ]] || { echo "append.sh: BENCH_RTTS: whole milliseconds" >&2; exit 2; }; done
case " $SYSTEMS " in *" 9p "*)
	[ -x "$DIOD" ] || { echo "append.sh: diod is missing: no 9p column" >&2; SYSTEMS=${SYSTEMS//9p/}; } ;;
esac

RUN=$OUT/run # configs and keys of this run (removed on exit)
LOGS=$OUT/logs
START=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
log() { printf '[%4ds] %s\n' $(($(date +%s) - START)) "$*" >&2; }

# mounted FUSE file systems under DIR (leftovers of a killed run too)
mounts_under() { awk -v d="$1/" '$3 ~ /^fuse/ && index($2, d) == 1 { print $2 }' /proc/mounts; }
unmount_all() {
	local m
	for m in $(mounts_under "$OUT/_mnt"); do fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
}
# remove DIR only when nothing is mounted below it (rm -rf through a
# mount would delete the server's files)
remove_dir() {
	[ -z "$(mounts_under "$1")" ] && rm -rf "$1" || log "not removing $1: still mounted"
}

PIDS="" CUR=""
# started PID: a server, proxy or mount daemon to stop on exit; also noted
# in $OUT/pids, for the next run to stop if this one is killed (-9)
started() { PIDS="$PIDS $1"; echo "$1" >>"$OUT/pids"; }
descendants() { local c; for c in $(pgrep -P "$1"); do descendants "$c"; echo "$c"; done; }
stop_pids() { # PID...: each with its descendants
	local p c
	for p in "$@"; do
		for c in $(descendants "$p"); do kill -KILL "$c" 2>/dev/null; done
		kill "$p" 2>/dev/null
	done
}
# reap PID SECS: waits up to SECS for PID (a child) to end, then kills it
# (a FUSE daemon whose lazily unmounted file system is still in use waits
# for it after SIGTERM; SIGKILL closes /dev/fuse, which ends the mount)
reap() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$1" 2>/dev/null; then
		log "pid $1 ($(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | cut -c1-60)) still running after ${2}s: killed"
		kill -KILL "$1" 2>/dev/null
	fi
	wait "$1" 2>/dev/null
	return 0
}
cleanup() {
	local rc=$?
	set +eu
	trap - EXIT INT TERM
	# the appenders first (timeout passes the signal to their group)
	if [ -n "$CUR" ]; then
		kill -TERM "$CUR" 2>/dev/null
		for _ in $(seq 30); do kill -0 "$CUR" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$CUR" 2>/dev/null # its process group
	fi
	unmount_all
	# sshd sessions outlive their listener: end them first
	stop_pids $PIDS
	for p in $PIDS; do reap "$p" 5; done
	wait 2>/dev/null
	rm -f "$OUT/pids"
	remove_dir "$OUT/_mnt"
	rm -rf "$OUT/cache" "$OUT/srv" "$OUT/bin" "$RUN"
	[ $rc = 0 ] || log "failed (exit $rc); cleaned up"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# a killed earlier run may have left processes (only those whose command
# line names this directory: a pid may have been reused), mounts and files
mkdir -p "$OUT"
if [ -s "$OUT/pids" ]; then
	for p in $(cat "$OUT/pids"); do
		tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -q "$OUT/" && { log "stopping $p, left by an earlier run"; stop_pids "$p"; }
	done
	sleep 0.5
fi
rm -f "$OUT/pids"
unmount_all
remove_dir "$OUT/_mnt"
rm -rf "$OUT/cache" "$OUT/srv" "$OUT/bin" "$RUN" "$LOGS" "$OUT/results.md"
mkdir -p "$OUT/bin" "$OUT/_mnt" "$OUT/cache" "$RUN" "$LOGS"

# ---- build ----
log "building wirefs, the delay proxy and the appender"
if [ -n "${BENCH_WIREFS:-}" ]; then
	cp "$BENCH_WIREFS" "$OUT/bin/wirefs"
	TREE="the binary $BENCH_WIREFS"
elif [ -n "${BENCH_REV:-}" ]; then
	rev=$(git rev-parse --short --verify "$BENCH_REV^{commit}")
	rm -rf "$OUT/src"; mkdir -p "$OUT/src"
	git archive "$rev" | tar -x -C "$OUT/src"
	(cd "$OUT/src" && go build -o "$OUT/bin/wirefs" ./cmd/wirefs)
	rm -rf "$OUT/src"
	TREE="commit $rev (BENCH_REV)"
else
	go build -o "$OUT/bin/wirefs" ./cmd/wirefs
	TREE="the working tree"
	if git rev-parse --git-dir >/dev/null 2>&1; then
		TREE="commit $(git rev-parse --short HEAD)"
		[ -z "$(git status --porcelain -- cmd internal go.mod go.sum)" ] || TREE="$TREE plus uncommitted changes"
	fi
fi
go build -o "$OUT/bin/delayproxy" ./bench/remote/_delayproxy
cc -O2 -Wall -o "$OUT/bin/append" bench/remote/append.c
WIREFS=$OUT/bin/wirefs APPEND=$OUT/bin/append

# (mounts are under _mnt: the go command skips directories starting with
# "_", so another session's "go build ./..." does not walk into them)

# the directory every server exports (and the local rows write in)
SRV=$OUT/srv
mkdir -p "$SRV"; chmod 0755 "$SRV"
for d in "$OUT" "$ROOT/bench/out" "$ROOT/bench" "$ROOT" "$(dirname "$ROOT")"; do chmod o+x "$d"; done

# ---- ports ----
# free_port VAR: sets VAR to a port nothing listens on, below the
# ephemeral range (32768 up), so that no outgoing connection of another
# program takes it between this choice and the server's bind
USED_PORTS=""
free_port() {
	local p
	while :; do
		p=$((10000 + RANDOM % 22000))
		case " $USED_PORTS " in *" $p "*) continue ;; esac
		ss -Htan | awk '{ print $4 }' | grep -q ":$p\$" && continue
		USED_PORTS="$USED_PORTS $p"; printf -v "$1" %s "$p"; return
	done
}
wait_port() { # PORT WHAT LOG
	for _ in $(seq 200); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "append.sh: $2 does not listen on 127.0.0.1:$1; see $3" >&2; tail -20 "$3" >&2; exit 1
}
# PS[rtt], PD[rtt]: where sftp and 9p are reached at that RTT (0: the
# servers themselves, otherwise a proxy in front of them)
declare -A PS PD
for r in $RTTS; do free_port "PS[$r]"; free_port "PD[$r]"; done
[ -n "${PS[0]:-}" ] || free_port "PS[0]"
[ -n "${PD[0]:-}" ] || free_port "PD[0]"

# ---- sshd ----
log "starting sshd, diod and the delay proxies ($RTTS ms)"
HOMED=$RUN/home
mkdir -p "$HOMED/.ssh" /run/sshd; chmod 700 "$HOMED" "$HOMED/.ssh"
ssh-keygen -q -t ed25519 -N '' -f "$RUN/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$HOMED/.ssh/id_ed25519"
cp "$HOMED/.ssh/id_ed25519.pub" "$RUN/authorized_keys"
cat >"$RUN/sshd_config" <<EOF
ListenAddress 127.0.0.1:${PS[0]}
HostKey $RUN/host_key
PidFile $RUN/sshd.pid
AuthorizedKeysFile $RUN/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AllowUsers root
Subsystem sftp internal-sftp
LogLevel ERROR
MaxStartups 100
MaxSessions 100
EOF
"$SSHD" -D -e -f "$RUN/sshd_config" 2>"$LOGS/sshd.log" &
started $!
hosts=""
for r in "${!PS[@]}"; do hosts="$hosts${hosts:+,}[127.0.0.1]:${PS[$r]}"; done
echo "$hosts $(cut -d' ' -f1-2 "$RUN/host_key.pub")" >"$HOMED/.ssh/known_hosts"
# ssh (under sshfs) reads ~ from the password database, not $HOME: -F this
cat >"$HOMED/.ssh/config" <<EOF
Host 127.0.0.1
  User root
  IdentityFile $HOMED/.ssh/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $HOMED/.ssh/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
EOF
chmod 600 "$HOMED/.ssh/"*

# ---- diod (-n: no MUNGE; an empty config so /etc/diod.conf cannot
# change the run; as root it serves each attach as the attaching uid) ----
case " $SYSTEMS " in *" 9p "*)
	echo "-- empty: the command line says everything" >"$RUN/diod.conf"
	"$DIOD" -f -n -c "$RUN/diod.conf" -L stderr -l "127.0.0.1:${PD[0]}" -e "$SRV" 2>"$LOGS/diod.log" &
	started $! ;;
esac

# ---- the delay proxies: RTT/2 each way ----
for r in $RTTS; do
	[ "$r" = 0 ] && continue
	"$OUT/bin/delayproxy" -delay "$((r * 500))us" -ready "$RUN/proxy$r.ready" \
		"127.0.0.1:${PS[$r]}=127.0.0.1:${PS[0]}" "127.0.0.1:${PD[$r]}=127.0.0.1:${PD[0]}" 2>"$LOGS/proxy$r.log" &
	started $!
	for _ in $(seq 100); do [ -e "$RUN/proxy$r.ready" ] && break; sleep 0.05; done
	[ -e "$RUN/proxy$r.ready" ] || { echo "append.sh: the $r ms delay proxy did not start" >&2; cat "$LOGS/proxy$r.log" >&2; exit 1; }
done
wait_port "${PS[0]}" sshd "$LOGS/sshd.log"
case " $SYSTEMS " in *" 9p "*) wait_port "${PD[0]}" diod "$LOGS/diod.log" ;; esac

# ---- mounting ----
# mount_sys SYS RTT: mounts SYS fresh (empty cache) and sets BASE to the
# directory that shows $SRV
NMOUNT=0
mount_sys() {
	local sys=$1 rtt=$2 lf=$LOGS/$1.log
	NMOUNT=$((NMOUNT + 1))
	MNT=$OUT/_mnt/$sys
	CACHE=$OUT/cache/$NMOUNT
	rm -rf "$CACHE"; mkdir -p "$MNT" "$CACHE"
	case $sys in
	wirefs | 9p)
		HOME=$HOMED XDG_CONFIG_HOME=$HOMED/.config "$WIREFS" mount --foreground --cache-dir "$CACHE" "$MNT" 2>>"$lf" &
		if [ "$sys" = wirefs ]; then BASE=$MNT/sftp/root@127.0.0.1:${PS[$rtt]}$SRV; else BASE=$MNT/9p/127.0.0.1:${PD[$rtt]}$SRV; fi ;;
	sshfs)
		sshfs -f -F "$HOMED/.ssh/config" -p "${PS[$rtt]}" "127.0.0.1:$SRV" "$MNT" 2>>"$lf" &
		BASE=$MNT ;;
	sshfs-nc)
		sshfs -f -F "$HOMED/.ssh/config" -p "${PS[$rtt]}" -o dir_cache=no "127.0.0.1:$SRV" "$MNT" 2>>"$lf" &
		BASE=$MNT ;;
	esac
	DPID=$!
	started "$DPID"
	for _ in $(seq 200); do grep -q " $MNT fuse" /proc/mounts && return 0; sleep 0.05; done
	echo "append.sh: $sys did not mount $MNT; see $lf" >&2; tail -20 "$lf" >&2; exit 1
}
umount_sys() {
	local p
	if ! fusermount3 -u "$MNT" 2>/dev/null; then
		# busy: say who holds it (it may have disturbed the rows)
		for p in /proc/[0-9]*; do
			ls -l "$p/cwd" "$p/fd" 2>/dev/null | grep -q " $MNT" &&
				echo "unmount $MNT: busy: pid ${p#/proc/} $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | cut -c1-100)" >>"$ERRORS"
		done
		log "  $MNT was busy at unmount (errors.log)"
		sleep 1
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
	fi
	reap "$DPID" 10
	rm -rf "$CACHE"
}

# ---- measuring ----
SAMPLES=$OUT/samples.tsv
ERRORS=$OUT/errors.log
: >"$SAMPLES"; : >"$ERRORS"
# bounded SECONDS WHAT CMD...: runs CMD under timeout, its output in
# $RUN/out and its errors (prefixed with WHAT) in errors.log. In the
# background and waited for, so that Ctrl-C is acted on at once (bash runs
# a trap only after a foreground command ends; timeout puts the command in
# a process group of its own, which the terminal's Ctrl-C does not reach);
# cleanup stops it through CUR.
bounded() {
	local secs=$1 what=$2 rc=0
	shift 2
	timeout -k 5 "$secs" "$@" >"$RUN/out" 2>"$RUN/err" &
	CUR=$!
	echo "$CUR" >>"$OUT/pids"
	wait "$CUR" || rc=$?
	CUR=""
	sed "s|^|$what: |" "$RUN/err" >>"$ERRORS"
	return $rc
}
# cell RTT ROW SYS RUN: one row on one system; appends "rtt row sys run
# rate cycles seconds lost cut" to SAMPLES (rate "fail" or "timeout"
# otherwise)
cell() {
	local rtt=$1 row=$2 sys=$3 run=$4 k=1 pre=0 name res rc rate
	case $row in a4) k=4 ;; big) pre=$PRE ;; esac
	name=$sys-$rtt-$run-$row.log
	rc=0
	bounded $((TMO + SETTLE + 60)) "$rtt ms $row $sys run $run" "$APPEND" "$BASE/$name" "$SRV/$name" $k "$CYCLES" "$TMO" "$SETTLE" $pre || rc=$?
	# the helper printed: cycles seconds lost nul cut settled errors
	set -- $(cat "$RUN/out")
	if [ $rc = 124 ] || [ $rc = 137 ]; then rate=timeout; set -- 0 0 "?" 0 0 0 0
	elif [ $# != 7 ]; then rate=fail; set -- 0 0 "?" 0 0 0 0
	elif [ "$7" != 0 ]; then rate=fail
	else rate=$(awk -v c="$1" -v s="$2" 'BEGIN { printf "%.1f", (s > 0 ? c / s : 0) }')
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rtt" "$row" "$sys" "$run" "$rate" "$1" "$2" "$3" "$5" >>"$SAMPLES"
	log "  $rtt ms, $row, $sys: $rate cycles/s ($1 cycles in $2 s), lost $3$([ "$5" = 1 ] && echo ", cut at $TMO s")"
	rm -f "$SRV/$name"
}

# warmup RTT SYS RUN: a few untimed cycles on a fresh mount, so that no row
# pays for connecting (sshfs connects at mount, wirefs at first use)
warmup() {
	local name=warm-$2-$1-$3.log
	bounded 60 "$1 ms warm-up $2 run $3" "$APPEND" "$BASE/$name" "$SRV/$name" 1 5 30 "$SETTLE" 0 || log "  warm-up on $2 failed (errors.log)"
	rm -f "$SRV/$name"
}

for run in $(seq "$RUNS"); do
	for rtt in $RTTS; do
		# a different system first in each run, so none always goes first
		set -- $SYSTEMS
		for ((i = 1; i < run; i++)); do set -- "${@:2}" "$1"; done
		for sys in "$@"; do
			# the local file does not depend on the RTT: once per run
			if [ "$sys" = local ]; then
				[ "$rtt" = "${RTTS%% *}" ] || continue
				log "run $run/$RUNS: local file"
				BASE=$SRV
				for row in $ROWS; do cell - "$row" local "$run"; done
				continue
			fi
			log "run $run/$RUNS, $rtt ms: $sys"
			mount_sys "$sys" "$rtt"
			warmup "$rtt" "$sys" "$run"
			for row in $ROWS; do cell "$rtt" "$row" "$sys" "$run"; done
			umount_sys
		done
	done
done

# ---- the tables ----
log "done measuring; writing the tables"
TABLE=$OUT/results.md
{
awk -F'\t' -v rtts="$RTTS" -v systems="$SYSTEMS" -v cycles="$CYCLES" -v pre="$PRE" '
function med(list,   a, n, i, j, t, bad) {
	n = split(list, a, " "); bad = ""
	for (i = 1; i <= n; i++) if (a[i] !~ /^[0-9.]+$/) bad = a[i]
	if (bad != "") return bad
	for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	k = $1 SUBSEP $2 SUBSEP $3; v[k] = v[k] " " $5
	if ($9 == 1) cut[k] = 1
	lk = ($1 == "-" ? "*" : $1) SUBSEP $2
	if ($8 != "0") { n = ($8 == "?") ? "?" : $8; lost[lk] = lost[lk] (lost[lk] == "" ? "" : ", ") $3 " run " $4 ": " n }
}
function cell(r, row, s,   k) { if (s == "local") r = "-"; k = r SUBSEP row SUBSEP s; return (k in v) ? med(v[k]) : "" }
function iscut(r, row, s) { if (s == "local") r = "-"; return (r SUBSEP row SUBSEP s) in cut }
function num(x) { return x ~ /^[0-9.]+$/ }
function fmt(x, r, row, s) { return (num(x) ? sprintf(x >= 100 ? "%.0f" : "%.1f", x) : x) (iscut(r, row, s) ? "*" : "") }
# peer/wirefs as run.sh: the peer time per cycle over wirefs (> 1: wirefs faster)
function ratio(w, p) { return (num(w) && num(p) && p + 0 > 0) ? sprintf("%.2f", w / p) : "" }
function label(row) {
	if (row == "a1") return "1 appender, new file"
	if (row == "a4") return "4 appenders, new file"
	if (row == "big") return "1 appender, file starts at 1 MiB"
	return row
}
function has(s) { return index(" " systems " ", " " s " ") > 0 }
END {
	nr = split("a1 a4 big", R, " "); nt = split(rtts, T, " ")
	for (i = 1; i <= nt; i++) {
		r = T[i]
		printf "\n### %s ms RTT\n\n| cycles/s (%d cycles per appender) |", r, cycles
		hdr = "|---|"
		if (has("wirefs")) { printf " wirefs sftp |"; hdr = hdr "---:|" }
		if (has("sshfs")) { printf " sshfs | sshfs/wirefs |"; hdr = hdr "---:|---:|" }
		if (has("sshfs-nc")) { printf " sshfs dir_cache=no | sshfs dir_cache=no/wirefs |"; hdr = hdr "---:|---:|" }
		if (has("local")) { printf " local file |"; hdr = hdr "---:|" }
		if (has("9p")) { printf " wirefs 9p (diod, another server) |"; hdr = hdr "---:|" }
		printf " LOST |\n%s---:|\n", hdr
		for (j = 1; j <= nr; j++) {
			row = R[j]
			w = cell(r, row, "wirefs")
			printf "| %s |", label(row)
			if (has("wirefs")) printf " %s |", fmt(w, r, row, "wirefs")
			if (has("sshfs")) { x = cell(r, row, "sshfs"); printf " %s | %s |", fmt(x, r, row, "sshfs"), ratio(w, x) }
			if (has("sshfs-nc")) { x = cell(r, row, "sshfs-nc"); printf " %s | %s |", fmt(x, r, row, "sshfs-nc"), ratio(w, x) }
			if (has("local")) printf " %s |", fmt(cell(r, row, "local"), r, row, "local")
			if (has("9p")) printf " %s |", fmt(cell(r, row, "9p"), r, row, "9p")
			l = lost[r SUBSEP row]; if (lost["*" SUBSEP row] != "") l = l (l == "" ? "" : ", ") lost["*" SUBSEP row]
			printf " %s |\n", (l == "" ? "0" : l)
		}
	}
}' "$SAMPLES"
echo
echo "Cycles per second of open(O_WRONLY|O_APPEND)/write 50 bytes/close, all appenders together (higher is better), median"
echo "of $RUNS run(s); each appender does $CYCLES cycles (a cell marked * hit the $TMO s limit first, BENCH_TIMEOUT), timed until"
echo "the last close returned and the server's file held every byte. peer/wirefs > 1 means wirefs is faster (the peer's"
echo "time per cycle over wirefs's). 1 MiB row: the file holds $PRE records (1048600 bytes) before the row starts."
echo "LOST: records missing, duplicated, damaged or out of order (or NUL bytes) in the server's own copy, over every run and"
echo "system of the row: must be 0 (errors.log says what). sshfs $(sshfs --version 2>&1 | awk '/SSHFS/ { print $3 }') (defaults; dir_cache=no also turns off"
echo "its attribute cache); wirefs with defaults (t-read 30s, t-write 0: written back before close returns). One sshd"
echo "(internal-sftp, user root) for wirefs sftp and sshfs; wirefs 9p is diod $(dpkg-query -W -f='${Version}' diod 2>/dev/null || true) on the same directory (another"
echo "server). Local file: the same program on the exported directory (its own cost; no network, the same in every table)."
echo "Non-zero RTT: bench/remote/_delayproxy, RTT/2 each way, in front of sshd and diod."
echo "Runtime: $(($(date +%s) - START)) s; quick=$QUICK; $(nproc) CPUs; kernel $(uname -r); wirefs from $TREE."
echo "Load average (1/5/15 min) at start: $LOAD0; at end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "Per-run samples: bench/out/append/samples.tsv; failures: bench/out/append/errors.log."
} >"$TABLE"
cat "$TABLE"
