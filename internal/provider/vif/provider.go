// Package vif is seed 003's virtual network interfaces (netnice) on
// today's Linux: a tree of VIFs per real interface, managed as files
// (vif/IFACE/...) and attached to processes with symbolic links
// (proc/PID/IFACE). The kernel does all packet work: each VIF is an HTB
// class on the interface's egress; a process is attached by moving it
// into a cgroup of wirefs's own subtree (its children inherit it), and a
// small cgroup-skb BPF program (bpf.go) sets the priority of the
// cgroup's packets to its VIF's class. No packet passes through the
// daemon.
//
// The package knows netlink, tc, cgroups and BPF, nothing of FUSE or
// seccomp. Files: rate.go (tc's units), tc.go (HTB through netlink),
// cgroup.go, bpf.go, tree.go (the VIF tree, its rules), attach.go
// (processes), nodes.go and proc.go (the namespace nodes).
package vif

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cilium/ebpf"

	"wirefs/internal/ns"
	"wirefs/internal/procstatus"
)

// Options configure the provider.
type Options struct {
	Log *slog.Logger
	// Caller says who asks for a change the ns interfaces pass no
	// Caller to (mkdir, rmdir, symlink, unlink, chmod); false: unknown,
	// and the daemon's own uid is assumed.
	Caller func(ctx context.Context) (ns.Caller, bool)
	// RunDir holds the per-namespace lock (default /run/wirefs).
	RunDir string
}

// Provider is the VIF tree of one network namespace.
type Provider struct {
	o   Options
	log *slog.Logger

	mu sync.Mutex
	// err says why VIFs cannot be made here (no CAP_NET_ADMIN, another
	// daemon owns this namespace's VIFs); nil when they can.
	err    error
	base   string // the unified hierarchy's root
	dir    string // wirefs's cgroup subtree for this namespace
	lock   *os.File
	lockAt string
	cls    *classifier
	tc     *tcConn       // class counters (stats)
	inProg *ebpf.Program // the ingress classifier; nil: egress only
	ifaces map[string]*iface
	groups map[string]*group // by key
	// origin is the cgroup each attached process came from.
	origin    map[int]string
	nextGroup int
	nextID    uint16 // the next VIF number to try (all interfaces)
	// pending are ln -sf's temporary links, by pid and name.
	pending map[int]map[string]pendingEntry
	closed  bool
}

// New finds the cgroup hierarchy, takes this network namespace's lock,
// and removes what a killed daemon left; the classifier is loaded on
// the first change. When any
// of it cannot be done (no CAP_NET_ADMIN) the provider still serves the
// tree, read-only, and says why on every change.
func New(o Options) *Provider {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.RunDir == "" {
		o.RunDir = "/run/wirefs"
	}
	p := &Provider{o: o, log: o.Log, ifaces: map[string]*iface{}, groups: map[string]*group{}, origin: map[int]string{}, nextID: rootID + 1}
	if err := p.start(); err != nil {
		p.err = err
		p.log.Info("vif: virtual network interfaces are read-only", "why", err.Error())
	}
	return p
}

// ErrNoCapNetAdmin is wrapped by the error of a provider that cannot make
// VIFs because the process lacks CAP_NET_ADMIN.
var ErrNoCapNetAdmin = errors.New("no CAP_NET_ADMIN")

func hasCapNetAdmin() bool {
	s, err := procstatus.Read(0)
	return err == nil && s.HasCap(unix.CAP_NET_ADMIN)
}

func (p *Provider) start() error {
	if !hasCapNetAdmin() {
		return fmt.Errorf("the daemon has %w (run it as root to manage VIFs)", ErrNoCapNetAdmin)
	}
	base, err := cgroup2Mount()
	if err != nil {
		return err
	}
	nsid, err := netnsID()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.o.RunDir, 0o755); err != nil {
		return err
	}
	lockAt := filepath.Join(p.o.RunDir, fmt.Sprintf("vif-net%d.lock", nsid))
	lock, err := takeLock(lockAt)
	if errors.Is(err, errLocked) {
		return fmt.Errorf("another wirefs daemon manages the VIFs of this network namespace (%s is locked)", lockAt)
	} else if err != nil {
		return err
	}
	p.base, p.lock, p.lockAt = base, lock, lockAt
	sweepLocks(p.o.RunDir)
	if dirs := sweepCgroups(base, p.o.RunDir); len(dirs) > 0 {
		p.log.Info("vif: removed the cgroups that killed daemons of other network namespaces left", "dirs", strings.Join(dirs, ","))
	}
	p.dir = filepath.Join(base, "wirefs.vif", fmt.Sprintf("net%d", nsid))
	// What a killed daemon left: we hold the lock, so every wirefs
	// qdisc of this namespace and our cgroup subtree are leftovers.
	if names, err := removeIngressLeftovers(); err != nil {
		p.unlock()
		return fmt.Errorf("removing a killed daemon's ifb devices: %w", err)
	} else if len(names) > 0 {
		p.log.Info("vif: removed the ifb devices a previous daemon left", "devices", strings.Join(names, ","))
	}
	if names, err := removeLeftovers(); err != nil {
		p.unlock()
		return fmt.Errorf("removing a killed daemon's qdiscs: %w", err)
	} else if len(names) > 0 {
		p.log.Info("vif: removed the qdiscs a previous daemon left", "interfaces", strings.Join(names, ","))
	}
	if _, err := os.Stat(p.dir); err == nil {
		if err := removeTree(p.dir, base); err != nil {
			p.unlock()
			return fmt.Errorf("removing a killed daemon's cgroups: %w", err)
		}
		p.log.Info("vif: removed the cgroups a previous daemon left", "dir", p.dir)
	}
	if p.tc, err = openTCConn(); err != nil {
		p.unlock()
		return err
	}
	return nil
}

// load makes the cgroup subtree and loads the classifier: on the first
// change, so that a daemon that never shapes costs nothing.
func (p *Provider) load() error {
	if p.cls != nil {
		return nil
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return ns.Errorf(syscall.EIO, "vif: cgroup %s: %v", p.dir, err)
	}
	cls, err := loadClassifier(p.dir)
	if err != nil {
		removeTree(p.dir, p.base)
		return ns.Errorf(syscall.EIO, "vif: %v", err)
	}
	p.cls = cls
	if p.inProg = cls.in; p.inProg == nil {
		p.log.Warn("vif: incoming traffic will not be shaped", "why", cls.inErr.Error())
	}
	return nil
}

func (p *Provider) unlock() {
	if p.lock != nil {
		dropLock(p.lock, p.lockAt)
		p.lock = nil
	}
}

// Err says why VIFs cannot be changed here, or nil.
func (p *Provider) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Close removes everything the provider made: qdiscs and classes, the
// classifier, the cgroups (their processes go back where they came
// from, or to the root cgroup).
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.err != nil {
		p.closed = true
		return nil
	}
	p.closed = true
	// sockets that followed their processes lose their priority: a
	// later daemon may number its VIFs alike
	for _, g := range p.groups {
		for _, pid := range cgroupProcs(g.dir) {
			for _, v := range g.vifs {
				p.moveSockets(pid, v, nil)
			}
		}
	}
	var errs []error
	for _, ifc := range p.ifaces {
		if ifc.up {
			if err := removeHTB(ifc.name); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", ifc.name, err))
			}
		}
		if ifc.ifb != 0 {
			if err := removeIngress(ifc.index); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", ifc.name, err))
			}
		}
	}
	if p.cls != nil {
		p.cls.close()
	}
	p.tc.close()
	for pid, from := range p.origin {
		if _, err := os.Stat(from); err == nil {
			_ = moveProcess(from, pid)
		}
	}
	if p.cls != nil {
		if err := removeTree(p.dir, p.base); err != nil {
			errs = append(errs, err)
		}
		_ = syscall.Rmdir(filepath.Dir(p.dir)) // wirefs.vif, when no other namespace uses it
	}
	p.unlock()
	return errors.Join(errs...)
}

// writable says whether changes can be made, as an EPERM error naming
// the reason (the door logs it).
func (p *Provider) writable() error {
	if p.err != nil {
		return ns.Errorf(syscall.EPERM, "vif: %v", p.err)
	}
	if p.closed {
		return ns.Errorf(syscall.ENODEV, "vif: closed")
	}
	return nil
}

// caller is who makes a change.
func (p *Provider) caller(ctx context.Context) ns.Caller {
	if p.o.Caller != nil {
		if c, ok := p.o.Caller(ctx); ok {
			return c
		}
	}
	return ns.Caller{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())}
}

// iface is one real interface and its VIF tree.
type iface struct {
	name  string
	index int
	root  *VIF
	byID  map[uint16]*VIF
	up    bool // wirefs's HTB is on it
	ifb   int  // the index of its IFB (ingress), 0: none
}

// devs are the devices that carry ifc's VIFs as HTB classes: the
// interface (egress) and its IFB (ingress).
func (ifc *iface) devs() []int {
	if ifc.ifb != 0 {
		return []int{ifc.index, ifc.ifb}
	}
	return []int{ifc.index}
}

// ifaceLocked returns the tree of the interface named name, made on
// first use (the kernel is not touched until a change).
func (p *Provider) ifaceLocked(name string) (*iface, error) {
	index, err := ifIndex(name)
	if err != nil {
		delete(p.ifaces, name)
		return nil, ns.Errorf(syscall.ENOENT, "no interface %s", name)
	}
	if ifc, ok := p.ifaces[name]; ok {
		if ifc.index == index {
			return ifc, nil
		}
		delete(p.ifaces, name) // a new interface of that name
	}
	ifc := &iface{name: name, index: index, byID: map[uint16]*VIF{}}
	r := linkRate(name)
	ifc.root = newVIF(ifc, nil, name, rootID, 0, 0)
	ifc.root.rate, ifc.root.ceil = r, r
	ifc.byID[rootID] = ifc.root
	p.ifaces[name] = ifc
	return ifc, nil
}

// ensureUp puts wirefs's HTB with the root VIF's classes on ifc.
func (p *Provider) ensureUp(ifc *iface) error {
	if ifc.up {
		return nil
	}
	if err := p.load(); err != nil {
		return err
	}
	l, err := linkByIndex(ifc.index)
	if err != nil {
		return ns.Errorf(syscall.ENODEV, "%s: %v", ifc.name, err)
	}
	if err := setupHTB(l); err != nil {
		var r *refusal
		if errors.As(err, &r) {
			return ns.Errorf(syscall.EBUSY, "vif: %s", r.why)
		}
		return ns.Errorf(syscall.EIO, "vif: %v", err)
	}
	if p.inProg != nil {
		idx, err := setupIngress(l, p.inProg)
		if err != nil {
			p.log.Warn("vif: incoming traffic will not be shaped", "iface", ifc.name, "why", err.Error())
		}
		ifc.ifb = idx
	}
	ifc.up = true
	if err := p.applyNew(ifc.root); err != nil {
		removeHTB(ifc.name)
		if ifc.ifb != 0 {
			removeIngress(ifc.index)
		}
		ifc.up, ifc.ifb = false, 0
		return err
	}
	p.log.Info("vif: wirefs's htb qdisc is the root qdisc", "iface", ifc.name, "handle", fmt.Sprintf("%x:", Major))
	return nil
}
