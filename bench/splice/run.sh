#!/usr/bin/env bash
# bench/splice/run.sh — wirefs splice (issue 10, seed 002) against its peers,
# all in the same run: socat -u FILE TCP, bash "cat FILE > /dev/tcp", a C
# read/write loop and a C sendfile loop (bench/splice/peer.c).
#
#   1. file → socket, 1 GiB from the page cache, over loopback and over a
#      veth pair shaped to 1 Gbit/s (TBF, two network namespaces of its own):
#      throughput at the receiver and the sender's CPU seconds (user+sys) per GiB;
#   2. 1, 2, 4 transfers in parallel on the shaped link: aggregate
#      throughput and Jain fairness (wirefs splice and the C read/write loop);
#   3. relay socket → socket on loopback: wirefs splice --both vs socat
#      TCP-LISTEN TCP: throughput and the relay's CPU per GiB;
#   4. split to 3 sinks (vs tee and socats) and merge of 3 sources (vs
#      socats into one pipe), throughput and CPU, loopback;
#   5. connections per second through --both --fork vs socat TCP-LISTEN,fork;
#   6. pacing: --rate 1, 10, 100, 500 mbit and --schedule 4,16ms, measured at
#      the receiver.
#
# Needs root (netns, tc). Touches no interface or qdisc of the machine: it
# makes its own namespaces and veth pair and deletes them at exit.
# BENCH_RUNS (default 3) runs per cell, medians reported; BENCH_SIZE_MB
# (default 1024) the file size; BENCH_SECTIONS (default all of them: "file
# parallel relay split merge fork pacing") the sections to run, e.g.
# BENCH_SECTIONS=file for row 1 alone. Prints markdown tables; raw samples
# in bench/out/splice/samples.tsv.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "bench/splice: needs root (network namespaces, tc)" >&2; exit 1; }
RUNS=${BENCH_RUNS:-3}
SIZE_MB=${BENCH_SIZE_MB:-1024}
SECTIONS=" ${BENCH_SECTIONS:-file parallel relay split merge fork pacing} "
# run SECTION: whether this run measures SECTION.
run() { [[ $SECTIONS == *" $1 "* ]]; }
OUT=bench/out/splice
mkdir -p "$OUT"
log() { echo "bench/splice: $*" >&2; }

go build -o "$OUT/wirefs" ./cmd/wirefs
cc -O2 -Wall -o "$OUT/peer" bench/splice/peer.c
W=$PWD/$OUT/wirefs PEER=$PWD/$OUT/peer
F=$PWD/$OUT/data
if [ "$(stat -c %s "$F" 2>/dev/null || echo 0)" != $((SIZE_MB << 20)) ]; then
	head -c "${SIZE_MB}M" /dev/urandom >"$F"
fi
cat "$F" >/dev/null # into the page cache

TAG=wsp$$
NS_LO=$TAG-lo NS_A=$TAG-a NS_B=$TAG-b VA=${TAG}a VB=${TAG}b
NSS="" PIDS=""
cleanup() {
	local rc=$?
	set +e
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	for n in $NSS; do ip netns del "$n" 2>/dev/null; done
	ip link del "$VA" 2>/dev/null
	rm -f "$OUT"/ready.*
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
in_ns() { local n=$1; shift; nsenter --net=/run/netns/"$n" -- "$@"; }
for n in $NS_LO $NS_A $NS_B; do
	ip netns add "$n"; NSS="$NSS $n"
	ip -n "$n" link set lo up
done
ip link add "$VA" type veth peer name "$VB"
ip link set "$VA" netns "$NS_A"
ip link set "$VB" netns "$NS_B"
ip -n "$NS_A" addr add 10.231.78.1/30 dev "$VA"
ip -n "$NS_B" addr add 10.231.78.2/30 dev "$VB"
ip -n "$NS_A" link set "$VA" up
ip -n "$NS_B" link set "$VB" up
for x in "$NS_A $VA" "$NS_B $VB"; do
	set -- $x
	ip netns exec "$1" tc qdisc add dev "$2" root tbf rate 1gbit burst 256k latency 10ms
done

PORT=20000
# sink NS PORT: a C receiver listening in NS (returns once it listens);
# its "bytes seconds" line goes to $OUT/sink.PORT.
sink() {
	local ready=$OUT/ready.$2
	rm -f "$ready"; mkfifo "$ready"
	in_ns "$1" "$PEER" sink "$2" 3 3>"$ready" >"$OUT/sink.$2" &
	SINK_PID=$!
	read -r _ <"$ready"
	rm -f "$ready"
}

# xfer SENDER_NS SINK_NS HOST CMD...: one transfer of CMD (with @ for
# HOST:PORT spelled as CMD wants it, see below) to a fresh sink; prints
# "bytes seconds wall user sys".
xfer() {
	local sns=$1 rns=$2 host=$3; shift 3
	PORT=$((PORT + 1))
	sink "$rns" "$PORT"
	local args=() a
	for a in "$@"; do
		a=${a//@HOST/$host}; a=${a//@PORT/$PORT}; args+=("$a")
	done
	local t
	"$PEER" cpu "$OUT/cpu.time" nsenter --net=/run/netns/"$sns" -- "${args[@]}" >/dev/null
	t=$(cat "$OUT/cpu.time")
	wait "$SINK_PID"
	echo "$(cat "$OUT/sink.$PORT") $t"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
SAMPLES=$OUT/samples.tsv
: >"$SAMPLES"

peer_cmd() {
	case $1 in
	wirefs) echo "$W splice -q $F tcp/@HOST:@PORT" ;;
	socat) echo "socat -u OPEN:$F TCP:@HOST:@PORT" ;;
	bash) echo "bash -c cat\${IFS}$F>/dev/tcp/@HOST/@PORT" ;;
	c-rw) echo "$PEER rw $F @HOST @PORT" ;;
	c-sendfile) echo "$PEER sendfile $F @HOST @PORT" ;;
	esac
}
PEERS="wirefs socat bash c-rw c-sendfile"
declare -A MBIT CPU
for setup in loopback veth; do
	run file || break
	if [ $setup = loopback ]; then sns=$NS_LO rns=$NS_LO host=127.0.0.1; else sns=$NS_A rns=$NS_B host=10.231.78.2; fi
	# Runs interleave the peers (a round of each, RUNS times), so that a
	# drift of the machine (another job, the file's pages evicted) falls
	# on every peer alike, not on the last ones.
	for r in $(seq "$RUNS"); do
		for p in $PEERS; do
			log "file → socket, $setup, $p, run $r"
			cat "$F" >/dev/null # the file from the page cache, whatever ran before
			# shellcheck disable=SC2046
			set -- $(xfer $sns $rns $host $(peer_cmd $p))
			[ "$1" = $((SIZE_MB << 20)) ] || { log "$p sent $1 bytes, not $((SIZE_MB << 20))"; exit 1; }
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' file-socket $setup $p "$1" "$2" "$4" "$5" >>"$SAMPLES"
		done
	done
	for p in $PEERS; do
		MBIT[$setup,$p]=$(awk -v s=$setup -v p=$p '$1=="file-socket" && $2==s && $3==p {printf "%.1f\n", $4*8/$5/1e6}' "$SAMPLES" | median)
		CPU[$setup,$p]=$(awk -v s=$setup -v p=$p '$1=="file-socket" && $2==s && $3==p {printf "%.4f\n", ($6+$7)/($4/2^30)}' "$SAMPLES" | median)
	done
done

# Parallel transfers on the shaped link: N sinks, N senders at once, each
# a quarter of the file's size.
PAR=$OUT/par
if run parallel; then head -c $((SIZE_MB / 4))M "$F" >"$PAR"; fi
declare -A AGG JAIN
for tool in wirefs c-rw; do
	run parallel || break
	for n in 1 2 4; do
		log "parallel $n, $tool"
		ports=() sinks=() senders=()
		for i in $(seq "$n"); do
			PORT=$((PORT + 1)); sink $NS_B $PORT; ports+=($PORT); sinks+=($SINK_PID)
		done
		for port in "${ports[@]}"; do
			if [ $tool = wirefs ]; then
				in_ns $NS_A "$W" splice -q "$PAR" tcp/10.231.78.2:$port &
			else
				in_ns $NS_A "$PEER" rw "$PAR" 10.231.78.2 $port &
			fi
			senders+=($!)
		done
		wait "${senders[@]}" "${sinks[@]}"
		res=$(for port in "${ports[@]}"; do cat "$OUT/sink.$port"; done)
		AGG[$tool,$n]=$(echo "$res" | awk '{b+=$1; if ($2>t) t=$2} END {printf "%.1f", b*8/t/1e6}')
		JAIN[$tool,$n]=$(echo "$res" | awk '{x=$1*8/$2/1e6; s+=x; q+=x*x; n++} END {printf "%.3f", s*s/(n*q)}')
	done
done

# Relay on loopback: client (C sendfile) → relay → C sink; the relay's CPU.
declare -A RMBIT RCPU
for tool in wirefs socat; do
	run relay || break
	log "relay, $tool"
	for r in $(seq "$RUNS"); do
		PORT=$((PORT + 2)); lport=$((PORT - 1))
		sink $NS_LO $PORT
		if [ $tool = wirefs ]; then
			relay=("$W" splice -q --both "tcp/127.0.0.1:$lport::" "tcp/127.0.0.1:$PORT")
		else
			relay=(socat "TCP-LISTEN:$lport,bind=127.0.0.1,reuseaddr" "TCP:127.0.0.1:$PORT")
		fi
		in_ns $NS_LO "$PEER" cpu "$OUT/relay.time" "${relay[@]}" &
		rp=$!
		in_ns $NS_LO "$PEER" sendfile "$F" 127.0.0.1 $lport
		wait $rp "$SINK_PID"
		printf 'relay\tloopback\t%s\t%s\t%s\n' $tool "$(cat "$OUT/sink.$PORT")" "$(cat "$OUT/relay.time")" >>"$SAMPLES"
	done
	RMBIT[$tool]=$(awk -v p=$tool '$1=="relay" && $3==p {printf "%.1f\n", $4*8/$5/1e6}' "$SAMPLES" | median)
	RCPU[$tool]=$(awk -v p=$tool '$1=="relay" && $3==p {printf "%.4f\n", ($7+$8)/($4/2^30)}' "$SAMPLES" | median)
done

# Split to 3 sinks on loopback: wirefs (one pipe, tee(2) to two more) vs
# tee(1) feeding three socats through FIFOs. Time: until the last sink
# has everything; CPU: all the sender's processes.
declare -A SMBIT SCPU MMBIT MCPU
for tool in wirefs tee; do
	run split || break
	log "split to 3, $tool"
	for r in $(seq "$RUNS"); do
		ports=() sinks=()
		for i in 1 2 3; do PORT=$((PORT + 1)); sink $NS_LO $PORT; ports+=($PORT); sinks+=($SINK_PID); done
		if [ $tool = wirefs ]; then
			cmd=("$W" splice -q "$F" tcp/127.0.0.1:${ports[0]} tcp/127.0.0.1:${ports[1]} tcp/127.0.0.1:${ports[2]})
		else
			rm -f "$OUT/t1" "$OUT/t2"; mkfifo "$OUT/t1" "$OUT/t2"
			cmd=(bash -c "socat -u OPEN:$OUT/t1 TCP:127.0.0.1:${ports[0]} & socat -u OPEN:$OUT/t2 TCP:127.0.0.1:${ports[1]} &
tee $OUT/t1 $OUT/t2 <$F | socat -u STDIN TCP:127.0.0.1:${ports[2]}; wait")
		fi
		"$PEER" cpu "$OUT/split.time" nsenter --net=/run/netns/$NS_LO -- "${cmd[@]}" >/dev/null
		t=$(cut -d' ' -f2- "$OUT/split.time")
		wait "${sinks[@]}"
		res=$(for port in "${ports[@]}"; do cat "$OUT/sink.$port"; done)
		printf 'split\tloopback\t%s\t%s\t%s\n' $tool "$(echo "$res" | awk '{b+=$1; if ($2>s) s=$2} END {print b/3, s}')" "$t" >>"$SAMPLES"
	done
	SMBIT[$tool]=$(awk -v p=$tool '$1=="split" && $3==p {printf "%.1f\n", $4*8/$5/1e6}' "$SAMPLES" | median)
	SCPU[$tool]=$(awk -v p=$tool '$1=="split" && $3==p {printf "%.4f\n", ($6+$7)/($4/2^30)}' "$SAMPLES" | median)
	rm -f "$OUT/t1" "$OUT/t2"
done

# Merge of 3 on loopback: three C sendfile clients, each a third of the
# file, into one sink: wirefs --merge (listens on three ports) vs three
# socats writing into one pipe to a fourth.
if run merge; then head -c $((SIZE_MB / 3))M "$F" >"$OUT/third"; fi
for tool in wirefs socat; do
	run merge || break
	log "merge of 3, $tool"
	for r in $(seq "$RUNS"); do
		PORT=$((PORT + 4)); sink $NS_LO $PORT
		p1=$((PORT - 3)) p2=$((PORT - 2)) p3=$((PORT - 1))
		if [ $tool = wirefs ]; then
			cmd=("$W" splice -q --merge tcp/127.0.0.1:$p1:: tcp/127.0.0.1:$p2:: tcp/127.0.0.1:$p3:: tcp/127.0.0.1:$PORT)
		else
			cmd=(bash -c "{ socat -u TCP-LISTEN:$p1,bind=127.0.0.1,reuseaddr STDOUT & socat -u TCP-LISTEN:$p2,bind=127.0.0.1,reuseaddr STDOUT &
socat -u TCP-LISTEN:$p3,bind=127.0.0.1,reuseaddr STDOUT & wait; } | socat -u STDIN TCP:127.0.0.1:$PORT")
		fi
		in_ns $NS_LO "$PEER" cpu "$OUT/merge.time" "${cmd[@]}" &
		mp=$!
		for q in $p1 $p2 $p3; do in_ns $NS_LO "$PEER" sendfile "$OUT/third" 127.0.0.1 $q & done
		wait $mp "$SINK_PID"
		printf 'merge\tloopback\t%s\t%s\t%s\n' $tool "$(cat "$OUT/sink.$PORT")" "$(cut -d' ' -f2- "$OUT/merge.time")" >>"$SAMPLES"
		wait
	done
	MMBIT[$tool]=$(awk -v p=$tool '$1=="merge" && $3==p {printf "%.1f\n", $4*8/$5/1e6}' "$SAMPLES" | median)
	MCPU[$tool]=$(awk -v p=$tool '$1=="merge" && $3==p {printf "%.4f\n", ($6+$7)/($4/2^30)}' "$SAMPLES" | median)
done
rm -f "$OUT/third"

# Connections per second through a forking relay: 2000 short requests
# (connect, 100 bytes, half-close, a 2-byte answer, close), one at a time.
declare -A CONNS
if run fork; then
PORT=$((PORT + 2)); SRV=$PORT
rm -f "$OUT/ready.srv"; mkfifo "$OUT/ready.srv"
# nsenter itself, not the in_ns function, so that $! is the process
# (a backgrounded function is a subshell: killing it leaves its child).
nsenter --net=/run/netns/$NS_LO -- "$PEER" server $SRV 3 3>"$OUT/ready.srv" & PIDS="$PIDS $!"
read -r _ <"$OUT/ready.srv"; rm -f "$OUT/ready.srv"
CONNS[direct]=$(in_ns $NS_LO "$PEER" conns 2000 127.0.0.1 $SRV)
for tool in wirefs socat; do
	log "forking relay, $tool"
	PORT=$((PORT + 1))
	if [ $tool = wirefs ]; then
		nsenter --net=/run/netns/$NS_LO -- "$W" splice -q --both --fork tcp/127.0.0.1:$PORT:: tcp/127.0.0.1:$SRV &
	else
		nsenter --net=/run/netns/$NS_LO -- socat TCP-LISTEN:$PORT,bind=127.0.0.1,reuseaddr,fork TCP:127.0.0.1:$SRV &
	fi
	rp=$!
	CONNS[$tool]=$(in_ns $NS_LO "$PEER" conns 2000 127.0.0.1 $PORT)
	kill -TERM $rp; wait $rp 2>/dev/null || true
done
fi

# Pacing, measured at the receiver: 3 s of data at each rate.
declare -A PACED
if run pacing; then
for rate in 1 10 100 500; do
	log "pacing ${rate}mbit"
	head -c $((rate * 1000000 * 3 / 8)) "$F" >"$OUT/paced"
	set -- $(xfer $NS_LO $NS_LO 127.0.0.1 "$W" splice -q --rate ${rate}mbit "$OUT/paced" tcp/@HOST:@PORT)
	PACED[$rate]=$(awk -v b="$1" -v s="$2" 'BEGIN {printf "%.3f", b*8/s/1e6}')
done
log "schedule 4,16ms"
head -c $((32 << 20)) "$F" >"$OUT/paced"
set -- $(xfer $NS_LO $NS_LO 127.0.0.1 "$W" splice -q --schedule 4,16ms --block 64k "$OUT/paced" tcp/@HOST:@PORT)
SCHED=$(awk -v b="$1" -v s="$2" 'BEGIN {printf "%.1f", b*8/s/1e6}')
fi
rm -f "$OUT/paced" "$PAR"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a/b}'; }
{
	if run file; then
	echo "| setup | peer | Mbit/s | CPU s/GiB | CPU vs socat | CPU vs C sendfile |"
	echo "|---|---|---:|---:|---:|---:|"
	for setup in loopback veth; do
		for p in $PEERS; do
			echo "| $setup | $p | ${MBIT[$setup,$p]} | ${CPU[$setup,$p]} | $(ratio "${CPU[$setup,$p]}" "${CPU[$setup,socat]}") | $(ratio "${CPU[$setup,$p]}" "${CPU[$setup,c-sendfile]}") |"
		done
	done
	echo
	fi
	if run parallel; then
	echo "| parallel on 1 Gbit/s | wirefs aggregate Mbit/s | wirefs Jain | C rw aggregate Mbit/s | C rw Jain |"
	echo "|---|---:|---:|---:|---:|"
	for n in 1 2 4; do
		echo "| $n | ${AGG[wirefs,$n]} | ${JAIN[wirefs,$n]} | ${AGG[c-rw,$n]} | ${JAIN[c-rw,$n]} |"
	done
	echo
	fi
	if run relay; then
	echo "| relay, loopback | Mbit/s | relay CPU s/GiB |"
	echo "|---|---:|---:|"
	for tool in wirefs socat; do echo "| $tool | ${RMBIT[$tool]} | ${RCPU[$tool]} |"; done
	echo
	fi
	if run split; then
	echo "| split to 3, loopback | Mbit/s per sink | CPU s/GiB of source |"
	echo "|---|---:|---:|"
	for tool in wirefs tee; do echo "| $tool | ${SMBIT[$tool]} | ${SCPU[$tool]} |"; done
	echo
	fi
	if run merge; then
	echo "| merge of 3, loopback | Mbit/s into the sink | CPU s/GiB |"
	echo "|---|---:|---:|"
	for tool in wirefs socat; do echo "| $tool | ${MMBIT[$tool]} | ${MCPU[$tool]} |"; done
	echo
	fi
	if run fork; then
	echo "| forking relay, loopback | requests/s | vs direct |"
	echo "|---|---:|---:|"
	for tool in direct wirefs socat; do echo "| $tool | ${CONNS[$tool]} | $(ratio "${CONNS[$tool]}" "${CONNS[direct]}") |"; done
	echo
	fi
	if run pacing; then
	echo "| --rate | measured Mbit/s | error |"
	echo "|---|---:|---:|"
	for rate in 1 10 100 500; do
		echo "| ${rate}mbit | ${PACED[$rate]} | $(awk -v m="${PACED[$rate]}" -v r=$rate 'BEGIN {printf "%+.1f %%", (m/r-1)*100}') |"
	done
	echo
	echo "--schedule 4,16ms --block 64k (at most 4×64 KiB per 16 ms, 131 Mbit/s): ${SCHED} Mbit/s."
	echo
	fi
	echo "Runs per cell: $RUNS (medians); file $SIZE_MB MiB; $(nproc) CPUs; kernel $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg); wirefs $(git rev-parse --short HEAD)."
} | tee "$OUT/results.md"
