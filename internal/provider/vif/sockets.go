package vif

import (
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// Per-socket attach (seed 003, Figure 7): proc/PID/sockets/FD/IFACE is
// a link to the VIF of one socket of the process. The daemon takes a
// copy of the socket (pidfd_getfd) and sets its SO_PRIORITY to the VIF's
// leaf class, which HTB takes as the class on the interface whose VIF it
// is (VIF numbers are unique across interfaces, so it names no class
// elsewhere); the classifier keeps such a priority, so the socket's VIF
// wins over its process's, and records it for the socket's incoming
// packets. rm gives the socket back to its process's VIF (priority 0).

type socketsDir struct {
	p   *Provider
	pid int
	uid uint32
}

// CacheTTL: proc/PID/sockets exists as long as proc/PID (procDir.CacheTTL).
func (d *socketsDir) CacheTTL() time.Duration { return dirTTL }

func (d *socketsDir) Attr(ctx context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o755, Uid: d.uid, Mtime: time.Now()}, nil
}

// socketFds lists pid's descriptors that are sockets (plain system
// calls, as readFile: this runs on every attach and detach).
func socketFds(pid int) []int {
	dir, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(dir)
	var fds []int
	buf := make([]byte, 4096)
	link := make([]byte, 64)
	for {
		n, err := unix.ReadDirent(dir, buf)
		if err != nil || n <= 0 {
			break
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			m, err := unix.Readlinkat(dir, name, link)
			if err != nil || !strings.HasPrefix(string(link[:m]), "socket:") {
				continue
			}
			if fd, err := strconv.Atoi(name); err == nil {
				fds = append(fds, fd)
			}
		}
	}
	sort.Ints(fds)
	return fds
}

func (d *socketsDir) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	var out []ns.DirEntry
	for _, fd := range socketFds(d.pid) {
		out = append(out, ns.DirEntry{Name: strconv.Itoa(fd), Attr: ns.Attr{Mode: os.ModeDir | 0o755, Uid: d.uid}})
	}
	return out, nil
}

func (d *socketsDir) Lookup(ctx context.Context, name string) (ns.Node, error) {
	fd, err := strconv.Atoi(name)
	if err != nil || strconv.Itoa(fd) != name {
		return nil, ns.Errorf(syscall.ENOENT, "%q is not a descriptor", name)
	}
	for _, s := range socketFds(d.pid) {
		if s == fd {
			return &socketDir{p: d.p, pid: d.pid, uid: d.uid, fd: fd}, nil
		}
	}
	return nil, ns.Errorf(syscall.ENOENT, "descriptor %d of process %d is not a socket", fd, d.pid)
}

// socketDir is proc/PID/sockets/FD.
type socketDir struct {
	p   *Provider
	pid int
	uid uint32
	fd  int
}

var (
	_ ns.Symlinker = (*socketDir)(nil)
	_ ns.Remover   = (*socketDir)(nil)
)

func (d *socketDir) Volatile() bool { return true }

func (d *socketDir) Attr(ctx context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o755, Uid: d.uid, Mtime: time.Now()}, nil
}

// withSocket runs f on a copy of the socket.
func withSocket(pid, fd int, f func(s int) error) error {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return ns.Errorf(syscall.ESRCH, "process %d: %v", pid, err)
	}
	defer unix.Close(pidfd)
	return withSocketOf(pidfd, pid, fd, f)
}

// withSocketOf runs f on a copy of the socket fd of the process pidfd
// (pid) refers to.
func withSocketOf(pidfd, pid, fd int, f func(s int) error) error {
	s, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return ns.Errorf(syscall.EBADF, "descriptor %d of process %d: %v", fd, pid, err)
	}
	defer unix.Close(s)
	return f(s)
}

// vifOfSocket is the VIF the socket's priority names, or nil.
func (d *socketDir) vifOfSocket() *VIF {
	var prio int
	err := withSocket(d.pid, d.fd, func(s int) error {
		var err error
		prio, err = unix.GetsockoptInt(s, unix.SOL_SOCKET, unix.SO_PRIORITY)
		return err
	})
	if err != nil || prio>>16 != Major {
		return nil
	}
	id := uint16(prio) &^ selfBit
	for _, ifc := range d.p.ifaces {
		if v := ifc.byID[id]; v != nil {
			return v
		}
	}
	return nil
}

func (d *socketDir) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if v := d.vifOfSocket(); v != nil {
		return []ns.DirEntry{{Name: v.ifc.name, Attr: ns.Attr{Mode: os.ModeSymlink | 0o777, Uid: d.uid}}}, nil
	}
	return nil, nil
}

func (d *socketDir) Lookup(ctx context.Context, name string) (ns.Node, error) {
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if v := d.vifOfSocket(); v != nil && v.ifc.name == name {
		return &fixedLink{target: "../../" + target(v), uid: d.uid}, nil
	}
	return nil, ns.Errorf(syscall.ENOENT, "socket %d of process %d has no VIF of its own on %s", d.fd, d.pid, name)
}

func (d *socketDir) setPriority(prio int) error {
	return withSocket(d.pid, d.fd, func(s int) error {
		if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_PRIORITY, prio); err != nil {
			return ns.Errorf(syscall.EPERM, "SO_PRIORITY of socket %d of process %d: %v", d.fd, d.pid, err)
		}
		return nil
	})
}

// Symlink attaches the socket to the VIF the target names (its name is
// the interface).
func (d *socketDir) Symlink(ctx context.Context, tgt, name string) (ns.Node, error) {
	c := d.p.caller(ctx)
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if err := d.p.writable(); err != nil {
		return nil, err
	}
	ifc, err := d.p.ifaceLocked(name)
	if err != nil {
		return nil, err
	}
	v := resolveTarget(ifc, tgt)
	if v == nil {
		return nil, ns.Errorf(syscall.EINVAL, "%q names no VIF of %s", tgt, name)
	}
	if err := d.p.mayAttach(c, d.pid, v); err != nil {
		return nil, err
	}
	if err := d.p.ensureUp(ifc); err != nil {
		return nil, err
	}
	if err := d.setPriority(int(handle(v.id | selfBit))); err != nil {
		return nil, err
	}
	return &fixedLink{target: "../../" + target(v), uid: d.uid}, nil
}

// Remove gives the socket back to its process's VIF.
func (d *socketDir) Remove(ctx context.Context, name string, dir bool) error {
	c := d.p.caller(ctx)
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	v := d.vifOfSocket()
	if v == nil || v.ifc.name != name {
		return ns.Errorf(syscall.ENOENT, "socket %d of process %d has no VIF of its own on %s", d.fd, d.pid, name)
	}
	if err := d.p.mayMove(c, d.pid); err != nil {
		return err
	}
	return d.setPriority(0)
}

// fixedLink is a link whose text is known when it is made.
type fixedLink struct {
	target string
	uid    uint32
}

func (l *fixedLink) Volatile() bool { return true }

func (l *fixedLink) Attr(ctx context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeSymlink | 0o777, Uid: l.uid, Size: int64(len(l.target)), Mtime: time.Now()}, nil
}

func (l *fixedLink) Readlink(ctx context.Context) (string, error) { return l.target, nil }

// classOf is the priority that puts a socket in v (0: the root VIF, no
// VIF of its own).
func classOf(v *VIF) int {
	if v == nil || v.parent == nil {
		return 0
	}
	return int(handle(v.id | selfBit))
}

// moveSockets moves the process's existing IP sockets that follow it
// from its old VIF on the interface to its new one: a socket keeps the
// cgroup it was made in, so without this only sockets made after an
// attach would obey it. A socket that follows its process has the
// priority of the process's VIF (0 in the root VIF); one attached on its
// own (another VIF's priority) stays where it is. Best effort: a socket
// that cannot be reached is left as it was.
func (p *Provider) moveSockets(pid int, from, to *VIF) {
	old, new := classOf(from), classOf(to)
	if old == new {
		return
	}
	fds := socketFds(pid)
	if len(fds) == 0 {
		return
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		p.log.Debug("vif: the sockets stay in their VIF", "pid", pid, "err", err)
		return
	}
	defer unix.Close(pidfd)
	for _, fd := range fds {
		err := withSocketOf(pidfd, pid, fd, func(s int) error {
			if dom, err := unix.GetsockoptInt(s, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || (dom != unix.AF_INET && dom != unix.AF_INET6) {
				return nil
			}
			prio, err := unix.GetsockoptInt(s, unix.SOL_SOCKET, unix.SO_PRIORITY)
			if err != nil || prio != old {
				return err
			}
			return unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_PRIORITY, new)
		})
		if err != nil {
			p.log.Debug("vif: a socket stays in its VIF", "pid", pid, "fd", fd, "err", err)
		}
	}
}
