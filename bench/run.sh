#!/usr/bin/env bash
# wirefs benchmark: the file API through the FUSE door against raw sockets
# (and socat, bash /dev/tcp), on loopback and over a 1 Gbit/s veth link
# between two network namespaces. Prints one Markdown table.
#
#   bench/run.sh            full run (~4 minutes on 2 vCPUs)
#   bench/run.sh --quick    fewer runs and repetitions, no 1 GiB rows (~1 min)
#   BENCH_QUICK=1 bench/run.sh   same as --quick
#   BENCH_RUNS=N            runs per cell (median of N; default 7, quick 3;
#                           the 1 GiB rows: 3, quick: not run)
#   BENCH_SETUPS="veth"     only some setups (default "loopback veth")
#   BENCH_SIZES="67108864"  only some transfer sizes (bytes)
#   BENCH_LATENCY=0         skip the latency rows
#   BENCH_WIREFS=PATH       measure this wirefs binary instead of building one
#   BENCH_TRACE=1           also print where wirefs's time goes: FUSE
#                           requests per operation and their latency
#                           (kernel fuse tracepoints; needs perf)
#
# Needs root, go, cc, socat, iproute2 (ip, tc), nsenter, /dev/fuse.
# Everything it makes goes to bench/out/; everything it starts (namespaces,
# mounts, servers, daemons) is removed on exit, also on failure or Ctrl-C.
set -euo pipefail

SELF=$(readlink -f "$0")
cd "$(dirname "$SELF")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
QUICK=${BENCH_QUICK:-0}
for a in "$@"; do
	case $a in
	--quick) QUICK=1 ;;
	-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$SELF"; exit 0 ;;
	*) echo "run.sh: unknown argument $a" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "run.sh: must run as root (network namespaces, tc, mount)" >&2; exit 1; }
for t in go cc socat ip tc nsenter timeout awk; do
	command -v $t >/dev/null || { echo "run.sh: $t is missing" >&2; exit 1; }
done

if [ "$QUICK" = 1 ]; then
	RUNS=${BENCH_RUNS:-3}; RUNS_BIG=1
	N_CONN=200; N_CONN_BASH=150; N_CONN_SOCAT=30; N_ACC=100; N_RW=1000
	SIZES="1024 65536 1048576 67108864"
else
	RUNS=${BENCH_RUNS:-7}; RUNS_BIG=3
	N_CONN=500; N_CONN_BASH=300; N_CONN_SOCAT=100; N_ACC=200; N_RW=2000
	SIZES="1024 65536 1048576 67108864 1073741824"
fi
SIZES=${BENCH_SIZES:-$SIZES}
for s in $SIZES; do
	case $s in 1024 | 65536 | 1048576 | 67108864 | 1073741824) ;;
	*) echo "run.sh: BENCH_SIZES: $s is not one of 1024 65536 1048576 67108864 1073741824" >&2; exit 2 ;;
	esac
done
SETUPS=${BENCH_SETUPS:-loopback veth}
LATENCY=${BENCH_LATENCY:-1}
W_RW=100 # warm-up operations before the timed 16-byte reads/writes
HOLD=1000 N_ACC_BUSY=100 # the busy-server accept row: clients held open, accepts timed
# the busy-server row holds 2 x HOLD descriptors in nb (its end and the helper's)
ulimit -Sn "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -gt $((HOLD + 100)) ] || HOLD=$(($(ulimit -n) - 100))

mkdir -p "$OUT"
START=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
log() { printf '[%4ds] %s\n' $(($(date +%s) - START)) "$*" >&2; }

# ---- build ----
log "building wirefs, the FUSE floor and nb"
if [ -n "${BENCH_WIREFS:-}" ]; then
	cp "$BENCH_WIREFS" "$OUT/wirefs"
	TREE="the binary $BENCH_WIREFS"
else
	go build -o "$OUT/wirefs" ./cmd/wirefs
	TREE="the working tree"
	if git rev-parse --git-dir >/dev/null 2>&1; then
		TREE="commit $(git rev-parse --short HEAD)"
		if [ -n "$(git status --porcelain -- cmd internal go.mod go.sum)" ]; then
			TREE="$TREE plus uncommitted changes (diff $( (git diff HEAD -- cmd internal go.mod go.sum; git ls-files -o --exclude-standard -- cmd internal | xargs -r cat) | sha256sum | cut -c1-12))"
		fi
	fi
fi
go build -o "$OUT/floor" ./bench/_floor
go build -o "$OUT/godial" ./bench/_godial
cc -O2 -Wall -o "$OUT/nb" bench/nb.c -lpthread
WIREFS=$OUT/wirefs
NB=$OUT/nb

# ---- namespaces, mounts, servers; all undone by cleanup ----
TAG=wfb$$
NS_LO=$TAG-lo # loopback only
NS_A=$TAG-a   # the wirefs side of the veth link
NS_B=$TAG-b   # the server side
VA=${TAG}a VB=${TAG}b
NSS="" PIDS="" DAEMONS="" MOUNTS=""

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	for m in $MOUNTS; do
		if grep -q " $m fuse" /proc/mounts; then
			"$WIREFS" umount "$m" 2>/dev/null || {
				# a stuck request: abort the connection, then detach
				dev=$(stat -c %d "$m" 2>/dev/null)
				[ -n "$dev" ] && echo 1 >"/sys/fs/fuse/connections/$dev/abort" 2>/dev/null
				umount -l "$m"
			}
		fi
	done
	for p in $DAEMONS; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
		kill "$p" 2>/dev/null
	done
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	for n in $NSS; do ip netns del "$n" 2>/dev/null; done
	ip link del "$VA" 2>/dev/null # only if creating the link failed half-way
	rmdir "$OUT"/mnt-lo "$OUT"/mnt-veth "$OUT"/mnt-floor 2>/dev/null
	[ $rc = 0 ] || log "failed (exit $rc); cleaned up"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

in_ns() { local n=$1; shift; nsenter --net=/run/netns/"$n" -- "$@"; }

log "creating namespaces $NS_LO, $NS_A, $NS_B"
for n in $NS_LO $NS_A $NS_B; do
	ip netns add "$n"; NSS="$NSS $n"
	ip -n "$n" link set lo up
	# clients close first: let TIME_WAIT ports be reused (this netns only)
	in_ns "$n" sh -c 'echo 1 >/proc/sys/net/ipv4/tcp_tw_reuse'
done
ip link add "$VA" type veth peer name "$VB"
ip link set "$VA" netns "$NS_A"
ip link set "$VB" netns "$NS_B"
ip -n "$NS_A" addr add 10.231.77.1/30 dev "$VA"
ip -n "$NS_B" addr add 10.231.77.2/30 dev "$VB"
ip -n "$NS_A" link set "$VA" up
ip -n "$NS_B" link set "$VB" up
# 1 Gbit/s both ways. burst must hold a 64 KiB GSO segment; 10 ms of queue.
for x in "$NS_A $VA" "$NS_B $VB"; do
	set -- $x
	ip netns exec "$1" tc qdisc add dev "$2" root tbf rate 1gbit burst 256k latency 10ms
done

# Servers (raw C, thread per connection) in the server namespace of each
# setup: drain (connection setup), hold (16-byte writes: it never sleeps in
# read, so the writer is not timed waking it), feed (16-byte reads),
# sink-SIZE (transfers: read SIZE bytes, send a 1-byte ack, close).
P_DRAIN=5001 P_FEED=5002 P_HOLD=5003 P_ACC_RAW=5100 P_ACC_FILE=5101
sink_port() { case $1 in 1024) echo 5010 ;; 65536) echo 5011 ;; 1048576) echo 5012 ;; 67108864) echo 5013 ;; 1073741824) echo 5014 ;; esac; }
start_server() { # NS MODE PORT [BYTES]
	local ready=$OUT/ready.$1.$3
	rm -f "$ready"
	nsenter --net=/run/netns/"$1" -- "$NB" server "$2" "$3" -s "${4:-0}" -R "$ready" &
	PIDS="$PIDS $!"
	for _ in $(seq 100); do [ -e "$ready" ] && { rm -f "$ready"; return 0; }; sleep 0.05; done
	echo "run.sh: server $2 on $1:$3 did not start" >&2; exit 1
}
log "starting servers"
for n in $NS_LO $NS_B; do
	start_server "$n" drain $P_DRAIN
	start_server "$n" hold $P_HOLD
	start_server "$n" feed $P_FEED $(((W_RW + N_RW) * 16))
	for s in $SIZES; do start_server "$n" sink "$(sink_port "$s")" "$s"; done
done

mount_fuse() { # NS MOUNTPOINT CMD...
	local n=$1 m=$2
	shift 2
	mkdir -p "$m"
	nsenter --net=/run/netns/"$n" -- "$@" "$m" 2>"$OUT/$(basename "$m").log" &
	DAEMONS="$DAEMONS $!"
	MOUNTS="$MOUNTS $m"
	for _ in $(seq 100); do grep -q " $m fuse" /proc/mounts && return 0; sleep 0.05; done
	echo "run.sh: $1 did not mount $m; see $OUT/$(basename "$m").log" >&2; exit 1
}
log "mounting wirefs in $NS_LO and $NS_A, and the FUSE floor"
mount_fuse "$NS_LO" "$OUT/mnt-lo" "$WIREFS" mount --foreground
mount_fuse "$NS_A" "$OUT/mnt-veth" "$WIREFS" mount --foreground
mount_fuse "$NS_LO" "$OUT/mnt-floor" "$OUT/floor"
FLOOR=$OUT/mnt-floor/x

# ---- measuring ----
SAMPLES=$OUT/samples.tsv
: >"$SAMPLES"
# Every measurement prints "MEDIAN_US MEAN_US N"; one line per run goes to
# samples.tsv as: setup row tool run median mean n
record() { # SETUP ROW TOOL RUN NETNS CMD...
	local setup=$1 row=$2 tool=$3 run=$4 netns=$5 res
	shift 5
	if ! res=$(timeout -k 5 300 nsenter --net=/run/netns/"$netns" -- "$@"); then
		echo "run.sh: failed: $setup $row $tool: $*" >&2; exit 1
	fi
	set -- $res
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$setup" "$row" "$tool" "$run" "$1" "$2" "$3" >>"$SAMPLES"
}

# bash /dev/tcp peers: the timing loop runs inside bash (EPOCHREALTIME).
BASH_STATS='{ d = ($2 - $1) * 1e6; v[NR] = d; s += d } END {
	n = asort_(v, NR); m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	printf "%.3f %.3f %d\n", m, s / NR, NR }
function asort_(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } return n }'
bash_connect() { # HOST PORT N
	bash -c 'w=20; for ((i = -w; i < $3; i++)); do s=$EPOCHREALTIME; exec 3<>/dev/tcp/$1/$2; exec 3>&-; e=$EPOCHREALTIME; ((i >= 0)) && echo "$s $e"; done' _ "$@" | awk "$BASH_STATS"
}
bash_xfer() { # HOST PORT BYTES REPS WARMUP
	bash -c 'for ((i = -$5; i < $4; i++)); do s=$EPOCHREALTIME; exec 3<>/dev/tcp/$1/$2
		dd if=/dev/zero bs=1M count=$3 iflag=count_bytes status=none >&3
		read -r -N1 -u3 ack; exec 3>&-; e=$EPOCHREALTIME
		[ "$ack" = A ] || { echo "no ack" >&2; exit 1; }; ((i >= 0)) && echo "$s $e"; done' _ "$@" | awk "$BASH_STATS"
}

export BASH_STATS
export -f bash_connect bash_xfer

xfer_reps() { # BYTES -> "nb-reps peer-reps"
	case $1 in
	1024) [ "$QUICK" = 1 ] && echo "100 20" || echo "200 50" ;;
	65536) [ "$QUICK" = 1 ] && echo "50 20" || echo "100 50" ;;
	1048576) [ "$QUICK" = 1 ] && echo "10 5" || echo "30 20" ;;
	*) echo "1 1" ;;
	esac
}

bench_setup() { # SETUP NS_CLIENT NS_PEER SERVER_HOST MOUNT ACCEPT_HOST
	local setup=$1 nsc=$2 nsp=$3 host=$4 mnt=$5 acchost=$6 r s reps rn rp runs
	local dir=$mnt/tcp
	for r in $(seq "$RUNS"); do
		[ "$LATENCY" = 1 ] || break
		log "$setup: latency rows, run $r/$RUNS"
		record "$setup" connect raw "$r" "$nsc" "$NB" connect "raw:$host:$P_DRAIN" -n $N_CONN
		record "$setup" connect wirefs "$r" "$nsc" "$NB" connect "file:$dir/$host:$P_DRAIN" -n $N_CONN
		record "$setup" connect socat "$r" "$nsc" "$NB" spawn -n $N_CONN_SOCAT -- socat -u /dev/null "TCP:$host:$P_DRAIN"
		record "$setup" connect bash "$r" "$nsc" bash -c "bash_connect $host $P_DRAIN $N_CONN_BASH"
		record "$setup" accept raw "$r" "$nsc" "$NB" accept "raw:$P_ACC_RAW" -c "$acchost:$P_ACC_RAW" -N /run/netns/"$nsp" -n $N_ACC
		record "$setup" accept wirefs "$r" "$nsc" "$NB" accept "file:$dir/$P_ACC_FILE" -c "$acchost:$P_ACC_FILE" -N /run/netns/"$nsp" -n $N_ACC
		# the same on a busy concurrent server: HOLD accepted clients stay open
		record "$setup" acceptbusy raw "$r" "$nsc" "$NB" accept "raw:$P_ACC_RAW" -c "$acchost:$P_ACC_RAW" -N /run/netns/"$nsp" -n $N_ACC_BUSY -w 5 -H $HOLD
		record "$setup" acceptbusy wirefs "$r" "$nsc" "$NB" accept "file:$dir/$P_ACC_FILE" -c "$acchost:$P_ACC_FILE" -N /run/netns/"$nsp" -n $N_ACC_BUSY -w 5 -H $HOLD
		# the FUSE floor: the same calls on a do-nothing go-fuse file system
		record "$setup" connect floor "$r" "$nsc" "$NB" connect "file:$FLOOR" -n $N_CONN
		record "$setup" accept floor "$r" "$nsc" "$NB" open "file:$FLOOR" -n $N_CONN
		record "$setup" write16 floor "$r" "$nsc" "$NB" write16 "file:$FLOOR" -n $N_RW -w $W_RW
		record "$setup" read16 floor "$r" "$nsc" "$NB" read16 "file:$FLOOR" -n $N_RW -w $W_RW
		# what the daemon does inside a client OPEN: a Go dial (and close)
		record "$setup" connect godial "$r" "$nsc" "$OUT/godial" "$host:$P_DRAIN" $N_CONN
		record "$setup" write16 raw "$r" "$nsc" "$NB" write16 "raw:$host:$P_HOLD" -n $N_RW -w $W_RW
		record "$setup" write16 wirefs "$r" "$nsc" "$NB" write16 "file:$dir/$host:$P_HOLD" -n $N_RW -w $W_RW
		record "$setup" read16 raw "$r" "$nsc" "$NB" read16 "raw:$host:$P_FEED" -n $N_RW -w $W_RW
		record "$setup" read16 wirefs "$r" "$nsc" "$NB" read16 "file:$dir/$host:$P_FEED" -n $N_RW -w $W_RW
	done
	for s in $SIZES; do
		set -- $(xfer_reps "$s"); rn=$1 rp=$2
		runs=$RUNS; [ "$s" -ge 1073741824 ] && runs=$RUNS_BIG
		local port warm=1
		port=$(sink_port "$s")
		[ "$s" -ge 67108864 ] && warm=0 # big transfers need no warm-up
		for r in $(seq "$runs"); do
			log "$setup: transfer of $s bytes, run $r/$runs"
			# raw and wirefs use the same 1 MiB buffer (the door's largest request)
			record "$setup" "xfer$s" raw "$r" "$nsc" "$NB" xfer "raw:$host:$port" -s "$s" -r "$rn" -w $warm -b 1048576
			record "$setup" "xfer$s" wirefs "$r" "$nsc" "$NB" xfer "file:$dir/$host:$port" -s "$s" -r "$rn" -w $warm -b 1048576
			record "$setup" "xfer$s" socat "$r" "$nsc" "$NB" spawn -n "$rp" -w $warm -- socat -b 1048576 "OPEN:/dev/zero,readbytes=$s" "TCP:$host:$port"
			record "$setup" "xfer$s" bash "$r" "$nsc" bash -c "bash_xfer $host $port $s $rp $warm"
		done
	done
}

record all spawn true 1 "$NS_LO" "$NB" spawn -n 200 -- true
for setup in $SETUPS; do
	case $setup in
	loopback) bench_setup loopback "$NS_LO" "$NS_LO" 127.0.0.1 "$OUT/mnt-lo" 127.0.0.1 ;;
	veth) bench_setup veth "$NS_A" "$NS_B" 10.231.77.2 "$OUT/mnt-veth" 10.231.77.1 ;;
	*) echo "run.sh: unknown setup $setup" >&2; exit 2 ;;
	esac
done

# ---- the table ----
log "done measuring; writing the table"
TABLE=$OUT/results.md
awk -F'\t' -v runs="$RUNS" -v hold="$HOLD" '
function med(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ key = $1 SUBSEP $2 SUBSEP $3; v[key] = v[key] " " $5; cnt[key]++ }
function label(row,   b) {
	if (row == "connect") return "connection setup + close"
	if (row == "accept") return "accept a waiting client"
	if (row == "acceptbusy") return "accept, " hold " clients already open"
	if (row == "write16") return "16-byte write"
	if (row == "read16") return "16-byte read (data waiting)"
	b = substr(row, 5) + 0
	if (b >= 1073741824) return "transfer 1 GiB"
	if (b >= 1048576) return "transfer " b / 1048576 " MiB"
	return "transfer " b / 1024 " KiB"
}
function cell(setup, row, tool,   k) {
	k = setup SUBSEP row SUBSEP tool
	if (!(k in v)) return ""
	x = med(v[k])
	if (row ~ /^xfer/) return sprintf("%.1f", substr(row, 5) * 8 / x) # bits per µs = Mbit/s
	return sprintf("%.1f", x)
}
function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "" : sprintf("%.2f", a / b) }
END {
	print "| setup | measurement | unit | raw sockets | wirefs | wirefs/raw | FUSE floor | socat | socat/raw | bash /dev/tcp | bash/raw |"
	print "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	ns = split("loopback veth", S, " ")
	nr = split("connect accept acceptbusy write16 read16 xfer1024 xfer65536 xfer1048576 xfer67108864 xfer1073741824", R, " ")
	for (i = 1; i <= ns; i++) for (j = 1; j <= nr; j++) {
		raw = cell(S[i], R[j], "raw"); if (raw == "") continue
		w = cell(S[i], R[j], "wirefs"); so = cell(S[i], R[j], "socat"); ba = cell(S[i], R[j], "bash")
		fl = cell(S[i], R[j], "floor")
		unit = (R[j] ~ /^xfer/) ? "Mbit/s" : "µs"
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", (S[i] == "veth" ? "veth 1 Gbit/s" : S[i]), label(R[j]), unit, raw, w, ratio(w, raw), fl, so, ratio(so, raw), ba, ratio(ba, raw)
	}
	for (i = 1; i <= ns; i++) if ((S[i] SUBSEP "connect" SUBSEP "godial") in v)
		printf "\nGo net.Dialer.DialContext + Close alone (what the daemon does inside a client OPEN), %s: %.1f µs.", S[i], med(v[S[i] SUBSEP "connect" SUBSEP "godial"])
	if (("all" SUBSEP "spawn" SUBSEP "true") in v) printf "\n"
	if (("all" SUBSEP "spawn" SUBSEP "true") in v) printf "\nfork+exec+wait of /bin/true on this machine: %.0f µs (socat cells include one per connection or transfer).\n", med(v["all" SUBSEP "spawn" SUBSEP "true"])
}' "$SAMPLES" >"$TABLE"
# the spread behind each cell: min, median and max over the runs
awk -F'\t' '
{ key = $1 "\t" $2 "\t" $3; v[key] = v[key] " " $5; if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
END {
	print "| setup | row | tool | runs | min | median | max | unit |"
	print "|---|---|---|---:|---:|---:|---:|---|"
	for (i = 1; i <= k; i++) {
		split(order[i], f, "\t"); n = split(v[order[i]], a, " ")
		for (x = 2; x <= n; x++) { t = a[x] + 0; for (y = x - 1; y >= 1 && a[y] + 0 > t; y--) a[y + 1] = a[y]; a[y + 1] = t }
		m = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		if (f[2] ~ /^xfer/) { b = substr(f[2], 5) * 8; printf "| %s | %s | %s | %d | %.1f | %.1f | %.1f | Mbit/s |\n", f[1], f[2], f[3], n, b / a[n], b / m, b / a[1] }
		else printf "| %s | %s | %s | %d | %.1f | %.1f | %.1f | µs |\n", f[1], f[2], f[3], n, a[1], m, a[n]
	}
}' "$SAMPLES" >"$OUT/spread.md"
{
	echo
	echo "Cells: median over runs ($RUNS; 1 GiB: $RUNS_BIG) of each run's median per operation."
	echo "Latency rows in µs (ratio > 1 = slower than raw); transfer rows in Mbit/s including"
	echo "connection setup, the transfer, a 1-byte end-to-end ack and close (ratio < 1 = slower)."
	echo "FUSE floor: the same open/close/read/write on a do-nothing go-fuse file system built"
	echo "like the wirefs door (bench/_floor): what the kernel and go-fuse cost without any network."
	echo "Runtime: $(($(date +%s) - START)) s; quick=$QUICK; $(nproc) CPUs; kernel $(uname -r); wirefs from $TREE."
	echo "Load average (1/5/15 min) at start: $LOAD0; at end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine shows here)."
	echo "Per-run samples: bench/out/samples.tsv; min/median/max per cell: bench/out/spread.md."
} >>"$TABLE"

# ---- optional: where the time goes, per FUSE request ----
trace_op() { # LABEL CMD...  (loopback, one nb run under the fuse tracepoints)
	local label=$1 dev data=$OUT/trace.data
	shift
	dev=$(stat -c %d "$OUT/mnt-lo")
	perf record -q -e fuse:fuse_request_send -e fuse:fuse_request_end -a -o "$data" -- \
		nsenter --net=/run/netns/"$NS_LO" -- "$@" >"$OUT/trace.out" 2>/dev/null
	perf script -i "$data" -F time,event,trace 2>/dev/null | awk -v dev="$dev" -v label="$label" -v ops="$(cut -d' ' -f3 "$OUT/trace.out")" '
	function med(list,   a, n, i, j, t) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
		return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	$2 == "fuse:fuse_request_send:" && $4 == dev { t[$6] = $1 + 0; op[$6] = $9 }
	$2 == "fuse:fuse_request_end:" && $4 == dev && ($6 in t) {
		o = op[$6]; gsub(/[()]|FUSE_/, "", o); lat[o] = lat[o] " " ($1 + 0 - t[$6]) * 1e6; n[o]++; delete t[$6] }
	END {
		line = ""
		for (o in n) if (n[o] >= ops / 2) line = line sprintf("  %s x%.1f (median %.0f µs)", o, n[o] / ops, med(lat[o]))
		printf "| %s |%s |\n", label, line
	}'
}
if [ "${BENCH_TRACE:-0}" = 1 ]; then
	if command -v perf >/dev/null && [ -d /sys/kernel/tracing/events/fuse ]; then
		log "tracing FUSE requests (loopback)"
		{
			echo
			echo "FUSE requests per operation on the loopback wirefs mount (count per operation, and the"
			echo "median time from request to reply as the kernel sees it; RELEASE is asynchronous):"
			echo
			echo "| operation | requests per operation |"
			echo "|---|---|"
			L=$OUT/mnt-lo/tcp
			trace_op "open+close tcp/HOST:PORT (connect)" "$NB" connect "file:$L/127.0.0.1:$P_DRAIN" -n 1000 -w 0
			trace_op "open tcp/PORT again (accept)" "$NB" accept "file:$L/$P_ACC_FILE" -c "127.0.0.1:$P_ACC_FILE" -n 300 -w 0
			trace_op "16-byte write" "$NB" write16 "file:$L/127.0.0.1:$P_HOLD" -n $N_RW -w 0
			trace_op "16-byte read" "$NB" read16 "file:$L/127.0.0.1:$P_FEED" -n $N_RW -w 0
		} >>"$TABLE"
		rm -f "$OUT/trace.data" "$OUT/trace.data.old" "$OUT/trace.out"
	else
		log "BENCH_TRACE: perf or the fuse tracepoints are missing; skipped"
	fi
fi
cat "$TABLE"
