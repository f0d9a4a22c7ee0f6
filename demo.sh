#!/usr/bin/env bash
# Sets up wirefs and shows /net streams on loopback: an HTTP GET with cat,
# a one-shot server, UDP, DNS and the live listing. Self-contained: it
# starts its own local server and cleans up after itself.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
W=$PWD/bin/wirefs
NET=$(mktemp -d /tmp/wirefs-demo.XXXXXX)
WWW=$(mktemp -d /tmp/wirefs-www.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	"$W" umount "$NET" 2>/dev/null || true
	rmdir "$NET" 2>/dev/null || true
	rm -rf "$WWW"
}
trap cleanup EXIT
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
WEB=$(freeport) SRV=$(freeport) UDP=$(freeport)

"$W" mount --cache-dir "$WWW/.cache" "$NET"
echo "hello from a local web server" > "$WWW/hello.txt"
python3 -m http.server "$WEB" --bind 127.0.0.1 --directory "$WWW" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$WEB) 2>/dev/null && break; sleep 0.1; done

step "ls $NET"
ls "$NET"
step "exec 3<>$NET/tcp/localhost:$WEB; printf 'GET /hello.txt HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3"
exec 3<>"$NET/tcp/localhost:$WEB"
printf 'GET /hello.txt HTTP/1.0\r\n\r\n' >&3
cat <&3
exec 3>&-

step "cat $NET/tcp/$SRV > received.txt &   # a server: the first read accepts"
out=$(mktemp)
cat "$NET/tcp/$SRV" > "$out" &
srv=$!
sleep 0.3
step "ls -l $NET/tcp/"
ls -l "$NET/tcp/"
step "echo 'sent through a file' > $NET/tcp/127.0.0.1:$SRV"
echo 'sent through a file' > "$NET/tcp/127.0.0.1:$SRV"
wait "$srv"
step "cat received.txt"
cat "$out"
rm -f "$out"

step "UDP: a reply server on udp/$UDP, queried with socat"
( exec 4<>"$NET/udp/$UDP"; read -r q <&4; echo "you said: $q" >&4 ) &
sleep 0.3
echo ping | socat -t1 - UDP:127.0.0.1:$UDP

step "cat $NET/dns/localhost"
cat "$NET/dns/localhost"

step "cat $NET/tcp/127.0.0.1:1   # nothing listens there"
cat "$NET/tcp/127.0.0.1:1" || true
step "ls -l $NET/http/127.0.0.1:$WEB/   # the web server's files, as files"
ls -l "$NET/http/127.0.0.1:$WEB/"
step "cat $NET/http/127.0.0.1:$WEB/hello.txt   # fetched once, then cached"
cat "$NET/http/127.0.0.1:$WEB/hello.txt"
step "wirefs run -- cat http://127.0.0.1:$WEB/hello.txt   # no mount: the catcher"
"$W" run --cache-dir "$WWW/.cache" -- cat "http://127.0.0.1:$WEB/hello.txt"

step "wirefs umount $NET"
