package vif

import (
	"context"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// ProcDir is proc/: proc/PID/IFACE is a symbolic link to the VIF the
// process is attached to on IFACE (seed 003, Figure 7). ln -s attaches
// (the process and every child it forks later), rm detaches back to the
// parent VIF. A process not attached on IFACE has no link there: it is
// in IFACE's root VIF. Listing proc/ shows the attached processes; any
// other process's directory can be looked up.
func (p *Provider) ProcDir() ns.Dir { return &procRoot{p: p} }

type procRoot struct{ p *Provider }

func (r *procRoot) CacheTTL() time.Duration { return dirTTL }

func (r *procRoot) Attr(ctx context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o555, Mtime: time.Now()}, nil
}

func (r *procRoot) Lookup(ctx context.Context, name string) (ns.Node, error) {
	pid, err := strconv.Atoi(name)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != name {
		return nil, ns.Errorf(syscall.ENOENT, "%q is not a process id", name)
	}
	info, err := r.p.infoOf(pid)
	if err != nil {
		return nil, err
	}
	return &procDir{p: r.p, pid: pid, uid: info.uid}, nil
}

func (r *procRoot) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	r.p.mu.Lock()
	pids := r.p.attachedPids()
	r.p.mu.Unlock()
	var out []ns.DirEntry
	for _, pid := range pids {
		info, err := r.p.infoOf(pid)
		if err != nil {
			continue
		}
		out = append(out, ns.DirEntry{Name: strconv.Itoa(pid), Attr: ns.Attr{Mode: os.ModeDir | 0o755, Uid: info.uid}})
	}
	return out, nil
}

// procDir is proc/PID.
type procDir struct {
	p   *Provider
	pid int
	uid uint32
}

var (
	_ ns.Dir       = (*procDir)(nil)
	_ ns.Symlinker = (*procDir)(nil)
	_ ns.Remover   = (*procDir)(nil)
	_ ns.Renamer   = (*procDir)(nil)
)

// CacheTTL: a door may keep proc/PID's entry as a VIF directory's
// (dirTTL), which spares attach and detach a LOOKUP each. The directory
// exists as long as its process; for that second after an exit (or a
// reuse of the pid) its links and sockets answer for the pid as it is
// now, and every change checks the process's owner as it is then
// (mayMove), not the owner the directory shows.
func (d *procDir) CacheTTL() time.Duration { return dirTTL }

func (d *procDir) Attr(ctx context.Context) (ns.Attr, error) {
	// Is it there? kill(2) with no signal is the cheapest question (the
	// owner was read when the name was looked up).
	if err := unix.Kill(d.pid, 0); err == unix.ESRCH {
		return ns.Attr{}, ns.Errorf(syscall.ENOENT, "no process %d", d.pid)
	}
	return ns.Attr{Mode: os.ModeDir | 0o755, Uid: d.uid, Mtime: time.Now()}, nil
}

// target is the link's text for v: relative, so it resolves wherever
// the namespace is mounted (proc/PID/IFACE → ../../vif/IFACE/...).
func target(v *VIF) string { return "../../vif/" + v.path() }

func (d *procDir) Lookup(ctx context.Context, name string) (ns.Node, error) {
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if name == "sockets" {
		return &socketsDir{p: d.p, pid: d.pid, uid: d.uid}, nil
	}
	if e, ok := d.p.pending[d.pid][name]; ok {
		return &linkNode{p: d.p, pid: d.pid, uid: d.uid, st: e.st}, nil
	}
	if ifc, ok := d.p.ifaces[name]; ok {
		if v := d.p.vifOf(d.pid, ifc); v != nil {
			return &linkNode{p: d.p, pid: d.pid, uid: d.uid, st: &linkState{iface: name}}, nil
		}
	}
	return nil, ns.Errorf(syscall.ENOENT, "process %d is not attached on %s (it is in the root VIF)", d.pid, name)
}

func (d *procDir) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	out := []ns.DirEntry{{Name: "sockets", Attr: ns.Attr{Mode: os.ModeDir | 0o755, Uid: d.uid}}}
	if g := d.p.groupOfPid(d.pid); g != nil {
		for name := range g.vifs {
			out = append(out, ns.DirEntry{Name: name, Attr: ns.Attr{Mode: os.ModeSymlink | 0o777, Uid: d.uid}})
		}
	}
	return out, nil
}

// Symlink attaches the process to the VIF the target names
// (…/vif/IFACE/PATH, IFACE being the link's name). GNU ln -sf over an
// existing link makes a link of a temporary name and renames it: such a
// link is kept until its rename (or for a minute).
func (d *procDir) Symlink(ctx context.Context, tgt, name string) (ns.Node, error) {
	c := d.p.caller(ctx)
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if err := d.p.writable(); err != nil {
		return nil, err
	}
	if _, err := ifIndex(name); err != nil {
		st := d.p.addPending(d.pid, name, tgt)
		return &linkNode{p: d.p, pid: d.pid, uid: d.uid, st: st}, nil
	}
	if _, err := d.p.attachLink(c, d.pid, name, tgt); err != nil {
		return nil, err
	}
	return &linkNode{p: d.p, pid: d.pid, uid: d.uid, st: &linkState{iface: name}}, nil
}

// Rename completes ln -sf: the temporary link becomes proc/PID/IFACE.
func (d *procDir) Rename(ctx context.Context, name string, to ns.Dir, toName string) error {
	c := d.p.caller(ctx)
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	e, ok := d.p.pending[d.pid][name]
	if !ok {
		return ns.Errorf(syscall.EPERM, "only links made in proc/%d can be renamed", d.pid)
	}
	if other, ok := to.(*procDir); !ok || other.pid != d.pid {
		return ns.Errorf(syscall.EXDEV, "a process's link stays in its directory")
	}
	delete(d.p.pending[d.pid], name)
	if _, err := d.p.attachLink(c, d.pid, toName, e.st.target); err != nil {
		return err
	}
	// the kernel keeps the temporary link's inode under the new name
	e.st.iface, e.st.pending = toName, false
	return nil
}

// Remove (rm proc/PID/IFACE) detaches the process back to the parent of
// its VIF; the caller must be allowed to attach there.
func (d *procDir) Remove(ctx context.Context, name string, dir bool) error {
	c := d.p.caller(ctx)
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if _, ok := d.p.pending[d.pid][name]; ok {
		delete(d.p.pending[d.pid], name)
		return nil
	}
	if err := d.p.writable(); err != nil {
		return err
	}
	ifc, ok := d.p.ifaces[name]
	var v *VIF
	if ok {
		v = d.p.vifOf(d.pid, ifc)
	}
	if v == nil {
		return ns.Errorf(syscall.ENOENT, "process %d is not attached on %s", d.pid, name)
	}
	if err := d.p.mayAttach(c, d.pid, v.parent); err != nil {
		return err
	}
	return d.p.attach(d.pid, ifc, v.parent)
}

// mayAttach: the caller must own the process (or be root) and be
// allowed to write the VIF (its owner, with the default modes): nobody
// can move a process out from under a limit they do not own.
func (p *Provider) mayAttach(c ns.Caller, pid int, v *VIF) error {
	if err := p.mayMove(c, pid); err != nil {
		return err
	}
	if !may(c, v.uid, v.gid, v.perm, 3) {
		return ns.Errorf(syscall.EACCES, "uid %d may not attach processes to %s (owner %d, mode %o)", c.Uid, v.path(), v.uid, v.perm)
	}
	return nil
}

// mayMove: the caller owns process pid (its real uid now) or is root.
func (p *Provider) mayMove(c ns.Caller, pid int) error {
	if c.Uid == 0 {
		return nil
	}
	info, err := p.infoOf(pid)
	if err != nil {
		return err
	}
	if c.Uid != info.uid {
		return ns.Errorf(syscall.EPERM, "uid %d may not attach process %d (uid %d)", c.Uid, pid, info.uid)
	}
	return nil
}

// attachLink attaches pid on the interface name to the VIF tgt names.
func (p *Provider) attachLink(c ns.Caller, pid int, name, tgt string) (*VIF, error) {
	ifc, err := p.ifaceLocked(name)
	if err != nil {
		return nil, err
	}
	v := resolveTarget(ifc, tgt)
	if v == nil {
		return nil, ns.Errorf(syscall.EINVAL, "%q names no VIF of %s (a link in proc/%d/%s points to …/vif/%s/PATH)", tgt, name, pid, name, name)
	}
	if err := p.mayAttach(c, pid, v); err != nil {
		return nil, err
	}
	return v, p.attach(pid, ifc, v)
}

// resolveTarget finds the VIF a link's target names: the path after its
// last "vif/IFACE" (absolute through the mount, or relative).
func resolveTarget(ifc *iface, tgt string) *VIF {
	comps := strings.Split(path.Clean(tgt), "/")
	for i := len(comps) - 2; i >= 0; i-- {
		if comps[i] == "vif" && comps[i+1] == ifc.name {
			return ifc.find(comps[i+2:])
		}
	}
	return nil
}

// linkNode is a symbolic link of proc/PID. Its text is found when it is
// read: a door may keep the node of a name across changes (and, after
// ln -sf's rename, under another name).
type linkNode struct {
	p   *Provider
	pid int
	uid uint32
	st  *linkState
}

// linkState is what a link names: a temporary link's text until its
// rename, then the process's VIF on the interface.
type linkState struct {
	iface   string
	pending bool
	target  string
}

func (l *linkNode) Volatile() bool { return true }

func (l *linkNode) text() (string, error) {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	if l.st.pending {
		return l.st.target, nil
	}
	if ifc, ok := l.p.ifaces[l.st.iface]; ok {
		if v := l.p.vifOf(l.pid, ifc); v != nil {
			return target(v), nil
		}
	}
	return "", ns.Errorf(syscall.ENOENT, "process %d is not attached on %s", l.pid, l.st.iface)
}

func (l *linkNode) Attr(ctx context.Context) (ns.Attr, error) {
	t, err := l.text()
	if err != nil {
		return ns.Attr{}, err
	}
	return ns.Attr{Mode: os.ModeSymlink | 0o777, Uid: l.uid, Size: int64(len(t)), Mtime: time.Now()}, nil
}

func (l *linkNode) Readlink(ctx context.Context) (string, error) { return l.text() }

type pendingEntry struct {
	st *linkState
	at time.Time
}

func (p *Provider) addPending(pid int, name, tgt string) *linkState {
	if p.pending == nil {
		p.pending = map[int]map[string]pendingEntry{}
	}
	now := time.Now()
	for pid, m := range p.pending {
		for n, e := range m {
			if now.Sub(e.at) > time.Minute {
				delete(m, n)
			}
		}
		if len(m) == 0 {
			delete(p.pending, pid)
		}
	}
	if p.pending[pid] == nil {
		p.pending[pid] = map[string]pendingEntry{}
	}
	st := &linkState{pending: true, target: tgt}
	p.pending[pid][name] = pendingEntry{st: st, at: now}
	return st
}
