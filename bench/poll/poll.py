"""Readiness costs through the mount beside a raw socket.

poll.py MOUNT PORT N prints one JSON line with medians in microseconds:
eagain (O_NONBLOCK read of an idle /net file), select_rtt and epollet_rtt
(16 bytes to an echo server and back, waiting in select / edge-triggered
epoll) for the /net file and for a raw socket to the same server.
"""
import json
import os
import select
import socket
import statistics
import sys
import time

mount, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
msg = b"0123456789abcdef"


def median_us(f):
    ts = []
    for _ in range(n):
        t = time.perf_counter_ns()
        f()
        ts.append(time.perf_counter_ns() - t)
    return statistics.median(ts) / 1000


def ends():
    fd = os.open("%s/tcp/127.0.0.1:%d" % (mount, port), os.O_RDWR | os.O_NONBLOCK)
    s = socket.create_connection(("127.0.0.1", port))
    s.setblocking(False)
    return fd, s.detach()


def eagain(fd):
    def f():
        try:
            os.read(fd, 16)
            raise SystemExit("idle read returned")
        except BlockingIOError:
            pass
    return f


def select_rtt(fd):
    def f():
        os.write(fd, msg)
        got = b""
        while len(got) < len(msg):
            select.select([fd], [], [], 10)
            try:
                got += os.read(fd, 64)
            except BlockingIOError:
                pass
    return f


def epollet_rtt(fd):
    ep = select.epoll()
    ep.register(fd, select.EPOLLIN | select.EPOLLET)

    def f():
        os.write(fd, msg)
        got = b""
        while len(got) < len(msg):
            ep.poll(10)
            while True:
                try:
                    d = os.read(fd, 64)
                except BlockingIOError:
                    break
                got += d
    return f


net, raw = ends()
out = {}
for name, mk in [("eagain", eagain), ("select_rtt", select_rtt), ("epollet_rtt", epollet_rtt)]:
    out[name] = {"wirefs": median_us(mk(net)), "socket": median_us(mk(raw))}
print(json.dumps(out))
