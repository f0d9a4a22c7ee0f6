"""Readiness of /net files as multiplexing programs see it.

poll.py ROOT CASE PORT... runs one case against echo servers (or other
peers) on 127.0.0.1:PORT, reached as ROOT/tcp/... or ROOT/udp/...; it
prints what it saw and exits non-zero on the first wrong answer.
"""
import asyncio
import errno
import os
import select
import selectors
import socket
import sys
import time

root, case, ports = sys.argv[1], sys.argv[2], [int(p) for p in sys.argv[3:]]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def tcp(port, flags=os.O_RDWR):
    return os.open("%s/tcp/127.0.0.1:%d" % (root, port), flags)


# An idle /net file must stay unready at least this long; a file that is
# ready (data written to an echo server) must be reported well within
# the answer wait.
IDLE = 0.3
ANSWER = 10


def selectors_case():
    a, b = tcp(ports[0]), tcp(ports[1])
    sel = selectors.DefaultSelector()
    sel.register(a, selectors.EVENT_READ, "a")
    sel.register(b, selectors.EVENT_READ, "b")
    ready = [k.data for k, _ in sel.select(timeout=IDLE)]
    if ready:
        fail("idle files reported ready: %s" % ready)
    for i in range(20):
        f, name = (b, "b") if i % 2 else (a, "a")
        os.write(f, b"ping %d\n" % i)
        ready = [k.data for k, _ in sel.select(timeout=ANSWER)]
        if ready != [name]:
            fail("after a write to %s, select said %s" % (name, ready))
        got = os.read(f, 100)
        if got != b"ping %d\n" % i:
            fail("read %r" % got)
    print("selectors: only the ready file woke, 20 times")


def nonblock_case():
    a = tcp(ports[0], os.O_RDWR | os.O_NONBLOCK)
    t = time.monotonic()
    try:
        os.read(a, 10)
        fail("O_NONBLOCK read of an idle connection returned")
    except BlockingIOError:
        pass
    ms = (time.monotonic() - t) * 1000
    os.write(a, b"x\n")
    select.select([a], [], [], ANSWER)
    if os.read(a, 10) != b"x\n":
        fail("echo lost")
    # fcntl after open: flags change per descriptor.
    b = tcp(ports[0])
    os.set_blocking(b, False)
    try:
        os.read(b, 10)
        fail("read after fcntl(O_NONBLOCK) blocked and returned")
    except BlockingIOError:
        pass
    print("nonblock: EAGAIN in %.2f ms" % ms)


def epollet_case():
    a = tcp(ports[0], os.O_RDWR | os.O_NONBLOCK)
    ep = select.epoll()
    ep.register(a, select.EPOLLIN | select.EPOLLET)
    got = b""
    for i in range(30):
        os.write(a, b"line %d\n" % i)
        if not ep.poll(ANSWER):
            fail("edge-triggered epoll missed line %d" % i)
        while True:  # drain in small reads until EAGAIN, as ET asks
            try:
                d = os.read(a, 3)
            except BlockingIOError:
                break
            if not d:
                fail("EOF")
            got += d
    want = b"".join(b"line %d\n" % i for i in range(30))
    if got != want:
        fail("got %r" % got)
    print("epollet: 30 edges")


def asyncio_case():
    async def talk(fd, tag, n):
        loop = asyncio.get_running_loop()
        os.set_blocking(fd, False)
        buf = b""
        for i in range(n):
            os.write(fd, b"%s %d\n" % (tag, i))
            want = b"%s %d\n" % (tag, i)
            while not buf.startswith(want):
                readable = loop.create_future()
                loop.add_reader(fd, readable.set_result, None)
                try:
                    await asyncio.wait_for(readable, ANSWER)
                finally:
                    loop.remove_reader(fd)
                try:
                    buf += os.read(fd, 100)
                except BlockingIOError:
                    pass
            buf = buf[len(want):]
        return n

    async def main():
        a, b = tcp(ports[0]), tcp(ports[1])
        return await asyncio.gather(talk(a, b"a", 25), talk(b, b"b", 25))

    print("asyncio: %s round trips" % asyncio.run(main()))


def server_case():
    # A server file is ready when a client waits to be accepted.
    srv = os.open("%s/tcp/%d" % (root, ports[0]), os.O_RDWR)
    r, _, _ = select.select([srv], [], [], IDLE)
    if r:
        fail("server file ready with no client")
    c = socket.create_connection(("127.0.0.1", ports[0]))
    r, _, _ = select.select([srv], [], [], ANSWER)
    if r != [srv]:
        fail("server file not ready with a client waiting")
    c.sendall(b"hello\n")
    if os.read(srv, 100) != b"hello\n":
        fail("server read")
    c.close()
    r, _, _ = select.select([srv], [], [], ANSWER)
    if r != [srv] or os.read(srv, 100) != b"":
        fail("client's close: not readable as EOF")
    print("server: accept and EOF wake select")


def hangup_case():
    # A greet peer writes one line and shuts its side: readable, then EOF.
    a = tcp(ports[0])
    p = select.poll()
    p.register(a, select.POLLIN)
    if not p.poll(ANSWER * 1000):
        fail("greeting not reported")
    line = os.read(a, 100)
    if not line.endswith(b"\n"):
        fail("greeting %r" % line)
    ev = p.poll(ANSWER * 1000)
    if not ev or os.read(a, 100) != b"":
        fail("peer's shutdown not reported as readable EOF: %s" % ev)
    print("hangup: %s" % ev)


def udp_case():
    u = os.open("%s/udp/127.0.0.1:%d" % (root, ports[0]), os.O_RDWR)
    r, _, _ = select.select([u], [], [], IDLE)
    if r:
        fail("idle UDP file ready")
    _, w, _ = select.select([], [u], [], ANSWER)
    if w != [u]:
        fail("UDP file not writable")
    os.write(u, b"dgram")
    r, _, _ = select.select([u], [], [], ANSWER)
    if r != [u]:
        fail("UDP reply not reported")
    # A short read leaves the rest of the record: still readable.
    first = os.read(u, 3)
    r, _, _ = select.select([u], [], [], 0)
    if r != [u] or first + os.read(u, 100) != b"echo:dgram":
        fail("the rest of a record is not reported readable")
    print("udp: ok")


{
    "selectors": selectors_case,
    "nonblock": nonblock_case,
    "epollet": epollet_case,
    "asyncio": asyncio_case,
    "server": server_case,
    "hangup": hangup_case,
    "udp": udp_case,
}[case]()
