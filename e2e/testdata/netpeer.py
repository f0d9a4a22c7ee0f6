#!/usr/bin/python3
"""Network peer for the wirefs end-to-end tests.

It stands on the far side of the mount: a plain-socket server or peer that
the programs under the mount talk to. It only ever binds loopback addresses
(127.0.0.0/8, ::1) and only sends to addresses the test names.

Every event is one JSON line on stdout; the first is {"event": "ready"}.

  netpeer.py tcp-serve HOST PORT MODE
      Accept clients forever, each in a thread. MODE:
        greet  send "PEERHOST PEERPORT\\n", shut down writing, then read
               until EOF
        sink   read until EOF
        echo   send back everything read, until EOF
      When a client is done: {"event": "conn", "peer": [h, p], "data": s}.

  netpeer.py udp-peer HOST PORT [echo]
      Bind a UDP socket. Every datagram received is logged as
      {"event": "dgram", "peer": [h, p], "data": s}; with "echo" it is
      answered with "echo:" + data, unless it starts with "noreply".
      Lines on stdin "send HOST PORT TEXT" send TEXT (the rest of the line,
      with "\\n" escapes) as one datagram.
"""
import json
import socket
import sys
import threading

lock = threading.Lock()


def log(**kw):
    with lock:
        sys.stdout.write(json.dumps(kw) + "\n")
        sys.stdout.flush()


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def check_loopback(host):
    if host == "::1" or host.startswith("127."):
        return
    sys.exit("netpeer: refusing non-loopback address %r" % host)


def tcp_serve(host, port, mode):
    check_loopback(host)
    s = socket.socket(family(host), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(1024)
    log(event="ready")
    while True:
        c, addr = s.accept()
        threading.Thread(target=tcp_handle, args=(c, addr, mode), daemon=True).start()


def tcp_handle(c, addr, mode):
    data = b""
    err = ""
    try:
        if mode == "greet":
            c.sendall(("%s %d\n" % (addr[0], addr[1])).encode())
            c.shutdown(socket.SHUT_WR)
        while True:
            b = c.recv(65536)
            if not b:
                break
            data += b
            if mode == "echo":
                c.sendall(b)
    except OSError as e:
        err = str(e)
    c.close()
    log(event="conn", peer=[addr[0], addr[1]], data=data.decode(errors="replace"), err=err)


def udp_peer(host, port, echo):
    check_loopback(host)
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    s.bind((host, port))
    log(event="ready", port=s.getsockname()[1])

    def recv():
        while True:
            data, addr = s.recvfrom(65536)
            log(event="dgram", peer=[addr[0], addr[1]], data=data.decode(errors="replace"))
            if echo and not data.startswith(b"noreply"):
                s.sendto(b"echo:" + data, addr)

    threading.Thread(target=recv, daemon=True).start()
    for line in sys.stdin:
        parts = line.rstrip("\n").split(" ", 3)
        if len(parts) == 4 and parts[0] == "send":
            check_loopback(parts[1])
            text = parts[3].replace("\\n", "\n")
            # Logged before sending so that it precedes any answer.
            log(event="sent")
            s.sendto(text.encode(), (parts[1], int(parts[2])))


def main():
    cmd = sys.argv[1]
    if cmd == "tcp-serve":
        tcp_serve(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif cmd == "udp-peer":
        udp_peer(sys.argv[2], int(sys.argv[3]), len(sys.argv) > 4 and sys.argv[4] == "echo")
    else:
        sys.exit("netpeer: unknown command %r" % cmd)


if __name__ == "__main__":
    main()
