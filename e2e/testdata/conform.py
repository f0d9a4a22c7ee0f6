#!/usr/bin/env python3
"""The cases of wirefs's POSIX conformance suite (e2e/conform_test.go).

    conform.py setup ROOT                     make every case's directory in ROOT
    conform.py CASE OPDIR SRVDIR EXPECT RW    run one case
    conform.py stress-append PATH TAG N       N records of 50 bytes, O_APPEND
    conform.py stress-rename DIR N            versions 1..N of DIR/target
    conform.py stress-read DIR N STOPFILE     read DIR/target and DIR/log
    conform.py stress-verify SRVDIR TAGS N V  check the server's copy at the end

OPDIR is the case's directory as programs see it: through the wirefs mount,
or the local directory itself for the reference run. SRVDIR is the same
directory on the server's own disk (the directory the server exports), read
directly, never through the mount. For the reference run both are the same.

EXPECT is what the contract table says of this case on this protocol:
  same      like a local file system, through the mount and on the server
  emulated  like a local file system through the mount; on the server only
            what the protocol can carry (each case says which checks drop)
  ERRNO     refused: every change the case makes fails with ERRNO (EPERM,
            EROFS...) and leaves the server unchanged; reads still behave
            like local
RW is "rw" when the protocol can write at all, "ro" otherwise.

Output: one line "diff: WHAT: got X, want Y" per difference ("mount" is
what programs see, "server" the server's own copy), one line "fact: KIND
NAME RESULT" per errno the test compares with the local reference, and
"ok" at the end when nothing differed. The exit status is 0 unless the
script itself broke.
"""

import errno
import os
import stat
import subprocess
import sys
import time

FAIL = object()  # a value that could not be read (its diff is recorded)
diffs = []
facts = []


def diff(msg):
    diffs.append(msg)


def ename(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def eq(what, got, want):
    if got is FAIL:
        return
    if got != want:
        diff("%s: got %s, want %s" % (what, show(got), show(want)))


def show(v):
    if isinstance(v, bytes) and len(v) > 80:
        return "%d bytes %r...%r" % (len(v), v[:32], v[-32:])
    return repr(v)


def get(what, fn, *a):
    """fn(*a), or FAIL after recording why it failed."""
    try:
        return fn(*a)
    except OSError as e:
        diff("%s: got %s, want success" % (what, ename(e)))
        return FAIL


def attempt(fn, *a):
    """The errno name fn(*a) fails with, or "ok"."""
    try:
        fn(*a)
        return "ok"
    except OSError as e:
        return ename(e)


def read(p):
    with open(p, "rb") as f:
        return f.read()


def write(p, data, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode=0o644):
    fd = os.open(p, flags, mode)
    try:
        n = os.write(fd, data)
        if n != len(data):
            raise OSError(errno.EIO, "short write: %d of %d" % (n, len(data)))
    finally:
        os.close(fd)


def perm(st):
    return "%o" % stat.S_IMODE(st.st_mode)


def field(what, p, name, how=os.stat):
    st = get(what, how, p)
    return FAIL if st is FAIL else getattr(st, name)


def islink(what, p):
    m = field(what, p, "st_mode", os.lstat)
    return FAIL if m is FAIL else stat.S_ISLNK(m)


class Case:
    def __init__(self, op, srv, exp, rw):
        self.op, self.srv, self.exp, self.rw = op, srv, exp, rw == "rw"
        self.same = exp == "same"
        self.emulated = exp == "emulated"
        self.refused = exp not in ("same", "emulated")

    def o(self, *names):
        return os.path.join(self.op, *names)

    def s(self, *names):
        return os.path.join(self.srv, *names)

    def change(self, what, fn, *a):
        """Makes a change (the mount must allow it, or refuse it with the
        refused errno); returns (made, fn's result)."""
        try:
            r = fn(*a)
        except OSError as e:
            if self.refused:
                if ename(e) != self.exp:
                    diff("%s: got %s, want %s (refused)" % (what, ename(e), self.exp))
            else:
                diff("%s: got %s, want success" % (what, ename(e)))
            return False, None
        if self.refused:
            diff("%s: succeeded, want %s (refused)" % (what, self.exp))
            return False, r
        return True, r

    def unchanged(self, before):
        after = snapshot(self.srv)
        for k in sorted(set(before) | set(after)):
            if before.get(k) != after.get(k):
                diff("server: %s changed from %s to %s, want no change" % (k or ".", before.get(k), after.get(k)))


def snapshot(d):
    """The server's tree below d: type, mode, size, mtime of each name."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(d):
        for n in [""] + dirnames + filenames:
            p = os.path.join(dirpath, n) if n else dirpath
            if n == "" and dirpath != d:
                continue
            st = os.lstat(p)
            rel = os.path.relpath(p, d) if p != d else ""
            size = st.st_size if not stat.S_ISDIR(st.st_mode) else 0
            out[rel] = (stat.filemode(st.st_mode), size, int(st.st_mtime), st.st_uid, st.st_gid)
    return out


# ---- setup: every case's starting tree, made on the server's disk before
# the mount first sees it (so no cache can hold an older listing) ----

OLD = 1000000000  # 2001-09-09 01:46:40 UTC, an mtime no test run produces
ATIME = 1012615322  # 2002-02-02 02:02:02 UTC
MTIME = 1046660583  # 2003-03-03 03:03:03 UTC
LONG = "n" * 256
LONGEST = "m" * 255


def setup(root):
    def mk(case, files=(), dirs=()):
        d = os.path.join(root, case)
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o755)
        for n in dirs:
            os.makedirs(os.path.join(d, n), exist_ok=True)
            os.chmod(os.path.join(d, n), 0o755)
        for n, data in files:
            write(os.path.join(d, n), data)
            os.chmod(os.path.join(d, n), 0o644)
        return d

    mk("symlink", [("f", b"target\n")])
    mk("hardlink", [("f", b"data\n")])
    mk("chown", [("f", b"owned\n")])
    mk("inode", [("f", b"0123456789")])
    d = mk("dirmtime", [("d2/x", b"x\n")], ["d1", "d2"])
    os.utime(os.path.join(d, "d1"), (OLD, OLD))
    os.utime(os.path.join(d, "d2"), (OLD, OLD))
    mk("chmod", [("f" + b, b"#!/bin/sh\n") for b in ("1755", "4755", "2755")],
       ["d", "d1755", "d4755", "d2755"])
    mk("utime", [("f", b"times\n")], ["d"])
    mk("unlinked", [("f", b"hello\n")])
    mk("statvfs", [("f", b"x\n")])
    mk("longname")
    mk("errnos", [("f", b"file\n"), ("full/a", b"a\n"), ("full2/b", b"b\n")],
       ["empty", "full", "full/sub", "full2"])
    mk("create")
    mk("append", [("f", b"line1\n")])
    mk("truncate", [("t", b"0123456789")])
    mk("overwrite", [("p", b"abcdefghij")])
    mk("rename", [("a", b"A\n"), ("b", b"B\n"), ("c", b"C\n"), ("fulldir/x", b"x\n")],
       ["dir", "emptydir", "fulldir"])
    mk("mkdir")
    mk("readdir", [("f%d" % i, b"%d\n" % i) for i in range(1, 6)] +
       [("with space", b"s\n"), ("caf\u00e9", b"c\n"), (".hidden", b"h\n")], ["sub"])
    mk("stress", [("target", version(0))])


# ---- the cases ----


def case_symlink(c):
    made, _ = c.change("symlink f l", os.symlink, "f", c.o("l"))
    if not made:
        eq("mount: l exists after a refused symlink", os.path.lexists(c.o("l")), False)
        eq("server: l exists after a refused symlink", os.path.lexists(c.s("l")), False)
        return
    eq("mount: readlink l", get("mount: readlink l", os.readlink, c.o("l")), "f")
    eq("mount: lstat l is a link", islink("mount: lstat l", c.o("l")), True)
    eq("mount: reading through l", get("mount: open l", read, c.o("l")), b"target\n")
    eq("mount: l listed", "l" in os.listdir(c.op), True)
    eq("server: lstat l is a link", islink("server: lstat l", c.s("l")), True)
    eq("server: readlink l", get("server: readlink l", os.readlink, c.s("l")), "f")


def case_hardlink(c):
    made, _ = c.change("ln f h", os.link, c.o("f"), c.o("h"))
    if not made:
        eq("mount: h exists after a refused link", os.path.lexists(c.o("h")), False)
        eq("server: h exists after a refused link", os.path.lexists(c.s("h")), False)
        return
    if c.same:
        ino = field("mount: stat f", c.o("f"), "st_ino")
        eq("mount: inode of h (f's is %s)" % ino, field("mount: stat h", c.o("h"), "st_ino"), ino)
        eq("mount: nlink of f", field("mount: stat f", c.o("f"), "st_nlink"), 2)
        eq("mount: nlink of h", field("mount: stat h", c.o("h"), "st_nlink"), 2)
    # emulated: each name is cached as a file of its own (its own inode
    # number through the mount); the server has one file with two names.
    sino = field("server: stat f", c.s("f"), "st_ino")
    eq("server: inode of h (f's is %s)" % sino, field("server: stat h", c.s("h"), "st_ino"), sino)
    eq("server: nlink of f", field("server: stat f", c.s("f"), "st_nlink"), 2)
    eq("mount: read h", get("mount: read h", read, c.o("h")), b"data\n")
    # A write through one name is the other name's data: the write-back
    # must change the file, not replace it.
    if get("mount: append to h", write, c.o("h"), b"more\n", os.O_WRONLY | os.O_APPEND) is not FAIL:
        eq("mount: read f after a write through h", get("mount: read f", read, c.o("f")), b"data\nmore\n")
        eq("server: f after a write through h", get("server: read f", read, c.s("f")), b"data\nmore\n")
        eq("server: nlink of f after a write through h", field("server: stat f", c.s("f"), "st_nlink"), 2)
        eq("server: inode of h after a write through h", field("server: stat h", c.s("h"), "st_ino"), sino)


def case_chown(c):
    before = os.stat(c.s("f"))
    made, _ = c.change("chown 65534:65534 f", os.chown, c.o("f"), 65534, 65534)
    if not made:
        st = os.stat(c.s("f"))
        eq("server: owner after a refused chown", (st.st_uid, st.st_gid), (before.st_uid, before.st_gid))
        return
    st = get("mount: stat f", os.stat, c.o("f"))
    if st is not FAIL:
        eq("mount: owner of f", (st.st_uid, st.st_gid), (65534, 65534))
    st = os.stat(c.s("f"))
    eq("server: owner of f", (st.st_uid, st.st_gid), (65534, 65534))


def ls_inodes(args):
    r = subprocess.run(["ls", "-i"] + args, capture_output=True, text=True)
    if r.returncode != 0:
        diff("ls -i %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
        return {}
    out = {}
    for line in r.stdout.splitlines():
        ino, _, name = line.strip().partition(" ")
        out[name] = int(ino)
    return out


def stat_c_ino(p):
    r = subprocess.run(["stat", "-c", "%i", p], capture_output=True, text=True)
    if r.returncode != 0:
        diff("stat -c %%i: exit %d: %s" % (r.returncode, r.stderr.strip()))
        return FAIL
    return int(r.stdout)


def case_inode(c):
    f = c.o("f")
    ino = field("mount: stat f", f, "st_ino")
    if ino is FAIL:
        return
    eq("mount: stat -c %i f", stat_c_ino(f), ino)
    eq("mount: ls -i f", ls_inodes([f]).get(f, FAIL), ino)
    eq("mount: ls -i DIR (readdir's d_ino) for f", ls_inodes([c.op]).get("f", "missing"), ino)
    for e in os.scandir(c.op):
        if e.name == "f":
            eq("mount: scandir inode of f", e.inode(), ino)
    sino = os.stat(c.s("f")).st_ino

    def rewrite():
        fd = os.open(f, os.O_WRONLY)
        try:
            os.write(fd, b"ab")
        finally:
            os.close(fd)

    steps = [("chmod 600", os.chmod, f, 0o600), ("truncate to 4", os.truncate, f, 4),
             ("utime", os.utime, f, (MTIME, MTIME)), ("a write", rewrite)]
    for what, fn, *a in steps:
        made, _ = c.change(what + " f", fn, *a)
        eq("mount: inode of f after %s" % what, field("mount: stat f", f, "st_ino"), ino)
        if c.same or c.refused:
            eq("server: inode of f after %s (the server's file was replaced)" % what,
               os.stat(c.s("f")).st_ino, sino)
    eq("mount: stat -c %i f after the changes", stat_c_ino(f), ino)
    eq("mount: ls -i DIR for f after the changes", ls_inodes([c.op]).get("f", "missing"), ino)
    if c.refused:
        eq("server: f after refused changes", read(c.s("f")), b"0123456789")
        return
    eq("mount: f after the changes", get("mount: read f", read, f), b"ab23")
    eq("server: f after the changes", read(c.s("f")), b"ab23")
    eq("server: mode of f after chmod 600", perm(os.stat(c.s("f"))), "600")


def case_dirmtime(c):
    start = int(time.time())
    # emulated (FTP): LIST gives minutes for recent files, days for old.
    slack = 61 if c.emulated else 1
    for d, what, fn in (("d1", "create d1/new", lambda: write(c.o("d1", "new"), b"")),
                        ("d2", "unlink d2/x", lambda: os.unlink(c.o("d2", "x")))):
        m0 = field("mount: stat %s" % d, c.o(d), "st_mtime")
        if not c.emulated and c.rw:
            eq("mount: mtime of %s before %s (the server's)" % (d, what), int(m0) if m0 is not FAIL else m0, OLD)
        elif not c.emulated:
            # HTTP: nginx's autoindex gives a directory's time in minutes.
            eq("mount: mtime of %s before %s (the server's, to the minute)" % (d, what),
               int(m0) // 60 * 60 if m0 is not FAIL else m0, OLD // 60 * 60)
        made, _ = c.change(what, fn)
        m1 = field("mount: stat %s" % d, c.o(d), "st_mtime")
        s1 = int(os.stat(c.s(d)).st_mtime)
        if not made:
            eq("mount: mtime of %s after a refused %s" % (d, what), m1, m0)
            eq("server: mtime of %s after a refused %s" % (d, what), s1, OLD)
            continue
        if s1 < start - 1:
            diff("server: mtime of %s after %s: got %d, want >= %d (now)" % (d, what, s1, start))
        if m1 is FAIL:
            continue
        if int(m1) < start - slack:
            diff("mount: mtime of %s after %s: got %d, want >= %d (now, the server has %d)" % (d, what, int(m1), start - slack, s1))
        elif c.same and int(m1) != s1:
            diff("mount: mtime of %s after %s: got %d, want the server's %d" % (d, what, int(m1), s1))


def case_chmod(c):
    checks = [("d", 0o700)] + [(k + b, int(b, 8)) for b in ("1755", "4755", "2755") for k in ("f", "d")]
    for name, mode in checks:
        before = perm(os.stat(c.s(name)))
        made, _ = c.change("chmod %o %s" % (mode, name), os.chmod, c.o(name), mode)
        if not made:
            eq("server: mode of %s after a refused chmod" % name, perm(os.stat(c.s(name))), before)
            continue
        st = get("mount: stat " + name, os.stat, c.o(name))
        if st is not FAIL:
            eq("mount: mode of %s after chmod %o" % (name, mode), perm(st), "%o" % mode)
        want = mode if c.same else mode & 0o777
        eq("server: mode of %s after chmod %o" % (name, mode), perm(os.stat(c.s(name))), "%o" % want)
    # open(O_CREAT, mode 0): the file is created 000, and as root the
    # open itself still succeeds.
    made, fd = c.change("open(zero, O_CREAT|O_WRONLY, 0)", os.open, c.o("zero"), os.O_CREAT | os.O_WRONLY, 0)
    if not made:
        if fd is not None:
            os.close(fd)
        eq("server: zero exists after a refused create", os.path.lexists(c.s("zero")), False)
        return
    get("mount: write to zero", os.write, fd, b"x")
    get("mount: close zero", os.close, fd)
    st = get("mount: stat zero", os.stat, c.o("zero"))
    if st is not FAIL:
        eq("mount: mode of zero", perm(st), "0")
    st = get("server: stat zero", os.stat, c.s("zero"))
    if st is not FAIL:
        eq("server: mode of zero", perm(st), "0")
        eq("server: zero's data", read(c.s("zero")), b"x")


def case_utime(c):
    for name in ("f", "d"):
        before = os.stat(c.s(name))
        made, _ = c.change("utime(%s, atime=%d, mtime=%d)" % (name, ATIME, MTIME), os.utime, c.o(name), (ATIME, MTIME))
        if not made:
            eq("server: mtime of %s after a refused utime" % name, int(os.stat(c.s(name)).st_mtime), int(before.st_mtime))
            continue
        st = get("mount: stat " + name, os.stat, c.o(name))
        if st is not FAIL:
            eq("mount: atime of %s" % name, int(st.st_atime), ATIME)
            eq("mount: mtime of %s" % name, int(st.st_mtime), MTIME)
        st = os.stat(c.s(name))
        # emulated (FTP): only a file's mtime reaches the server (MDTM).
        if c.same:
            eq("server: atime of %s" % name, int(st.st_atime), ATIME)
        if c.same or name == "f":
            eq("server: mtime of %s" % name, int(st.st_mtime), MTIME)


def case_unlinked(c):
    fd = get("mount: open f", os.open, c.o("f"), os.O_RDONLY if c.refused else os.O_RDWR)
    if fd is FAIL:
        return
    try:
        made, _ = c.change("unlink f (open)", os.unlink, c.o("f"))
        st = get("mount: fstat of the open f", os.fstat, fd)
        eq("mount: fstat nlink of the open f", st.st_nlink if st is not FAIL else FAIL, 0 if made else 1)
        eq("mount: read of the open f", get("mount: pread", os.pread, fd, 100, 0), b"hello\n")
        if not made:
            eq("server: f after a refused unlink", read(c.s("f")), b"hello\n")
            return
        eq("mount: f exists after unlink", os.path.lexists(c.o("f")), False)
        eq("mount: f listed after unlink", "f" in os.listdir(c.op), False)
        eq("server: f exists after unlink", os.path.lexists(c.s("f")), False)
        get("mount: pwrite to the open unlinked f", os.pwrite, fd, b"more", 6)
        eq("mount: read back of the unlinked f", get("mount: pread", os.pread, fd, 100, 0), b"hello\nmore")
    finally:
        r = attempt(os.close, fd)
        if r != "ok":
            diff("mount: close: got %s, want success" % r)
    eq("server: f exists after the unlinked f was written and closed", os.path.lexists(c.s("f")), False)
    eq("mount: f listed after the unlinked f was closed", "f" in os.listdir(c.op), False)


def case_statvfs(c):
    sv = get("mount: statvfs", os.statvfs, c.op)
    nm = get("mount: pathconf NAME_MAX", os.pathconf, c.op, "PC_NAME_MAX")
    if sv is FAIL:
        return
    if sv.f_namemax <= 0:
        diff("mount: f_namemax: got %d, want > 0" % sv.f_namemax)
    if nm is not FAIL and nm <= 0:
        diff("mount: pathconf NAME_MAX: got %d, want > 0" % nm)
    eq("mount: pathconf NAME_MAX = f_namemax", nm, sv.f_namemax)
    if sv.f_blocks <= 0:
        diff("mount: f_blocks: got %d, want > 0" % sv.f_blocks)
    if sv.f_bfree > sv.f_blocks or sv.f_bavail > sv.f_blocks:
        diff("mount: f_bfree %d / f_bavail %d exceed f_blocks %d" % (sv.f_bfree, sv.f_bavail, sv.f_blocks))
    if c.same:
        srv = os.statvfs(c.srv)
        eq("mount: f_namemax (the server's)", sv.f_namemax, srv.f_namemax)
        eq("mount: size f_blocks*f_frsize (the server's)", sv.f_blocks * sv.f_frsize, srv.f_blocks * srv.f_frsize)


def case_longname(c):
    before = snapshot(c.srv)
    for what, fn in (("open(256-byte name, O_CREAT)", lambda: os.close(os.open(c.o(LONG), os.O_CREAT | os.O_WRONLY, 0o644))),
                     ("mkdir(256-byte name)", lambda: os.mkdir(c.o(LONG))),
                     ("stat(256-byte name)", lambda: os.stat(c.o(LONG)))):
        t0 = time.monotonic()
        got = attempt(fn)
        took = time.monotonic() - t0
        eq(what, got, "ENAMETOOLONG")
        if took > 2:
            diff("%s: took %.1fs, want ENAMETOOLONG at once" % (what, took))
    c.unchanged(before)
    eq("mount: a 256-byte name listed", any(n.startswith("nnnn") for n in os.listdir(c.op)), False)
    # The longest name allowed is allowed.
    if not c.rw:
        eq("open(255-byte name, O_CREAT) on a read-only server", attempt(write, c.o(LONGEST), b"x"), "EROFS")
        return
    if get("open(255-byte name, O_CREAT)", write, c.o(LONGEST), b"255\n") is not FAIL:
        eq("server: the 255-byte name's data", get("server: read", read, c.s(LONGEST)), b"255\n")


# Each errno check: (name, changes the tree if it were allowed, operation).
# The test compares every result with the local reference's.
def errno_checks(c):
    o = c.o
    return [
        ("rename_dir_onto_nonempty_dir", True, lambda: os.rename(o("empty"), o("full"))),
        ("rename_nonempty_dir_onto_nonempty_dir", True, lambda: os.rename(o("full2"), o("full"))),
        ("rmdir_nonempty", True, lambda: os.rmdir(o("full"))),
        ("mkdir_existing_dir", True, lambda: os.mkdir(o("full"))),
        ("mkdir_existing_file", True, lambda: os.mkdir(o("f"))),
        ("unlink_dir", True, lambda: os.unlink(o("full"))),
        ("open_missing", False, lambda: os.close(os.open(o("missing"), os.O_RDONLY))),
        ("stat_missing", False, lambda: os.stat(o("missing"))),
        ("rename_file_onto_dir", True, lambda: os.rename(o("f"), o("empty"))),
        ("rename_dir_onto_file", True, lambda: os.rename(o("empty"), o("f"))),
        ("create_excl_existing", True, lambda: os.close(os.open(o("f"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))),
        ("rmdir_file", True, lambda: os.rmdir(o("f"))),
        ("open_through_file", False, lambda: os.close(os.open(o("f", "x"), os.O_RDONLY))),
        ("create_through_file", True, lambda: os.close(os.open(o("f", "x"), os.O_CREAT | os.O_WRONLY, 0o644))),
        ("open_dir_for_writing", True, lambda: os.close(os.open(o("empty"), os.O_WRONLY))),
        ("open_file_O_DIRECTORY", False, lambda: os.close(os.open(o("f"), os.O_RDONLY | os.O_DIRECTORY))),
        ("listdir_file", False, lambda: os.listdir(o("f"))),
        ("unlink_missing", True, lambda: os.unlink(o("missing"))),
        ("rmdir_missing", True, lambda: os.rmdir(o("missing"))),
        ("rename_missing", True, lambda: os.rename(o("missing"), o("other"))),
        ("mkdir_in_missing_dir", True, lambda: os.mkdir(o("missing", "d"))),
        ("create_in_missing_dir", True, lambda: os.close(os.open(o("missing", "x"), os.O_CREAT | os.O_WRONLY, 0o644))),
        ("rename_dir_into_itself", True, lambda: os.rename(o("full"), o("full", "sub", "x"))),
        ("rmdir_dot", True, lambda: os.rmdir(o("full", "."))),
        ("link_to_dir", True, lambda: os.link(o("empty"), o("l"))),
        ("symlink_onto_existing", True, lambda: os.symlink("x", o("f"))),
        ("readlink_file", False, lambda: os.readlink(o("f"))),
        ("truncate_dir", True, lambda: os.truncate(o("empty"), 0)),
        ("rename_file_onto_itself", True, lambda: os.rename(o("f"), o("f"))),
    ]


def case_errnos(c):
    before = snapshot(c.srv)
    for name, changes, fn in errno_checks(c):
        facts.append("%s %s %s" % ("change" if changes else "read", name, attempt(fn)))
    c.unchanged(before)
    eq("mount: listing after the failed changes", sorted(get("mount: listdir", os.listdir, c.op) or []),
       sorted(os.listdir(c.srv)))


def case_create(c):
    made, _ = c.change("create new and write", write, c.o("new"), b"hello, world\n")
    if not made:
        eq("server: new exists after a refused create", os.path.lexists(c.s("new")), False)
        return
    eq("mount: read back new", get("mount: read new", read, c.o("new")), b"hello, world\n")
    eq("server: new", get("server: read new", read, c.s("new")), b"hello, world\n")
    eq("server: mode of new (open mode 0644, umask 022)", perm(os.stat(c.s("new"))), "644")
    eq("mount: size of new", field("mount: stat new", c.o("new"), "st_size"), 13)


def case_append(c):
    made, _ = c.change("append to f", write, c.o("f"), b"line2\n", os.O_WRONLY | os.O_APPEND)
    want = b"line1\nline2\n" if made else b"line1\n"
    eq("mount: f", get("mount: read f", read, c.o("f")), want)
    eq("server: f", read(c.s("f")), want)


def case_truncate(c):
    for size, want in ((4, b"0123"), (8, b"0123\0\0\0\0")):
        made, _ = c.change("truncate t to %d" % size, os.truncate, c.o("t"), size)
        if not made:
            eq("server: t after a refused truncate", read(c.s("t")), b"0123456789")
            return
        eq("mount: size of t", field("mount: stat t", c.o("t"), "st_size"), size)
        eq("mount: t", get("mount: read t", read, c.o("t")), want)
        eq("server: t", read(c.s("t")), want)


def case_overwrite(c):
    def pwrite():
        fd = os.open(c.o("p"), os.O_RDWR)
        try:
            os.pwrite(fd, b"XY", 3)
        finally:
            os.close(fd)

    made, _ = c.change("pwrite XY at 3 in p", pwrite)
    want = b"abcXYfghij" if made else b"abcdefghij"
    eq("mount: p", get("mount: read p", read, c.o("p")), want)
    eq("server: p", read(c.s("p")), want)


def case_rename(c):
    made, _ = c.change("rename a over b", os.rename, c.o("a"), c.o("b"))
    if not made:
        eq("server: b after a refused rename", read(c.s("b")), b"B\n")
        eq("server: a after a refused rename", os.path.lexists(c.s("a")), True)
        return
    eq("mount: b after rename a b", get("mount: read b", read, c.o("b")), b"A\n")
    eq("mount: a exists after rename a b", os.path.lexists(c.o("a")), False)
    eq("server: b after rename a b", get("server: read b", read, c.s("b")), b"A\n")
    eq("server: a exists after rename a b", os.path.lexists(c.s("a")), False)
    # An editor's save: a new file written, then renamed over the old one.
    if get("write .c.swp", write, c.o(".c.swp"), b"C2\n") is not FAIL and \
            get("rename .c.swp c", os.rename, c.o(".c.swp"), c.o("c")) is not FAIL:
        eq("mount: c after the save", get("mount: read c", read, c.o("c")), b"C2\n")
        eq("server: c after the save", get("server: read c", read, c.s("c")), b"C2\n")
        eq("server: .c.swp exists after the save", os.path.lexists(c.s(".c.swp")), False)
    # A directory renamed over an empty one replaces it.
    if get("rename dir over an empty dir", os.rename, c.o("fulldir"), c.o("emptydir")) is not FAIL:
        eq("mount: emptydir/x after rename fulldir emptydir", get("mount: read", read, c.o("emptydir", "x")), b"x\n")
        eq("server: emptydir/x after rename fulldir emptydir", get("server: read", read, c.s("emptydir", "x")), b"x\n")
        eq("server: fulldir exists after rename fulldir emptydir", os.path.lexists(c.s("fulldir")), False)
    # And a directory moves with what it holds.
    if get("rename dir dir2", os.rename, c.o("dir"), c.o("dir2")) is not FAIL:
        eq("server: dir2 is a directory", os.path.isdir(c.s("dir2")), True)
        eq("server: dir exists after rename dir dir2", os.path.lexists(c.s("dir")), False)


def case_mkdir(c):
    made, _ = c.change("mkdir nd", os.mkdir, c.o("nd"), 0o755)
    if not made:
        eq("server: nd exists after a refused mkdir", os.path.lexists(c.s("nd")), False)
        return
    eq("server: nd is a directory", os.path.isdir(c.s("nd")), True)
    if os.path.isdir(c.s("nd")):
        eq("server: mode of nd", perm(os.stat(c.s("nd"))), "755")
    eq("mount: nd is a directory", os.path.isdir(c.o("nd")), True)
    if get("create nd/f", write, c.o("nd", "f"), b"f\n") is not FAIL:
        eq("server: nd/f", get("server: read nd/f", read, c.s("nd", "f")), b"f\n")
        get("unlink nd/f", os.unlink, c.o("nd", "f"))
    if get("rmdir nd", os.rmdir, c.o("nd")) is not FAIL:
        eq("server: nd exists after rmdir", os.path.lexists(c.s("nd")), False)
        eq("mount: stat nd after rmdir", attempt(os.stat, c.o("nd")), "ENOENT")


def listing(what, d):
    try:
        return sorted((e.name, e.is_dir(follow_symlinks=False)) for e in os.scandir(d))
    except OSError as e:
        diff("%s: got %s, want success" % (what, ename(e)))
        return FAIL


def served(c, entries):
    """What the server's listing can show of entries: all of them, but
    for HTTP (read-only here) nginx's autoindex, which lists no dot files,
    and a server's listing is all HTTP has of a directory."""
    if c.rw or entries is FAIL:
        return entries
    return [e for e in entries if not e[0].startswith(".")]


def case_readdir(c):
    eq("mount: listing (name, is_dir)", listing("mount: readdir", c.op), served(c, listing("server: readdir", c.srv)))
    eq("mount: listing of sub", listing("mount: readdir sub", c.o("sub")), [])
    made, _ = c.change("create new", write, c.o("new"), b"n\n")
    made2, _ = c.change("unlink f1", os.unlink, c.o("f1"))
    eq("mount: listing after changes", listing("mount: readdir", c.op), served(c, listing("server: readdir", c.srv)))
    want = {"f1", "f2", "f3", "f4", "f5", "with space", "caf\u00e9", ".hidden", "sub"}
    if made:
        want.add("new")
    if made2:
        want.discard("f1")
    eq("server: names", sorted(os.listdir(c.srv)), sorted(want))


def case_stress(c):
    # Only the refused form: the writable protocols run the stress from
    # the test (several processes, see stress-* below).
    before = snapshot(c.srv)
    c.change("append a record to log", write, c.o("log"), b"x" * 49 + b"\n", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    c.change("rename a new version over target", os.rename, c.o("target"), c.o("target2"))
    c.unchanged(before)


# ---- concurrent stress ----

REC = 50


def record(tag, i):
    return (("%s %08d " % (tag, i)).ljust(REC - 1, "x") + "\n").encode()


def version(i):
    """Version i of the renamed target: 3 pages, every line naming i."""
    line = ("version %06d " % i).ljust(63, "v") + "\n"
    return (line * (3 * 4096 // 64)).encode()


def stress_append(path, tag, n):
    for i in range(n):
        write(path, record(tag, i), os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def stress_rename(d, n):
    for i in range(1, n + 1):
        write(os.path.join(d, ".target.tmp"), version(i))
        os.rename(os.path.join(d, ".target.tmp"), os.path.join(d, "target"))


def check_version(what, data, n):
    try:
        i = int(data[8:14])
    except ValueError:
        i = -1
    if not 0 <= i <= n or data != version(i):
        return "%s: %d bytes, not a complete version: %s" % (what, len(data), show(data))
    return None


def check_log(what, data, writing=False):
    """writing: appenders may be mid-write, so the last record may be cut
    short (Linux copies a write into the page cache page by page and a
    concurrent read sees what has been copied: the local reference run
    once read 4096 bytes, an append crossing a page boundary)."""
    if b"\0" in data:
        return "%s: %d NUL bytes at %d" % (what, data.count(b"\0"), data.index(b"\0"))
    if len(data) % REC and not writing:
        return "%s: %d bytes, not whole %d-byte records" % (what, len(data), REC)
    for i in range(0, len(data) - len(data) % REC, REC):
        r = data[i:i + REC]
        if not r.endswith(b"\n") or len(r.split()) != 3:
            return "%s: record at %d is damaged: %r" % (what, i, r)
    return None


def stress_read(d, n, stopfile):
    reads = 0
    while True:
        stop = os.path.exists(stopfile)  # checked before the read: one more after the writers ended
        for what, p, check in (("target", os.path.join(d, "target"), lambda w, b: check_version(w, b, n)),
                               ("log", os.path.join(d, "log"), lambda w, b: check_log(w, b, writing=not stop))):
            try:
                data = read(p)
            except FileNotFoundError:
                if what == "log":  # no appender got there yet
                    continue
                raise
            err = check(what + " as read through the mount", data)
            if err:
                sys.exit(err)
        reads += 1
        if stop:
            print("reads", reads)
            return


def stress_verify(srv, tags, n, versions):
    data = read(os.path.join(srv, "log"))
    err = check_log("server: log", data)
    if err:
        diff(err)
    count = {}
    for i in range(0, len(data) - len(data) % REC, REC):
        f = data[i:i + REC].split()
        if len(f) != 3 or not f[1].isdigit():
            continue
        tag, seq = f[0].decode(errors="replace"), int(f[1])
        if seq != count.get(tag, 0):
            diff("server: log record at %d is %s %d, want %s %d (each writer's records once, in order)" % (i, tag, seq, tag, count.get(tag, 0)))
        count[tag] = seq + 1
        if data[i:i + REC] != record(tag, seq):
            diff("server: log record at %d is damaged: %r" % (i, data[i:i + REC]))
    for tag in tags:
        eq("server: records of writer %s" % tag, count.get(tag, 0), n)
    eq("server: log size", len(data), REC * n * len(tags))
    target = read(os.path.join(srv, "target"))
    err = check_version("server: target", target, versions)
    if err:
        diff(err)
    elif target != version(versions):
        diff("server: target is version %s, want the last one, %d" % (target[8:14].decode(), versions))
    eq("server: .target.tmp exists after the last rename", os.path.lexists(os.path.join(srv, ".target.tmp")), False)


def main(argv):
    cmd = argv[1]
    if cmd == "setup":
        setup(argv[2])
        return
    if cmd == "stress-append":
        stress_append(argv[2], argv[3], int(argv[4]))
        return
    if cmd == "stress-rename":
        stress_rename(argv[2], int(argv[3]))
        return
    if cmd == "stress-read":
        stress_read(argv[2], int(argv[3]), argv[4])
        return
    if cmd == "stress-verify":
        stress_verify(argv[2], argv[3].split(","), int(argv[4]), int(argv[5]))
    else:
        os.umask(0o022)
        fn = globals().get("case_" + cmd)
        if fn is None:
            sys.exit("conform.py: no case %r" % cmd)
        fn(Case(argv[2], argv[3], argv[4], argv[5]))
    for f in facts:
        print("fact:", f)
    for d in diffs:
        print("diff:", d)
    if not diffs:
        print("ok")


if __name__ == "__main__":
    main(sys.argv)
