#!/usr/bin/env bash
# bench/vif/run.sh — seed 003's virtual network interfaces (issue 11),
# measured. One command, as root: two network namespaces joined by a veth
# pair (made here, removed at exit; the host's interfaces are never
# touched), wirefs mounted with its daemon in the first, iperf3 servers in
# the second.
#   1. accuracy: one shaping VIF at 1, 10, 100, 500 Mbit/s, iperf3 TCP
#      out (egress) and in (-R, ingress): measured / configured
#   2. seed 003's Figure 8 scaled x10: VIF3 2.56 MB/s (children VIF1:VIF2
#      = 2:1 by weight), VIF4 5.12 MB/s, VIF5 1.28 MB/s, traffic starting
#      and stopping as in the paper; per-VIF Mbit/s each second
#   3. cost: TCP throughput and UDP round trip with no VIF and through 1,
#      2, 4, 6 nested unlimited VIFs (HTB's 8 levels allow no more)
#   4. management operations through the mount: median and p99 us of
#      BENCH_RUNS (3) runs of 500 each; `bench/vif/run.sh ops` runs this
#      section alone. BENCH_PEER=BINARY (another build of wirefs, e.g. of
#      an earlier commit) mounts it too, in a third namespace with a veth
#      of its own, and times it interleaved with this one, operation by
#      operation: on this shared 2-vCPU VM the medians of runs minutes
#      apart differ by a third, those of interleaved peers do not
# Results go to stdout and bench/out/vif/.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "bench/vif: needs root" >&2; exit 1; }
command -v iperf3 >/dev/null || { echo "bench/vif: needs iperf3 (apt-get install iperf3)" >&2; exit 1; }
out=bench/out/vif
mkdir -p "$out"
go build -o "$out/wirefs" ./cmd/wirefs
W=$PWD/$out/wirefs
A=wfbench-a B=wfbench-b C=wfbench-c
MNT=$(mktemp -d /tmp/wfbench-mnt.XXXX)
PEERMNT=
cleanup() {
	set +e
	pkill -P $$ iperf3 2>/dev/null
	ip netns pids $B 2>/dev/null | xargs -r kill 2>/dev/null
	"$W" umount "$MNT" 2>/dev/null
	[ -n "$PEERMNT" ] && "$W" umount "$PEERMNT" 2>/dev/null && rmdir "$PEERMNT"
	for n in $A $C; do ip netns pids $n 2>/dev/null | xargs -r kill 2>/dev/null; done
	rmdir "$MNT"
	for n in $A $B $C; do ip netns del $n 2>/dev/null; done
}
trap cleanup EXIT
for n in $A $B $C; do ip netns del $n 2>/dev/null || true; done
ip netns add $A; ip netns add $B
ip link add wfbench0 type veth peer name wfbench1
ip link set wfbench0 netns $A name va; ip link set wfbench1 netns $B name vb
ip -n $A addr add 10.78.0.1/24 dev va; ip -n $B addr add 10.78.0.2/24 dev vb
for n in $A $B; do ip -n $n link set lo up; done
ip -n $A link set va up; ip -n $B link set vb up
inA() { nsenter --net=/run/netns/$A "$@"; }
inB() { nsenter --net=/run/netns/$B "$@"; }
for p in $(seq 5201 5210); do inB iperf3 -s -p $p -D >/dev/null; done
# a UDP echo for the round trips (no ping on a minimal system)
inB python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.78.0.2", 7007))
while True:
    b, a = s.recvfrom(64); s.sendto(b, a)' &
sleep 0.5
inA "$W" mount --log "$out/daemon.log" "$MNT"
V=$MNT/vif/va

# attached CMD...: runs CMD in a bash attached to VIF $1 (path under vif/va)
attached() {
	local vif=$1; shift
	inA bash -c 'ln -s "$1" "$2/proc/$$/va" && shift 2 && exec "$@"' bash "$V/$vif" "$MNT" "$@"
}
# rtt: average UDP round trip to the echo, ms (500 of them)
RTT='
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("10.78.0.2", 7007)); v = []
for i in range(500):
    a = time.perf_counter(); s.send(b"x"); s.recv(64); v.append(time.perf_counter() - a)
v.sort(); print("%.3f" % (1000 * sum(v[:450]) / 450))'
# iperf_bps JSON: the receiver's bits per second
iperf_bps() { python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]))'; }

if [ "${1:-all}" != ops ]; then
echo "## 1. accuracy (iperf3 TCP, 6 s, omit 1 s; at 1 Mbit/s 20 s, omit 5 s)"
printf '%-10s %14s %8s %14s %8s\n' configured egress ratio ingress ratio
for r in 1 10 100 500; do
	# At 1 Mbit/s a window's worth of slow start is seconds of traffic:
	# a longer hold measures the steady rate, not the ramp.
	hold="-t 6 -O 1"
	[ $r = 1 ] && hold="-t 20 -O 5"
	mkdir "$V/acc"
	echo "${r}mbit" > "$V/acc/rate"; echo shape > "$V/acc/mode"
	e=$(attached acc iperf3 -c 10.78.0.2 -p 5201 $hold -J | iperf_bps)
	i=$(attached acc iperf3 -c 10.78.0.2 -p 5201 $hold -R -J | iperf_bps)
	rmdir "$V/acc"
	awk -v r=$r -v e=$e -v i=$i 'BEGIN { printf "%-10s %14.2f %8.3f %14.2f %8.3f\n", r "mbit", e/1e6, e/(r*1e6), i/1e6, i/(r*1e6) }'
done | tee "$out/accuracy.txt"
echo "(iperf3 counts TCP payload: at MTU 1500 that is 1448/1514 = 0.956 of what HTB counts)"

echo
echo "## 1b. UDP through a VIF, and the peers of wirefs nice (egress, TCP 6 s / at 1 Mbit/s 20 s)"
echo "(UDP: iperf3 -u sends 1.5x the rate, 1400-byte datagrams; payload/(payload+42) = 0.971 of what HTB counts."
echo " paced: wirefs nice as nobody (SO_MAX_PACING_RATE; as root it makes a VIF, as in section 1 —"
echo " not here, where the daemon holds this namespace's VIFs); trickle -s -u (dynamic TCP only)."
echo " Ratios are of TCP payload, 0.956 = the wire rate.)"
printf '%-10s %10s %8s %10s %8s %10s %8s\n' configured udp ratio paced ratio trickle ratio
for r in 1 10 100; do
	hold="-t 6 -O 1"
	[ $r = 1 ] && hold="-t 20 -O 5"
	mkdir "$V/acc"
	echo "${r}mbit" > "$V/acc/rate"; echo shape > "$V/acc/mode"
	u=$(attached acc iperf3 -c 10.78.0.2 -p 5201 -u -b $((r * 3 / 2))M -l 1400 $hold -J | iperf_bps)
	rmdir "$V/acc"
	pc=$(inA setpriv --reuid=65534 --regid=65534 --clear-groups "$W" nice --rate ${r}mbit -- iperf3 -c 10.78.0.2 -p 5201 $hold -J 2>/dev/null | iperf_bps)
	tr=0
	command -v trickle >/dev/null && tr=$(inA trickle -s -u $((r * 1000 / 8)) iperf3 -c 10.78.0.2 -p 5201 $hold -J | iperf_bps)
	awk -v r=$r -v u=$u -v p=$pc -v t=$tr 'BEGIN { R = r * 1e6
		printf "%-10s %10.2f %8.3f %10.2f %8.3f %10.2f %8.3f\n", r "mbit", u/1e6, u/R, p/1e6, p/R, t/1e6, t/R }'
done | tee "$out/peers.txt"

echo
echo "## 2. Figure 8 x10 (Mbit/s each second; due: VIF5 10.24, VIF4 40.96, VIF1+VIF2 <= 20.48 at 2:1)"
mkdir "$V/vif3" "$V/vif3/vif1" "$V/vif3/vif2" "$V/vif4" "$V/vif5"
echo 20.48mbit > "$V/vif3/rate"; echo shape > "$V/vif3/mode"
echo 2 > "$V/vif3/vif1/weight"; echo 1 > "$V/vif3/vif2/weight"
echo 40.96mbit > "$V/vif4/rate"; echo shape > "$V/vif4/mode"
echo 10.24mbit > "$V/vif5/rate"; echo shape > "$V/vif5/mode"
senders=()
start_at() { # start_at SECOND DURATION VIF PORT
	(sleep "$1"; attached "$3" iperf3 -c 10.78.0.2 -p "$4" -t "$2" >/dev/null 2>&1) &
	senders+=($!)
}
start_at 0 60 vif5 5202
start_at 5 10 vif4 5203
start_at 20 20 vif3/vif1 5204
start_at 30 20 vif3/vif2 5205
python3 - "$V" <<'PY' | tee "$out/figure8.txt"
import sys, time, re
V = sys.argv[1]
vifs = [("vif1", "vif3/vif1"), ("vif2", "vif3/vif2"), ("vif3", "vif3"), ("vif4", "vif4"), ("vif5", "vif5")]
def nbytes(p):
    return int(re.search(r"out_bytes=(\d+)", open(f"{V}/{p}/stats").read()).group(1))
print("%4s " % "t" + " ".join("%7s" % n for n, _ in vifs))
last = {n: nbytes(p) for n, p in vifs}; t0 = time.time(); lt = t0
for s in range(1, 61):
    time.sleep(max(0, t0 + s - time.time()))
    now = time.time(); cur = {n: nbytes(p) for n, p in vifs}
    print("%4d " % s + " ".join("%7.2f" % ((cur[n] - last[n]) * 8 / (now - lt) / 1e6) for n, _ in vifs), flush=True)
    last, lt = cur, now
PY
wait "${senders[@]}"
rmdir "$V/vif3/vif1" "$V/vif3/vif2" "$V/vif3" "$V/vif4" "$V/vif5"
echo "(wire bytes as HTB counts them, from each VIF's stats; plot: $out/figure8.png)"
go run ./bench/vif/_plot "$out/figure8.txt" "$out/figure8.png"

echo
echo "## 3. cost (iperf3 TCP 6 s, omit 1 s; UDP round trip, mean of the fastest 450 of 500)"
printf '%-22s %12s %8s %12s\n' path Mbit/s 'x none' 'RTT ms'
base=$(inA iperf3 -c 10.78.0.2 -p 5206 -t 6 -O 1 -J | iperf_bps)
rtt=$(inA python3 -c "$RTT")
printf '%-22s %12.0f %8.3f %12s\n' "no VIF (no qdisc)" "$(awk -v b=$base 'BEGIN{print b/1e6}')" 1 "$rtt" | tee "$out/cost.txt"
# HTB has 8 levels: VIFs nest at most 6 deep under the interface
for depth in 1 2 4 6; do
	path=""
	for i in $(seq 1 $depth); do path="$path/n$i"; mkdir "$V$path"; done
	path=${path#/}
	bps=$(attached "$path" iperf3 -c 10.78.0.2 -p 5206 -t 6 -O 1 -J | iperf_bps)
	rtt=$(attached "$path" python3 -c "$RTT")
	printf '%-22s %12.0f %8.3f %12s\n' "$depth nested VIF(s)" "$(awk -v b=$bps 'BEGIN{print b/1e6}')" "$(awk -v b=$bps -v a=$base 'BEGIN{print b/a}')" "$rtt" | tee -a "$out/cost.txt"
	for i in $(seq $depth -1 1); do rmdir "$V/$(echo "$path" | cut -d/ -f1-$i)"; done
done
echo "(each VIF unlimited: its ceil follows the root's, the veth's 10gbit)"

fi # sections 1-3
echo
if [ -n "${BENCH_PEER:-}" ]; then
	# the peer's own namespace and veth (one daemon manages a namespace's VIFs)
	ip netns add $C
	ip link add wfbench2 type veth peer name wfbench3
	ip link set wfbench2 netns $C name va; ip link set wfbench3 netns $C
	ip -n $C link set va up; ip -n $C link set lo up
	PEERMNT=$(mktemp -d /tmp/wfbench-peer.XXXX)
	nsenter --net=/run/netns/$C "$BENCH_PEER" mount --log "$out/peer.log" "$PEERMNT"
fi
echo "## 4. management operations through the mount (us; ${BENCH_RUNS:-3} runs of 500 each${BENCH_PEER:+; peer: $BENCH_PEER, interleaved})"
python3 - "${BENCH_RUNS:-3}" "$MNT" $PEERMNT <<'PY' | tee "$out/ops.txt"
import os, sys, time, subprocess, statistics
runs = int(sys.argv[1])
mounts = {"wirefs": sys.argv[2]}
if len(sys.argv) > 3: mounts["peer"] = sys.argv[3]
ops = ["mkdir", "rmdir", "attach (ln -s)", "detach (rm)", "read stats", "write rate", "attach socket", "detach socket"]
def operations(M):
    V = M + "/vif/va"
    # a process holding one TCP socket (per-socket attach: proc/PID/sockets/FD/va)
    p = subprocess.Popen([sys.executable, "-c", "import socket, sys, time\n"
        "s = socket.socket(); print(s.fileno(), flush=True); time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    fd = int(p.stdout.readline())
    link, slink = f"{M}/proc/{p.pid}/va", f"{M}/proc/{p.pid}/sockets/{fd}/va"
    os.mkdir(V + "/ops")
    def rd():
        with open(V + "/ops/stats") as f: f.read()
    rates = ["2mbit\n", "3mbit\n"]
    def wr():  # a new value each time: a change, not a repeat
        rates.reverse()
        with open(V + "/ops/rate", "w") as f: f.write(rates[0])
    def done():
        p.kill(); os.rmdir(V + "/ops")
    return done, {"mkdir": lambda: os.mkdir(V + "/x"), "rmdir": lambda: os.rmdir(V + "/x"),
        "attach (ln -s)": lambda: os.symlink(V + "/ops", link), "detach (rm)": lambda: os.unlink(link),
        "read stats": rd, "write rate": wr,
        "attach socket": lambda: os.symlink(V + "/ops", slink), "detach socket": lambda: os.unlink(slink)}
do = {m: operations(M) for m, M in mounts.items()}
medians = {m: {k: [] for k in ops} for m in mounts}
every = {m: {k: [] for k in ops} for m in mounts}
for r in range(runs):
    res = {m: {k: [] for k in ops} for m in mounts}
    for i in range(500):
        for m in mounts:
            for k in ops:
                a = time.perf_counter_ns(); do[m][1][k](); res[m][k].append((time.perf_counter_ns() - a) / 1000)
    for m in mounts:
        for k in ops:
            medians[m][k].append(statistics.median(res[m][k])); every[m][k] += res[m][k]
for m in mounts: do[m][0]()
def row(m, k):
    v = sorted(every[m][k])
    return statistics.median(medians[m][k]), v[int(len(v) * 0.99)], v[0]
if len(mounts) == 1:
    print("%-16s %8s %8s %8s   %s" % ("operation", "median", "p99", "min", "median of each run"))
    for k in ops:
        print("%-16s %8.0f %8.0f %8.0f   %s" % ((k,) + row("wirefs", k) + (" ".join("%.0f" % x for x in medians["wirefs"][k]),)))
else:
    print("%-16s %8s %8s %8s   %8s %8s %8s   %s" % ("operation", "median", "p99", "min", "peer med", "p99", "min", "wirefs/peer"))
    for k in ops:
        w, pr = row("wirefs", k), row("peer", k)
        print("%-16s %8.0f %8.0f %8.0f   %8.0f %8.0f %8.0f   %.2f" % ((k,) + w + pr + (w[0] / pr[0],)))
PY
echo "(seed 003, Table I: 14-35 us min on a 733 MHz Celeron, in-kernel procfs)"
