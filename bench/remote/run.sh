#!/usr/bin/env bash
# wirefs remote files against sshfs, rclone mount and httpdirfs (issue 13):
# the same file operations through wirefs sftp (OpenSSH sshd), ftp
# (vsftpd), http (nginx autoindex) and 9p (diod), and through the peers of
# each protocol, in the same run, at 0, 10 and 50 ms round-trip time (a
# user-space delay proxy, _delayproxy/; netem is not available). Prints one
# Markdown table per protocol and latency, and the prefetch cost table.
#
#   bench/remote/run.sh           full run: 3 runs per cell, 0, 10, 50 ms
#   bench/remote/run.sh --quick   1 run, 10 ms, sftp and http, 3 rows
#   BENCH_RUNS=N       runs per cell (median of N; default 3, quick 1)
#   BENCH_RTTS="0 10 50"  round-trip times in whole ms (quick "10")
#   BENCH_PROTOS="sftp ftp http 9p"  only some protocols (quick "sftp http")
#   BENCH_SYSTEMS="wirefs sshfs rclone httpdirfs local base"  only some
#                      systems (each protocol runs those of its peers)
#   BENCH_OPS="lsR grep big small write andrew fgstat"  only some rows
#   BENCH_BASE=REV     also measure wirefs as committed at REV at 0 ms
#                      (column "base"; git archive + build): the same run
#                      says whether a row got slower
#   BENCH_COST=0|1     the prefetch cost table (default 1, quick 0): at the
#                      first non-zero RTT, server requests and bytes on the
#                      wire for a cold ls -lR and grep -r, per useful byte
#   BENCH_WIREFS=PATH  measure this wirefs binary instead of building one
#   BENCH_WIREFS_OPTS=O  mount wirefs (and base) with -o O, e.g.
#                      ftp_connections=32
#   BENCH_BASE_OPTS=O  mount base with -o O instead: with BENCH_BASE=HEAD,
#                      the same binary with two settings side by side
#   BENCH_BASE_RTTS=1  measure base at every RTT, not only at 0 ms
#   BENCH_VERBOSE=1    mount wirefs with -v (its debug log in out/remote/run/)
#   BENCH_TIMEOUT=S    bound on one timed command (default 30 s); a cell
#                      that hits it shows "timeout" (it took longer)
#
# Rows (cold: a fresh mount with an empty cache; warm: the same command
# right after, on the same mount): ls -lR and grep -r of a 4000-file tree
# (40 directories x 100 text files of 1-8 KiB, and a few nested levels),
# cat of a 64 MiB file, small-file copy-out (cp -r of 10 of the tree's
# directories, 1000 files, to local disk), write of 64 MiB (not http), and
# an Andrew-like build (copy a C project in, find -ls, read all, make -j2;
# on read-only http the build goes to local disk).
# fgstat: the latency of a foreground stat while prefetch runs (issue 13:
# "a foreground read always jumps ahead of prefetch traffic"): on a
# fresh mount, FG_N stats of files nobody has looked at, one after
# another, each timed alone; once on an idle mount, once on a mount where
# a cold grep -r of the tree runs (started first, the stats begin when it
# has read its second file: wirefs's prefetch is running then). The files
# are fgstat/fgsNN/f.txt, one per directory, outside the tree: the grep
# never lists them and no listing shows them (rclone and httpdirfs look a
# name up by listing its directory). The directories are looked up,
# untimed, before. The server's log says whether each stat reached it (a
# stat the cache answered is no measurement). wirefs also without
# prefetch (wirefs-nopf: -o prefetch_requests=0), the reference.
#
# Cells are seconds (lower is better); "peer/wirefs" > 1 means wirefs is
# faster. Before the clock starts, every system has logged in (an untimed
# stat of the served directory: sshfs connects at mount, the others at
# first use). The server's files stay in the machine's page cache (we do
# not drop it: the machine is shared), so "cold" means a cold client.
#
# Needs root (vsftpd chroots, diod, FUSE mounts), go, cc, make, sshd,
# vsftpd, nginx, sshfs, rclone, httpdirfs, fusermount3, unshare; diod for
# the 9p rows. Everything goes to bench/out/remote/; every server, proxy
# and mount it starts is stopped on exit, also on failure or Ctrl-C. The
# script runs in a mount namespace of its own (unshare -m): its FUSE
# mounts are invisible to every other process and cannot outlive it.
set -euo pipefail

SELF=$(readlink -f "$0")
cd "$(dirname "$SELF")/../.."
ROOT=$PWD
OUT=$ROOT/bench/out/remote
QUICK=${BENCH_QUICK:-0}
for a in "$@"; do
	case $a in
	--quick) QUICK=1 ;;
	-h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$SELF"; exit 0 ;;
	*) echo "run.sh: unknown argument $a" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "run.sh: must run as root (vsftpd, FUSE mounts)" >&2; exit 1; }
for t in go cc make git ssh-keygen sshfs rclone httpdirfs fusermount3 timeout awk ss unshare; do
	command -v $t >/dev/null || { echo "run.sh: $t is missing" >&2; exit 1; }
done
# into a private mount namespace (same pid: exec, no fork): the FUSE
# mounts are invisible to every other process (another session's grep -r
# or find never walks into them) and none can outlive the run
if [ "${REMOTE_SH_NS:-}" != "$$" ]; then
	REMOTE_SH_NS=$$ exec unshare --mount --propagation private "$SELF" "$@"
fi
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
VSFTPD=$(command -v vsftpd || echo /usr/sbin/vsftpd)
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
for t in "$SSHD" "$VSFTPD" "$NGINX"; do [ -x "$t" ] || { echo "run.sh: $t is missing" >&2; exit 1; }; done
id ftp >/dev/null 2>&1 || { echo "run.sh: vsftpd's anonymous user ftp does not exist" >&2; exit 1; }
DIOD=$(command -v diod || echo /usr/sbin/diod)

if [ "$QUICK" = 1 ]; then
	RUNS=${BENCH_RUNS:-1}; RTTS=${BENCH_RTTS:-10}; PROTOS=${BENCH_PROTOS:-sftp http}
	OPS=${BENCH_OPS:-lsR grep big}; COST=${BENCH_COST:-0}
else
	RUNS=${BENCH_RUNS:-3}; RTTS=${BENCH_RTTS:-0 10 50}; PROTOS=${BENCH_PROTOS:-sftp ftp http 9p}
	OPS=${BENCH_OPS:-lsR grep big small write andrew fgstat}; COST=${BENCH_COST:-1}
fi
TMO=${BENCH_TIMEOUT:-30}
SYSTEMS=${BENCH_SYSTEMS:-wirefs sshfs rclone httpdirfs local base}
[ -n "${BENCH_BASE:-}" ] || SYSTEMS=${SYSTEMS//base/}
for r in $RTTS; do [[ $r =~ ^[0-9]+$ ]] || { echo "run.sh: BENCH_RTTS: whole milliseconds" >&2; exit 2; }; done
case " $PROTOS " in *" 9p "*)
	[ -x "$DIOD" ] || { echo "run.sh: diod is missing: no 9p rows" >&2; PROTOS=${PROTOS//9p/}; } ;;
esac
COST_RTT=""
for r in $RTTS; do [ "$r" != 0 ] && { COST_RTT=$r; break; }; done
[ -n "$COST_RTT" ] || COST=0
BIG_MB=64
NDIRS=40 NFILES=100 # the tree: NDIRS x NFILES files of 1-8 KiB, plus nested levels
FG_N=20             # fgstat: stats per mount, one file in each of FG_N directories
PASV_N=256          # passive FTP data ports of each delayed vsftpd: a listener per session (wirefs connects ahead), vsftpd tries 10 random ports before it ends a session

mkdir -p "$OUT"
START=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
log() { printf '[%4ds] %s\n' $(($(date +%s) - START)) "$*" >&2; }

PIDS="" MOUNTS=""
descendants() { local c; for c in $(pgrep -P "$1"); do descendants "$c"; echo "$c"; done; }
cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	for m in $MOUNTS; do
		grep -q " $m fuse" /proc/mounts && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
	done
	# vsftpd and sshd sessions outlive their listener: end them first
	for p in $PIDS; do
		for c in $(descendants "$p"); do kill -KILL "$c" 2>/dev/null; done
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$OUT/cache" "$OUT/mnt" "$OUT/srv/w" "$OUT/localw" # run/ keeps the logs
	[ $rc = 0 ] || log "failed (exit $rc); cleaned up"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- build ----
log "building wirefs and the delay proxy"
if [ -n "${BENCH_WIREFS:-}" ]; then
	cp "$BENCH_WIREFS" "$OUT/wirefs"
	TREE="the binary $BENCH_WIREFS"
else
	go build -o "$OUT/wirefs" ./cmd/wirefs
	TREE="the working tree"
	if git rev-parse --git-dir >/dev/null 2>&1; then
		TREE="commit $(git rev-parse --short HEAD)"
		[ -z "$(git status --porcelain -- cmd internal go.mod go.sum)" ] || TREE="$TREE plus uncommitted changes"
	fi
fi
BASE_REV=""
if [ -n "${BENCH_BASE:-}" ]; then
	BASE_REV=$(git rev-parse --short --verify "$BENCH_BASE^{commit}")
	rm -rf "$OUT/basesrc"; mkdir -p "$OUT/basesrc"
	git archive "$BASE_REV" | tar -x -C "$OUT/basesrc"
	(cd "$OUT/basesrc" && go build -o "$OUT/wirefs-base" ./cmd/wirefs)
	rm -rf "$OUT/basesrc"
fi
go build -o "$OUT/delayproxy" ./bench/remote/_delayproxy
WIREFS=$OUT/wirefs

# ---- the data the servers export (kept between runs) ----
SRV=$OUT/srv
if [ ! -e "$SRV/.complete-$NDIRS-$NFILES-$BIG_MB" ]; then
	log "making the served tree ($NDIRS x $NFILES files, $BIG_MB MiB file, a C project)"
	rm -rf "$SRV"
	mkdir -p "$SRV/tree"
	# 1-8 KiB text files; about one in ten mentions TODO
	awk -v nd=$NDIRS -v nf=$NFILES -v top="$SRV/tree" 'BEGIN {
		srand(42)
		split("alpha beta gamma delta wire file cache proxy server client kernel fuse read write", W, " ")
		for (d = 0; d < nd; d++) {
			dir = sprintf("%s/d%02d", top, d); system("mkdir -p " dir)
			for (f = 0; f < nf; f++) {
				name = sprintf("%s/f%03d.txt", dir, f); size = 1024 + int(rand() * 7168); n = 0
				while (n < size) { line = W[1 + int(rand() * 14)] " " W[1 + int(rand() * 14)] " " int(rand() * 1e6); if (rand() < 0.002) line = line " TODO"; print line > name; n += length(line) + 1 }
				close(name)
			}
		}
		# a few nested levels
		for (d = 0; d < 4; d++) {
			dir = top "/deep"; for (l = 0; l <= d; l++) dir = dir "/l" l
			system("mkdir -p " dir)
			for (f = 0; f < 5; f++) { name = sprintf("%s/n%d.txt", dir, f); print "nested " d " " f " TODO" > name; close(name) }
		}
	}'
	head -c $((BIG_MB << 20)) /dev/urandom >"$SRV/big.bin"
	# the Andrew tree: a C project of 20 files and 5 dirs x 20 text files
	A=$SRV/andrew
	mkdir -p "$A/proj"
	for i in $(seq -w 1 18); do
		printf '#include "proj.h"\nint f%s(int x) {\n\tint s = 0;\n\tfor (int i = 0; i < x; i++)\n\t\ts += i * %d %% 7;\n\treturn s;\n}\n' "$i" "$((10#$i))" >"$A/proj/f$i.c"
	done
	{
		echo '#ifndef PROJ_H'; echo '#define PROJ_H'
		for i in $(seq -w 1 18); do echo "int f$i(int);"; done
		echo '#endif'
	} >"$A/proj/proj.h"
	{
		echo '#include <stdio.h>'; echo '#include "proj.h"'; echo 'int main(void) {'; echo '	int s = 0;'
		for i in $(seq -w 1 18); do echo "	s += f$i(100);"; done
		echo '	printf("%d\n", s);'; echo '	return 0;'; echo '}'
	} >"$A/proj/main.c"
	for d in 1 2 3 4 5; do
		mkdir -p "$A/doc$d"
		for f in $(seq -w 1 20); do head -c $((1000 + 97 * 10#$f)) "$SRV/tree/d0$d/f0$f.txt" >"$A/doc$d/t$f.txt"; done
	done
	touch "$SRV/.complete-$NDIRS-$NFILES-$BIG_MB"
fi
# fgstat's files, outside the tree (kept between runs too)
for ((i = 0; i < FG_N; i++)); do
	f=$(printf '%s/fgstat/fgs%02d/f.txt' "$SRV" $i)
	[ -e "$f" ] || { mkdir -p "${f%/*}"; echo "fgstat $i" >"$f"; }
done
# SRC: where the sources are (the build may run in another directory,
# e.g. a local one for a read-only http tree)
printf '%s\n' 'SRC ?= .' 'vpath %.c $(SRC)' 'vpath %.h $(SRC)' \
	'OBJ = $(patsubst $(SRC)/%.c,%.o,$(wildcard $(SRC)/*.c))' 'CFLAGS = -O1 -I$(SRC)' \
	'prog: $(OBJ)' '	$(CC) -o $@ $(OBJ)' '%.o: %.c proj.h' '	$(CC) $(CFLAGS) -c -o $@ $<' >"$SRV/andrew/proj/Makefile"
# anonymous vsftpd: the root owned by root and not writable by ftp,
# everything below owned by ftp; w/ is where the writes go
chown root:root "$SRV"; chmod 0755 "$SRV"
mkdir -p "$SRV/w"; chmod 0777 "$SRV/w"
chown -R ftp:ftp "$SRV"/*
for d in "$OUT" "$ROOT/bench/out" "$ROOT/bench" "$ROOT" "$(dirname "$ROOT")"; do chmod o+x "$d"; done

# ---- ports ----
# take_port VAR, take_range VAR N: a free port (N consecutive ones) into
# VAR, never one handed out before in this run; below the ephemeral range
# (32768-60999), where other processes' connections could take it between
# the check and the bind
USED_PORTS=" "
port_free() { # PORT
	case "$USED_PORTS" in *" $1 "*) return 1 ;; esac
	! ss -Htan | awk '{ print $4 }' | grep -q ":$1\$"
}
take_range() {
	local p i ok
	while :; do
		p=$((20000 + RANDOM % 12000)); ok=1
		for ((i = 0; i < $2; i++)); do port_free $((p + i)) || { ok=0; break; }; done
		if [ $ok = 1 ]; then
			for ((i = 0; i < $2; i++)); do USED_PORTS="$USED_PORTS$((p + i)) "; done
			printf -v "$1" '%s' "$p"
			return
		fi
	done
}
take_port() { take_range "$1" 1; }
# Per RTT, the ports a client uses: at 0 ms the servers' own, otherwise
# those of the proxy of that RTT. S0, H0, N0: sshd, nginx, diod.
declare -A PS PH PF P9 PASV
take_port S0; take_port H0; take_port N0
for r in $RTTS; do
	if [ "$r" = 0 ]; then
		PS[0]=$S0 PH[0]=$H0 P9[0]=$N0
		take_port port; PF[0]=$port
	else
		for v in PS PH PF P9; do take_port port; eval "$v[$r]=$port"; done
		take_range port $PASV_N; PASV[$r]=$port
	fi
done

wait_port() { # HOST PORT WHAT LOG
	for _ in $(seq 200); do
		(exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "run.sh: $3 does not listen on $1:$2; see $4" >&2; tail -20 "$4" >&2; exit 1
}

RUN=$OUT/run # configs, keys, logs of this run
rm -rf "$RUN"; mkdir -p "$RUN" "$OUT/mnt" "$OUT/cache"
HOMED=$RUN/home
mkdir -p "$HOMED/.ssh"; chmod 700 "$HOMED" "$HOMED/.ssh"

# ---- sshd ----
log "starting sshd, vsftpd, nginx, diod and the delay proxies"
mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$RUN/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$HOMED/.ssh/id_ed25519"
cp "$HOMED/.ssh/id_ed25519.pub" "$RUN/authorized_keys"
# sftp-server -l VERBOSE logs every open and opendir (to its stderr,
# which the user's shell sends to a file): the cost table's count of SFTP
# requests
SFTP_SERVER=""
for f in /usr/lib/openssh/sftp-server /usr/lib/sftp-server /usr/libexec/sftp-server; do
	[ -x "$f" ] && { SFTP_SERVER=$f; break; }
done
[ -n "$SFTP_SERVER" ] || { echo "run.sh: OpenSSH's sftp-server is missing" >&2; exit 1; }
# sshd starts each SFTP session's sftp-server through root's shell, and
# bash then reads ~/.bashrc: this machine's (pyenv init) took 130 ms per
# session, and 4 sessions started at once 0.6 s. A server's session
# starts in a few ms elsewhere, so the sessions get an empty HOME.
mkdir -p "$RUN/serverhome"
cat >"$RUN/sshd_config" <<EOF
ListenAddress 127.0.0.1:$S0
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
Subsystem sftp $SFTP_SERVER -e -l VERBOSE 2>>$RUN/sftp-server.log
SetEnv HOME=$RUN/serverhome
LogLevel ERROR
MaxStartups 100
MaxSessions 100
EOF
"$SSHD" -D -e -f "$RUN/sshd_config" 2>"$RUN/sshd.log" &
PIDS="$PIDS $!"
{
	printf '[127.0.0.1]:%s' "$S0"
	for r in $RTTS; do printf ',[127.0.0.1]:%s' "${PS[$r]}"; done
	echo " $(cut -d' ' -f1-2 "$RUN/host_key.pub")"
} >"$HOMED/.ssh/known_hosts"
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

# ---- vsftpd: one direct instance, one behind each delay proxy ----
# Behind a proxy, passive data connections must be delayed too: that
# instance listens on 127.0.0.2 (still loopback) with a passive port range
# of its own and announces 127.0.0.1 (pasv_address); the proxy listens on
# 127.0.0.1 at the same ports and forwards each to 127.0.0.2. Every FTP
# command is logged (the cost table counts them).
mkdir -p "$RUN/empty"
vsftpd_conf() { # ADDR PORT LOG EXTRA
	cat <<EOF
listen=YES
listen_address=$1
listen_port=$2
background=NO
seccomp_sandbox=NO
secure_chroot_dir=$RUN/empty
xferlog_enable=YES
xferlog_std_format=NO
log_ftp_protocol=YES
syslog_enable=NO
vsftpd_log_file=$3
write_enable=YES
connect_from_port_20=NO
pasv_enable=YES
pasv_addr_resolve=NO
idle_session_timeout=600
data_connection_timeout=600
max_clients=200
max_per_ip=200
anonymous_enable=YES
local_enable=NO
no_anon_password=YES
ftp_username=ftp
anon_root=$SRV
anon_upload_enable=YES
anon_mkdir_write_enable=YES
anon_other_write_enable=YES
anon_umask=022
$4
EOF
}
for r in $RTTS; do
	if [ "$r" = 0 ]; then
		vsftpd_conf 127.0.0.1 "${PF[0]}" "$RUN/vsftpd0.log" "pasv_address=127.0.0.1" >"$RUN/vsftpd0.conf"
	else
		vsftpd_conf 127.0.0.2 "${PF[$r]}" "$RUN/vsftpd$r.log" "pasv_address=127.0.0.1
pasv_min_port=${PASV[$r]}
pasv_max_port=$((PASV[$r] + PASV_N - 1))" >"$RUN/vsftpd$r.conf"
	fi
	"$VSFTPD" "$RUN/vsftpd$r.conf" >"$RUN/vsftpd$r.out" 2>&1 &
	PIDS="$PIDS $!"
done

# ---- nginx ----
# As configured out of the box: GET /dir redirects to /dir/ on nginx's own
# port, which behind a proxy is another origin (issue 13's item 2).
mkdir -p "$RUN/nginx"
cat >"$RUN/nginx/nginx.conf" <<EOF
master_process off;
worker_processes 1;
pid $RUN/nginx/nginx.pid;
error_log $RUN/nginx/error.log error;
events { worker_connections 1024; }
http {
	access_log $RUN/nginx/access.log;
	client_body_temp_path $RUN/nginx/body;
	proxy_temp_path $RUN/nginx/proxy;
	fastcgi_temp_path $RUN/nginx/fastcgi;
	uwsgi_temp_path $RUN/nginx/uwsgi;
	scgi_temp_path $RUN/nginx/scgi;
	default_type application/octet-stream;
	sendfile on;
	keepalive_requests 100000;
	server {
		listen 127.0.0.1:$H0;
		root $SRV;
		autoindex on;
	}
}
EOF
"$NGINX" -p "$RUN/nginx" -e "$RUN/nginx/error.log" -c "$RUN/nginx/nginx.conf" -g 'daemon off;' &
PIDS="$PIDS $!"

# ---- diod ----
case " $PROTOS " in *" 9p "*)
	echo "-- empty: the command line says everything" >"$RUN/diod.conf"
	"$DIOD" -f -n -c "$RUN/diod.conf" -L stderr -l "127.0.0.1:$N0" -e "$SRV" 2>"$RUN/diod.log" &
	PIDS="$PIDS $!"
	;;
esac

# ---- the delay proxies: RTT/2 each way on every port ----
declare -A PROXY
for r in $RTTS; do
	[ "$r" = 0 ] && continue
	pairs="127.0.0.1:${PS[$r]}=127.0.0.1:$S0 127.0.0.1:${PH[$r]}=127.0.0.1:$H0 127.0.0.1:${P9[$r]}=127.0.0.1:$N0 127.0.0.1:${PF[$r]}=127.0.0.2:${PF[$r]}"
	for ((i = 0; i < PASV_N; i++)); do pairs="$pairs 127.0.0.1:$((PASV[$r] + i))=127.0.0.2:$((PASV[$r] + i))"; done
	"$OUT/delayproxy" -delay "$((r * 500))us" -ready "$RUN/proxy$r.ready" -stats "$RUN/proxy$r.stats" $pairs 2>"$RUN/proxy$r.log" &
	PIDS="$PIDS $!"
	PROXY[$r]=$!
	for _ in $(seq 100); do [ -e "$RUN/proxy$r.ready" ] && break; sleep 0.05; done
	[ -e "$RUN/proxy$r.ready" ] || { echo "run.sh: the delay proxy did not start" >&2; cat "$RUN/proxy$r.log" >&2; exit 1; }
done
wait_port 127.0.0.1 "$S0" sshd "$RUN/sshd.log"
for r in $RTTS; do
	if [ "$r" = 0 ]; then wait_port 127.0.0.1 "${PF[0]}" vsftpd "$RUN/vsftpd0.out"
	else wait_port 127.0.0.2 "${PF[$r]}" vsftpd "$RUN/vsftpd$r.out"; fi
done
wait_port 127.0.0.1 "$H0" nginx "$RUN/nginx/error.log"
case " $PROTOS " in *" 9p "*) wait_port 127.0.0.1 "$N0" diod "$RUN/diod.log" ;; esac

# ---- rclone ----
export RCLONE_CONFIG=$RUN/rclone.conf
FTPPASS=$(rclone obscure anonymous@)
for r in $RTTS; do
	cat <<EOF
[sftp$r]
type = sftp
host = 127.0.0.1
port = ${PS[$r]}
user = root
key_file = $HOMED/.ssh/id_ed25519
known_hosts_file = $HOMED/.ssh/known_hosts
shell_type = none
md5sum_command = none
sha1sum_command = none

[ftp$r]
type = ftp
host = 127.0.0.1
port = ${PF[$r]}
user = anonymous
pass = $FTPPASS

[http$r]
type = http
url = http://127.0.0.1:${PH[$r]}/

EOF
done >"$RCLONE_CONFIG"
# rclone: --vfs-cache-mode full (reads and writes through an on-disk
# sparse cache, the mode comparable to wirefs's cache) and
# --vfs-write-back 0s (upload as soon as the file is closed).
RCLONE_OPTS="--vfs-cache-mode full --vfs-write-back 0s"

# ---- mounting ----
# mount_sys SYS PROTO RTT [WIREFS-OPTIONS]: mounts SYS fresh (empty cache)
# and sets BASE to the directory that shows the served tree. SYS base is
# wirefs at BENCH_BASE; wirefs-nopf is wirefs without prefetch.
NMOUNT=0
mount_sys() {
	local sys=$1 proto=$2 rtt=$3 wopts=${4:-${BENCH_WIREFS_OPTS:-}} p bin=$WIREFS
	NMOUNT=$((NMOUNT + 1))
	MNT=$OUT/mnt/$sys-$proto
	CACHE=$OUT/cache/$NMOUNT
	rm -rf "$CACHE"; mkdir -p "$MNT" "$CACHE"
	case " $MOUNTS " in *" $MNT "*) ;; *) MOUNTS="$MOUNTS $MNT" ;; esac
	case $proto in
	sftp) p=${PS[$rtt]} ;;
	ftp) p=${PF[$rtt]} ;;
	http) p=${PH[$rtt]} ;;
	9p) p=${P9[$rtt]} ;;
	esac
	local lf=$RUN/$sys-$proto.log
	case $sys in
	wirefs | base | wirefs-nopf)
		if [ "$sys" = base ]; then bin=$OUT/wirefs-base; wopts=${4:-${BENCH_BASE_OPTS:-$wopts}}; fi
		HOME=$HOMED XDG_CONFIG_HOME=$HOMED/.config "$bin" mount --foreground ${BENCH_VERBOSE:+-v} --cache-dir "$CACHE" ${wopts:+-o "$wopts"} "$MNT" 2>>"$lf" &
		case $proto in
		sftp) BASE=$MNT/sftp/root@127.0.0.1:$p$SRV ;;
		ftp) BASE=$MNT/ftp/127.0.0.1:$p ;;
		http) BASE=$MNT/http/127.0.0.1:$p ;;
		9p) BASE=$MNT/9p/127.0.0.1:$p$SRV ;;
		esac ;;
	sshfs)
		sshfs -f -F "$HOMED/.ssh/config" -p "$p" "127.0.0.1:$SRV" "$MNT" 2>>"$lf" &
		BASE=$MNT ;;
	rclone)
		local remote=$proto$rtt: path=""
		[ "$proto" = sftp ] && path=$SRV
		rclone mount "$remote$path" "$MNT" $RCLONE_OPTS --cache-dir "$CACHE" 2>>"$lf" &
		BASE=$MNT ;;
	httpdirfs)
		# --no-range-check: httpdirfs 1.2.5's check wrongly finds that
		# nginx lacks ranges (curl -r gets 206) and the mount dies at the
		# first open without it
		httpdirfs -f --cache --no-range-check --cache-location "$CACHE" "http://127.0.0.1:$p/" "$MNT" >>"$lf" 2>&1 &
		BASE=$MNT ;;
	esac
	DPID=$!
	PIDS="$PIDS $DPID"
	for _ in $(seq 200); do grep -q " $MNT fuse" /proc/mounts && return 0; sleep 0.05; done
	echo "run.sh: $sys did not mount $MNT; see $lf" >&2; tail -20 "$lf" >&2; exit 1
}
umount_sys() {
	if ! fusermount3 -u "$MNT" 2>/dev/null; then
		sleep 1
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
	fi
	for _ in $(seq 100); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
	kill "$DPID" 2>/dev/null || true
	wait "$DPID" 2>/dev/null || true
	rm -rf "$CACHE"
}

# ---- measuring ----
SAMPLES=$OUT/samples.tsv
: >"$SAMPLES"
# timed RTT PROTO ROW SYS RUN CMD...: runs CMD (bounded by TMO) and appends
# "rtt proto row sys run seconds" (seconds "timeout" or "fail" otherwise)
timed() {
	local rtt=$1 proto=$2 row=$3 sys=$4 run=$5 t0 t1 rc v
	shift 5
	t0=$EPOCHREALTIME
	rc=0
	timeout -k 5 "$TMO" "$@" >/dev/null 2>>"$RUN/errors.log" || rc=$?
	t1=$EPOCHREALTIME
	if [ $rc = 124 ] || [ $rc = 137 ]; then v=timeout
	elif [ $rc != 0 ]; then v=fail; echo "$rtt $proto $row $sys: exit $rc: $*" >>"$RUN/errors.log"
	else v=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rtt" "$proto" "$row" "$sys" "$run" "$v" >>"$SAMPLES"
	[ "$v" != fail ] && [ "$v" != timeout ] || log "  $proto $rtt ms $row $sys: $v"
}
# the operations, each a command on the served tree at $1
op_lsR() { ls -lR "$1/tree"; }
op_grep() { grep -r TODO "$1/tree" || [ $? = 1 ]; }
op_big() { cat "$1/big.bin"; }
# small-file copy-out: 10 directories of 100 files to local disk
op_small() { rm -rf "$COPY_OUT" && mkdir -p "$COPY_OUT" && cp -r "$1"/tree/d0[0-9] "$COPY_OUT"/; }
# write: dd, then until the server holds every byte (rclone uploads
# after close; wirefs and sshfs before close returns)
op_write() { # BASE SERVERFILE
	dd if=/dev/zero of="$1" bs=1M count=$BIG_MB status=none || return 1
	until_stored "$2"
}
# until_stored SERVERFILE: waits until the server's file has all BIG_MB MiB
until_stored() { while [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" != $((BIG_MB << 20)) ]; do sleep 0.02; done; }
# write, paced: one program that produces its output over time (1 MiB,
# then 10 ms of work, 64 times) into `> file`, then until the server holds
# every byte: what is left to upload at its close
op_write_paced() { # BASE SERVERFILE
	/usr/bin/python3 -c 'import sys, time
for _ in range(int(sys.argv[1])):
    sys.stdout.buffer.write(bytes(1 << 20)); sys.stdout.flush(); time.sleep(0.01)' "$BIG_MB" >"$1" || return 1
	until_stored "$2"
}
# copy-in: cp -r, then until the server holds every file under its name
# with every byte, as for write (rclone uploads after each close; wirefs
# and sshfs before it returns): the time the copy takes to be on the server
a_copy() { # DESTINATION SERVERDESTINATION
	cp -r "$SRV/andrew" "$1" || return 1
	local want
	want=$(tree_sizes "$SRV/andrew")
	until [ "$(tree_sizes "$2")" = "$want" ]; do sleep 0.02; done
}
# (wirefs's empty spares, temporaries opened ahead, are not the copy's)
tree_sizes() { (cd "$1" 2>/dev/null && find . -type f ! -name '.wirefs-spare-*' -printf '%p %s\n' | sort); }
a_scan() { find "$1" -ls; }
a_read() { find "$1" -type f -exec cat {} +; }
a_make() { make -s -j2 -C "$1/proj" prog; }
# make splits vpath on ':', and wirefs paths hold HOST:PORT: build through a
# symbolic link without the colon
a_make_out() { rm -rf "$2" "$2.src" && mkdir -p "$2" && ln -s "$1/proj" "$2.src" && make -s -j2 -C "$2" -f "$2.src/Makefile" SRC="$2.src" prog; }
COPY_OUT=$OUT/localw/copy
export -f op_lsR op_grep op_big op_small op_write op_write_paced until_stored a_copy tree_sizes a_scan a_read a_make a_make_out
export BIG_MB SRV COPY_OUT

# connect: untimed, a stat of the served directory, so that every system
# has logged in before the clock starts (sshfs does at mount; wirefs and
# rclone at first use): cold rows measure an empty cache, not the login
connect() { timeout -k 5 "$TMO" stat "$BASE" >/dev/null 2>>"$RUN/errors.log" || true; }
# ---- fgstat: foreground stat latency, idle and during a prefetch ----
FGSTAT=$OUT/fgstat.tsv
: >"$FGSTAT"
# fg_log PROTO RTT: the server's log that names every path it is asked
# about (sftp-server -l VERBOSE: lstat, stat, opendir; nginx: every
# request; vsftpd: every command); none for diod
fg_log() {
	case $1 in
	sftp) echo "$RUN/sftp-server.log" ;;
	http) echo "$RUN/nginx/access.log" ;;
	ftp) echo "$RUN/vsftpd$2.log" ;;
	*) echo "" ;;
	esac
}
# fg_times PATH...: the milliseconds each stat takes, one after another
# (one process: no fork or exec in the clock), "fail" for one that failed
fg_times() {
	/usr/bin/python3 -c '
import os, sys, time
for p in sys.argv[1:]:
    t = time.perf_counter()
    try:
        os.stat(p)
        print("%.3f" % ((time.perf_counter() - t) * 1000))
    except OSError:
        print("fail")
' "$@"
}
# fgstat_phase RTT PROTO SYS RUN PHASE [WIREFS-OPTIONS]: one fresh mount,
# FG_N timed stats (PHASE idle: alone; grep: during a cold grep -r of the
# tree); appends "rtt proto sys run phase ms seen running cpu" per stat:
# seen 1 when the server's log names the stat's directory afterwards (-
# when the server keeps no log), running 1 when the grep was still
# running after the last stat, cpu the milliseconds of CPU the client's
# process spent during the stats (its children not counted: sshfs's ssh)
fgstat_phase() {
	local rtt=$1 proto=$2 sys=$3 run=$4 phase=$5 i gpid="" running=- log off=0 lat seen
	local paths=() dirs=() out=$RUN/fgstat.grep
	mount_sys "$sys" "$proto" "$rtt" "${6:-${BENCH_WIREFS_OPTS:-}}"
	connect
	for ((i = 0; i < FG_N; i++)); do dirs+=("$(printf '%s/fgstat/fgs%02d' "$BASE" $i)"); paths+=("${dirs[i]}/f.txt"); done
	# the directories, untimed and without listing them: each timed
	# stat is then one name the client has never seen
	timeout -k 5 "$TMO" stat "${dirs[@]}" >/dev/null 2>>"$RUN/errors.log" || true
	if [ "$phase" = grep ]; then
		: >"$out"
		timeout -k 5 "$TMO" grep --line-buffered -rc TODO "$BASE/tree" >"$out" 2>>"$RUN/errors.log" &
		gpid=$!
		PIDS="$PIDS $gpid"
		# started: the grep has read two files (it prints a count per
		# file), so its first directory's prefetch is under way
		for _ in $(seq $((TMO * 100))); do
			[ "$(wc -l <"$out")" -ge 2 ] && break
			kill -0 "$gpid" 2>/dev/null || break
			sleep 0.01
		done
	fi
	log=$(fg_log "$proto" "$rtt")
	[ -z "$log" ] || off=$(stat -c %s "$log")
	local after=$RUN/fgstat.log # what the server logged during the stats
	local cpu0 cpu
	cpu0=$(proc_cpu "$DPID")
	lat=$(timeout -k 5 "$TMO" bash -c 'fg_times "$@"' _ "${paths[@]}" 2>>"$RUN/errors.log") || true
	cpu=$(($(proc_cpu "$DPID") - cpu0))
	if [ -n "$gpid" ]; then
		running=0
		kill -0 "$gpid" 2>/dev/null && running=1
		kill "$gpid" 2>/dev/null || true
		wait "$gpid" 2>/dev/null || true
		PIDS=${PIDS/ $gpid/}
	fi
	mapfile -t lat <<<"$lat"
	[ -z "$log" ] || tail -c +$((off + 1)) "$log" >"$after"
	for ((i = 0; i < FG_N; i++)); do
		seen=-
		if [ -n "$log" ]; then
			seen=0
			grep -q "$(printf 'fgs%02d' $i)" "$after" && seen=1
		fi
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rtt" "$proto" "$sys" "$run" "$phase" "${lat[i]:-fail}" "$seen" "$running" "$cpu" >>"$FGSTAT"
	done
	umount_sys
}
# proc_cpu PID: the milliseconds of CPU PID has used (user and system)
proc_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print int(($12 + $13) * 1000 / hz) }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# fgstat_sys RTT PROTO SYS RUN: both phases, in another order in each
# run; for wirefs also wirefs-nopf
fgstat_sys() {
	local rtt=$1 proto=$2 sys=$3 run=$4 s phases="idle grep"
	[ $((run % 2)) = 0 ] && phases="grep idle"
	for s in $sys $([ "$sys" = wirefs ] && echo wirefs-nopf); do
		for ph in $phases; do
			if [ "$s" = wirefs-nopf ]; then fgstat_phase "$rtt" "$proto" "$s" "$run" "$ph" "${BENCH_WIREFS_OPTS:+$BENCH_WIREFS_OPTS,}prefetch_requests=0"
			else fgstat_phase "$rtt" "$proto" "$s" "$run" "$ph"; fi
		done
	done
}
export -f fg_times

# bench_sys RTT PROTO SYS RUN: every row for one system, cold rows on a
# fresh mount
bench_sys() {
	local rtt=$1 proto=$2 sys=$3 run=$4 op w
	for op in $OPS; do
		if [ "$op" = fgstat ]; then
			[ "$sys" = local ] || fgstat_sys "$rtt" "$proto" "$sys" "$run"
			continue
		fi
		if [ "$sys" = local ]; then BASE=$SRV; else mount_sys "$sys" "$proto" "$rtt"; connect; fi
		w=w/$sys-$proto-$rtt-$run
		case $op in
		lsR | grep | big | small)
			[ "$sys" = local ] && timed "$rtt" "$proto" "$op.warmup" "$sys" "$run" bash -c "op_$op \"\$1\"" _ "$BASE"
			[ "$sys" = local ] || timed "$rtt" "$proto" "$op.cold" "$sys" "$run" bash -c "op_$op \"\$1\"" _ "$BASE"
			timed "$rtt" "$proto" "$op.warm" "$sys" "$run" bash -c "op_$op \"\$1\"" _ "$BASE" ;;
		write)
			if [ "$proto" != http ]; then
				if [ "$sys" = local ]; then
					mkdir -p "$OUT/localw"
					timed "$rtt" "$proto" write "$sys" "$run" bash -c 'op_write "$1" "$1"' _ "$OUT/localw/big.out"
					timed "$rtt" "$proto" write.paced "$sys" "$run" bash -c 'op_write_paced "$1" "$1"' _ "$OUT/localw/paced.out"
				else
					mkdir -p "$SRV/$w" && chown ftp:ftp "$SRV/$w" && chmod 0777 "$SRV/$w"
					timed "$rtt" "$proto" write "$sys" "$run" bash -c 'op_write "$1" "$2"' _ "$BASE/$w/big.out" "$SRV/$w/big.out"
					timed "$rtt" "$proto" write.paced "$sys" "$run" bash -c 'op_write_paced "$1" "$2"' _ "$BASE/$w/paced.out" "$SRV/$w/paced.out"
				fi
			fi ;;
		andrew)
			if [ "$proto" = http ]; then
				local src=$BASE/andrew out=$OUT/localw/build-$sys
				timed "$rtt" "$proto" a.scan "$sys" "$run" bash -c 'a_scan "$1"' _ "$src"
				timed "$rtt" "$proto" a.read "$sys" "$run" bash -c 'a_read "$1"' _ "$src"
				timed "$rtt" "$proto" a.make "$sys" "$run" bash -c 'a_make_out "$1" "$2"' _ "$src" "$out"
			else
				local dst
				if [ "$sys" = local ]; then dst=$OUT/localw/andrew; rm -rf "$dst"; mkdir -p "$OUT/localw"
				else mkdir -p "$SRV/$w" && chown ftp:ftp "$SRV/$w" && chmod 0777 "$SRV/$w"; dst=$BASE/$w/andrew; fi
				local srvdst=$SRV/$w/andrew
				[ "$sys" = local ] && srvdst=$dst
				timed "$rtt" "$proto" a.copy "$sys" "$run" bash -c 'a_copy "$1" "$2"' _ "$dst" "$srvdst"
				timed "$rtt" "$proto" a.scan "$sys" "$run" bash -c 'a_scan "$1"' _ "$dst"
				timed "$rtt" "$proto" a.read "$sys" "$run" bash -c 'a_read "$1"' _ "$dst"
				timed "$rtt" "$proto" a.make "$sys" "$run" bash -c 'a_make "$1"' _ "$dst"
			fi ;;
		esac
		[ "$sys" = local ] || umount_sys
		rm -rf "${SRV:?}/$w" "$OUT/localw"
	done
}

# systems PROTO [RTT]: the systems measured on PROTO (among SYSTEMS),
# wirefs first; base only at 0 ms (whether a row got slower there)
systems() {
	local all s out=""
	case $1 in
	sftp) all="wirefs base sshfs rclone" ;;
	ftp) all="wirefs base rclone" ;;
	http) all="wirefs base httpdirfs rclone" ;;
	9p) all="wirefs base" ;;
	esac
	[ "${2:-0}" = 0 ] || [ "${BENCH_BASE_RTTS:-0}" = 1 ] || all=${all/base/}
	for s in $all; do case " $SYSTEMS " in *" $s "*) out="$out $s" ;; esac; done
	echo $out
}
for run in $(seq "$RUNS"); do
	for rtt in $RTTS; do
		for proto in $PROTOS; do
			# a different system first in each run, so none always goes first
			set -- $(systems "$proto" "$rtt")
			for ((i = 1; i < run; i++)); do set -- "${@:2}" "$1"; done
			case " $SYSTEMS " in *" local "*) set -- "$@" local ;; esac
			for sys in "$@"; do
				log "run $run/$RUNS, $rtt ms, $proto: $sys"
				bench_sys "$rtt" "$proto" "$sys" "$run"
			done
		done
	done
done

# ---- the prefetch cost: requests and bytes of a cold ls -lR and grep -r ----
# At COST_RTT, once per system: the bytes the proxy carried from the
# server (every port of the protocol), the server's own count of requests
# (nginx: HTTP requests; sshd's internal-sftp: files and directories
# opened; vsftpd: FTP commands; diod: not counted), and the bytes of file
# contents the client's cache holds afterwards (wirefs: its data files;
# rclone: its VFS cache). wirefs-nopf is wirefs with -o
# prefetch_requests=0: the same commands without any prefetch.
COSTS=$OUT/costs.tsv
: >"$COSTS"
proxy_down() { # RTT PROTO: bytes the proxy carried from the server's ports
	local r=$1 f="$RUN/proxy$1.stats" ports
	rm -f "$f"; kill -USR1 "${PROXY[$r]}"
	for _ in $(seq 100); do [ -e "$f" ] && break; sleep 0.01; done
	case $2 in
	sftp) ports=":${PS[$r]}$" ;;
	http) ports=":${PH[$r]}$" ;;
	9p) ports=":${P9[$r]}$" ;;
	ftp) ports=":${PF[$r]}$"; for ((i = 0; i < PASV_N; i++)); do ports="$ports|:$((PASV[$r] + i))$"; done ;;
	esac
	awk -v re="$ports" '$1 ~ re { s += $3 } END { print s + 0 }' "$f"
}
server_requests() { # PROTO RTT
	case $1 in
	http) wc -l <"$RUN/nginx/access.log" ;;
	sftp) grep -cE '(^| )(open|opendir) "' "$RUN/sftp-server.log" || true ;;
	ftp) grep -c 'FTP command:' "$RUN/vsftpd$2.log" || true ;;
	9p) echo - ;;
	esac
}
content_bytes() { # SYS
	case $1 in
	wirefs | wirefs-nopf | base) find "$CACHE" -name '*.data' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }' ;;
	rclone) find "$CACHE" -path '*/vfs/*' -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }' ;;
	*) echo - ;;
	esac
}
TREE_BYTES=$(find "$SRV/tree" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
if [ "$COST" = 1 ]; then
	for proto in $PROTOS; do
		set -- $(systems "$proto" "$COST_RTT")
		case " $* " in *" wirefs "*) set -- "$@" wirefs-nopf ;; esac
		for sys in "$@"; do
			for op in lsR grep; do
				opts=""
				[ "$sys" = wirefs-nopf ] && opts=prefetch_requests=0
				mount_sys "$sys" "$proto" "$COST_RTT" "$opts"
				connect
				log "cost: $COST_RTT ms, $proto $op: $sys"
				r0=$(server_requests "$proto" "$COST_RTT"); b0=$(proxy_down "$COST_RTT" "$proto")
				timed "$COST_RTT" "$proto" "cost.$op" "$sys" 1 bash -c "op_$op \"\$1\"" _ "$BASE"
				# what prefetch still had in flight belongs to the row
				sleep 1
				r1=$(server_requests "$proto" "$COST_RTT"); b1=$(proxy_down "$COST_RTT" "$proto")
				req=-; [ "$r0" = - ] || req=$((r1 - r0))
				printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$proto" "$op" "$sys" "$req" "$((b1 - b0))" "$(content_bytes "$sys")" >>"$COSTS"
				umount_sys
			done
		done
	done
fi

# ---- the tables ----
log "done measuring; writing the tables"
TABLE=$OUT/results.md
{
awk -F'\t' -v rtts="$RTTS" -v protos="$PROTOS" -v base="$BASE_REV" -v baseall="${BENCH_BASE_RTTS:-0}" '
function med(list,   a, n, i, j, t, bad) {
	n = split(list, a, " "); bad = ""
	for (i = 1; i <= n; i++) if (a[i] !~ /^[0-9.]+$/) bad = a[i]
	if (bad != "" ) return bad
	for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4; v[k] = v[k] " " $6 }
function cell(r, p, row, s,   k) { k = r SUBSEP p SUBSEP row SUBSEP s; return (k in v) ? med(v[k]) : "" }
function num(x) { return x ~ /^[0-9.]+$/ }
function fmt(x) { return num(x) ? sprintf("%.2f", x) : x }
function ratio(a, b) { return (num(a) && num(b) && b + 0 > 0) ? sprintf("%.2f", a / b) : "" }
function label(row) {
	if (row == "lsR.cold") return "ls -lR tree, cold"
	if (row == "lsR.warm") return "ls -lR tree, warm"
	if (row == "grep.cold") return "grep -r tree, cold"
	if (row == "grep.warm") return "grep -r tree, warm"
	if (row == "big.cold") return "read 64 MiB, cold"
	if (row == "big.warm") return "read 64 MiB, warm"
	if (row == "small.cold") return "copy out 1000 small files (cp -r), cold"
	if (row == "small.warm") return "copy out 1000 small files (cp -r), warm"
	if (row == "write") return "write 64 MiB (dd bs=1M, until on server)"
	if (row == "write.paced") return "write 64 MiB paced (1 MiB per 10 ms, until on server)"
	if (row == "a.copy") return "Andrew: copy tree in (until on server)"
	if (row == "a.scan") return "Andrew: find -ls"
	if (row == "a.read") return "Andrew: read all"
	if (row == "a.make") return "Andrew: make -j2 (20 C files)"
	return row
}
END {
	nr = split("lsR.cold lsR.warm grep.cold grep.warm big.cold big.warm small.cold small.warm write write.paced a.copy a.scan a.read a.make", R, " ")
	nt = split(rtts, T, " "); np = split(protos, P, " ")
	for (i = 1; i <= nt; i++) for (j = 1; j <= np; j++) {
		p = P[j]
		peers = (p == "sftp") ? "sshfs rclone" : (p == "ftp") ? "rclone" : (p == "http") ? "httpdirfs rclone" : ""
		if (base != "" && (T[i] == 0 || baseall == 1)) peers = "base " peers
		npe = split(peers, E, " ")
		printf "\n### %s, %s ms RTT\n\n| operation (seconds) | wirefs |", p, T[i]
		for (e = 1; e <= npe; e++) printf " %s | %s/wirefs |", E[e], E[e]
		printf " local disk | wirefs/local |\n|---|---:|"
		for (e = 1; e <= npe; e++) printf "---:|---:|"
		printf "---:|---:|\n"
		for (r = 1; r <= nr; r++) {
			w = cell(T[i], p, R[r], "wirefs"); if (w == "") continue
			printf "| %s | %s |", label(R[r]), fmt(w)
			for (e = 1; e <= npe; e++) { x = cell(T[i], p, R[r], E[e]); printf " %s | %s |", fmt(x), ratio(x, w) }
			l = cell(T[i], p, R[r], "local"); if (R[r] ~ /cold$/) l = ""
			printf " %s | %s |\n", fmt(l), ratio(w, l)
		}
	}
}' "$SAMPLES"
if [ -s "$COSTS" ]; then
	echo
	echo "### Prefetch cost, $COST_RTT ms RTT (one cold run each)"
	echo
	echo "Requests: the server's count (nginx: HTTP requests; sftp: files and directories opened; ftp: FTP commands;"
	echo "9p: not counted). Down: bytes from the server on the wire. Contents: file bytes in the client's cache"
	echo "afterwards. ls -lR needs no file contents: its last column is the extra bytes on the wire over wirefs without"
	echo "prefetch (wirefs-nopf). grep -r needs all $TREE_BYTES bytes of the tree's files once (a row that timed out"
	echo "read only part of them: its counts are partial and it has no per-byte figure)."
	echo
	echo "| protocol | command | system | seconds | requests | down (bytes) | contents (bytes) | down per useful byte | down vs wirefs-nopf |"
	echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
	awk -F'\t' -v tree="$TREE_BYTES" -v samples="$SAMPLES" -v rtt="$COST_RTT" '
	BEGIN { while ((getline l < samples) > 0) { split(l, f, "\t"); if (f[1] == rtt && f[3] ~ /^cost\./) secs[f[2] SUBSEP substr(f[3], 6) SUBSEP f[4]] = f[6] } }
	{ row[NR] = $0; if ($3 == "wirefs-nopf") nopf[$1 SUBSEP $2] = $5 }
	END {
		for (i = 1; i <= NR; i++) {
			split(row[i], c, "\t")
			s = secs[c[1] SUBSEP c[2] SUBSEP c[3]]
			useful = (c[2] == "grep" && s ~ /^[0-9.]+$/) ? sprintf("%.2f", c[5] / tree) : "-"
			vs = (c[2] == "lsR" && (c[1] SUBSEP c[2]) in nopf && nopf[c[1] SUBSEP c[2]] > 0) ? sprintf("%+.1f %%", 100 * (c[5] - nopf[c[1] SUBSEP c[2]]) / nopf[c[1] SUBSEP c[2]]) : "-"
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c[1], (c[2] == "lsR") ? "ls -lR" : "grep -r", c[3], secs[c[1] SUBSEP c[2] SUBSEP c[3]], c[4], c[5], c[6], useful, vs
		}
	}' "$COSTS"
fi
if [ -s "$FGSTAT" ]; then
	echo
	echo "### Foreground stat during prefetch (fgstat): milliseconds per stat"
	echo
	echo "$FG_N stats per mount of files in $FG_N directories the client has looked up but not listed, one after another,"
	echo "each on a fresh mount: idle, and during a cold grep -r of the tree (begun first; the stats start once it has"
	echo "read two files). Median and p90 over every stat of $RUNS run(s). Server: the stats whose directory the server's"
	echo "log names afterwards (each one must reach it; 9p: diod keeps no log). Grep: the runs where it was still running"
	echo "after the last stat. CPU: milliseconds of CPU the client's process used during the $FG_N stats, median over runs"
	echo "(sshfs: without its ssh). wirefs-nopf: wirefs with -o prefetch_requests=0 (no prefetch)."
	awk -F'\t' -v rtts="$RTTS" -v protos="$PROTOS" '
	function sorted(list, a,   n, i, j, t) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
		return n
	}
	function q(list, f,   a, n) { n = sorted(list, a); return n ? sprintf("%.1f", a[int(f * (n - 1) + 0.5) + 1]) : "-" }
	function mid(list,   a, n) { n = sorted(list, a); return n ? a[int((n + 1) / 2)] : "-" }
	{
		k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $5
		if ($6 ~ /^[0-9.]+$/) v[k] = v[k] " " $6; else bad[k]++
		n[k]++; if ($7 == 1) seen[k]++; if ($7 == "-") noseen[k] = 1
		if (!((k SUBSEP $4) in runs)) { runs[k SUBSEP $4] = 1; cpu[k] = cpu[k] " " $9; if ($5 == "grep") { nrun[k]++; if ($8 == 1) going[k]++ } }
		has[$1 SUBSEP $2 SUBSEP $3] = 1
	}
	function srv(k) { return (k in noseen) ? "-" : (seen[k] + 0) "/" (n[k] + 0) }
	END {
		nt = split(rtts, T, " "); np = split(protos, P, " "); ns = split("wirefs wirefs-nopf base sshfs rclone httpdirfs", S, " ")
		for (i = 1; i <= nt; i++) {
			printf "\n%s ms RTT:\n\n| protocol | system | idle median | idle p90 | during grep median | during grep p90 | during - idle (median) | server: idle, grep | grep running | CPU ms: idle, grep |\n|---|---|---:|---:|---:|---:|---:|---|---|---|\n", T[i]
			for (j = 1; j <= np; j++) for (s = 1; s <= ns; s++) {
				b = T[i] SUBSEP P[j] SUBSEP S[s]
				if (!(b in has)) continue
				ki = b SUBSEP "idle"; kg = b SUBSEP "grep"
				mi = q(v[ki], 0.5); mg = q(v[kg], 0.5)
				d = (mi != "-" && mg != "-") ? sprintf("%+.1f", mg - mi) : "-"
				f = ""; if (bad[ki] + bad[kg] > 0) f = sprintf(" (%d failed)", bad[ki] + bad[kg])
				printf "| %s | %s | %s | %s | %s | %s | %s%s | %s, %s | %d/%d | %s, %s |\n", P[j], S[s], mi, q(v[ki], 0.9), mg, q(v[kg], 0.9), d, f, srv(ki), srv(kg), going[kg], nrun[kg], mid(cpu[ki]), mid(cpu[kg])
			}
		}
	}' "$FGSTAT"
fi
echo
echo "Seconds, median of $RUNS run(s) per cell; peer/wirefs > 1 means wirefs is faster; wirefs/local <= 1.25 is the"
echo "target on warm rows. Cold: a fresh mount with an empty cache for that row, logged in (an untimed stat of the served"
echo "directory) before the clock starts; the server's own page cache stays warm."
echo "Local disk: the same command on the served directory itself (page cache warm: a warm-up run first); its write is"
echo "dd to a local file without fsync. rclone: mount with $RCLONE_OPTS. sshfs $(sshfs --version 2>&1 | awk '/SSHFS/ { print $3 }'),"
echo "rclone $(rclone version 2>/dev/null | awk 'NR == 1 { print $2 }'), httpdirfs $(httpdirfs --version 2>&1 | awk '/HTTPDirFS/ { print $3 }') with --cache; wirefs with defaults."
[ -z "$BASE_REV" ] || echo "base: wirefs at $BASE_REV (BENCH_BASE)${BENCH_BASE_OPTS:+ with -o $BENCH_BASE_OPTS}, measured in the same run."
[ -z "${BENCH_WIREFS_OPTS:-}" ] || echo "wirefs mounted with -o $BENCH_WIREFS_OPTS."
echo "RTT > 0: bench/remote/_delayproxy, RTT/2 each way on every connection (FTP passive data ports included)."
echo "Runtime: $(($(date +%s) - START)) s; quick=$QUICK; $(nproc) CPUs; kernel $(uname -r); wirefs from $TREE."
echo "Load average (1/5/15 min) at start: $LOAD0; at end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "timeout: the command did not finish within $TMO s (BENCH_TIMEOUT); fail: it failed (see errors.log)."
echo "Per-run samples: bench/out/remote/samples.tsv, costs.tsv, fgstat.tsv; failures: bench/out/remote/errors.log."
} >"$TABLE"
cp "$RUN/errors.log" "$OUT/errors.log" 2>/dev/null || : >"$OUT/errors.log"
cat "$TABLE"
