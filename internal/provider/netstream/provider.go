// Package netstream is the /net stream provider of seed 000: files under
// tcp/ and udp/ whose names are addresses, where open is connect, bind or
// accept. It knows nothing about FUSE or seccomp.
package netstream

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/resolve"
)

// Provider holds the state shared by tcp/ and udp/: the resolver, the bound
// servers and the live endpoints that listings show.
type Provider struct {
	Resolver       *resolve.Resolver
	ConnectTimeout time.Duration
	Log            *slog.Logger

	mu      sync.Mutex
	servers map[string]any // bind key -> *tcpListener or *udpServer
	live    map[uint64]liveEntry
	nextID  uint64
	since   time.Time
}

// New returns a provider that resolves names with r.
func New(r *resolve.Resolver, connectTimeout time.Duration, log *slog.Logger) *Provider {
	return &Provider{
		Resolver: r, ConnectTimeout: connectTimeout, Log: log,
		servers: map[string]any{}, live: map[uint64]liveEntry{}, since: time.Now(),
	}
}

// TCP returns the tcp/ directory; UDP the udp/ directory.
func (p *Provider) TCP() ns.Dir { return &protoDir{p: p, proto: "tcp"} }
func (p *Provider) UDP() ns.Dir { return &protoDir{p: p, proto: "udp"} }

// liveEntry is an open endpoint, shown by `ls tcp/`.
type liveEntry struct {
	proto, name string
	attr        ns.Attr
}

// track records an open endpoint and returns the function that forgets it.
func (p *Provider) track(proto, name string, c ns.Caller) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	id := p.nextID
	p.live[id] = liveEntry{proto: proto, name: name, attr: ns.Attr{Mode: 0o666, Mtime: time.Now(), Uid: c.Uid, Gid: c.Gid}}
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			delete(p.live, id)
			p.mu.Unlock()
		})
	}
}

// Live returns the number of open endpoints (for tests and the control file).
func (p *Provider) Live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live)
}

type protoDir struct {
	p     *Provider
	proto string
}

func (d *protoDir) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o555, Mtime: d.p.since, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

// Lookup never fails for a well-formed name: files exist on demand. Nothing
// is created until the name is opened, so lookups leave no clutter.
func (d *protoDir) Lookup(ctx context.Context, name string) (ns.Node, error) {
	n, err := ParseName(d.proto, name)
	if err != nil {
		return nil, err
	}
	return &endpoint{dir: d, name: name, parsed: n}, nil
}

// ReadDir lists the live connections and listeners, one row per name.
func (d *protoDir) ReadDir(context.Context) ([]ns.DirEntry, error) {
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	seen := map[string]bool{}
	var out []ns.DirEntry
	for _, e := range d.p.live {
		if e.proto != d.proto || seen[e.name] {
			continue
		}
		seen[e.name] = true
		out = append(out, ns.DirEntry{Name: e.name, Attr: e.attr})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// endpoint is a name under tcp/ or udp/.
type endpoint struct {
	dir    *protoDir
	name   string
	parsed Name
}

func (e *endpoint) Volatile() bool { return true }

// Attr shows the oldest live endpoint of this name, or a fresh file.
func (e *endpoint) Attr(context.Context) (ns.Attr, error) {
	p := e.dir.p
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *ns.Attr
	for _, l := range p.live {
		if l.proto == e.dir.proto && l.name == e.name && (best == nil || l.attr.Mtime.Before(best.Mtime)) {
			a := l.attr
			best = &a
		}
	}
	if best != nil {
		return *best, nil
	}
	return ns.Attr{Mode: 0o666, Mtime: time.Now(), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

func (e *endpoint) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	if e.dir.proto == "tcp" {
		return e.dir.p.openTCP(ctx, e.name, e.parsed, c)
	}
	return e.dir.p.openUDP(ctx, e.name, e.parsed, c)
}

// resolveEndpoint returns the addresses an endpoint names; "" is the
// unspecified address (any).
func (p *Provider) resolveEndpoint(ctx context.Context, ep Endpoint) ([]netip.AddrPort, error) {
	if ep.Host == "" {
		return []netip.AddrPort{netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(ep.Port))}, nil
	}
	addrs, err := p.Resolver.Resolve(ctx, ep.Host)
	if err != nil {
		if ns.Errno(err) == syscall.ENOENT {
			return nil, ns.Errorf(syscall.ENOENT, "%s: unknown host", ep.Host)
		}
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, ns.Errorf(syscall.ENOENT, "%s: no addresses", ep.Host)
	}
	out := make([]netip.AddrPort, len(addrs))
	for i, a := range addrs {
		out[i] = netip.AddrPortFrom(a, uint16(ep.Port))
	}
	return out, nil
}

// bindKey identifies a server's socket: one bind per key.
func bindKey(proto string, a netip.AddrPort) string { return proto + " " + a.String() }

// claimServer registers srv under key unless a server is already there, in
// which case it returns that server.
func (p *Provider) claimServer(key string, srv any) (existing any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.servers[key]; ok {
		return s
	}
	p.servers[key] = srv
	return nil
}

func (p *Provider) server(key string) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.servers[key]
}

func (p *Provider) dropServer(key string, srv any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.servers[key] == srv {
		delete(p.servers, key)
	}
}

// peerHost formats an address the way explicit-addressing headers spell it:
// numeric, IPv4 unmapped, IPv6 without brackets.
func peerHost(a netip.Addr) string { return a.Unmap().String() }

func addrPortOf(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.AddrPort()
	case *net.UDPAddr:
		return a.AddrPort()
	}
	return netip.AddrPort{}
}

// errRebind tells an opener that the server it found has closed.
var errRebind = errors.New("server closed: bind again")

// awaitRelease waits, for a caller that does not hold a bound server's
// file, until the server closes (errRebind) or the door's release lag
// ends (EACCES: someone else serves the port). `exec 3<&-; exec 3<
// tcp/8000` can find the old server still bound for a moment, because
// the door releases it after close(2) returned; the open then binds anew.
func awaitRelease(ctx context.Context, c ns.Caller, done <-chan struct{}, name string, opener uint32) error {
	t := time.NewTimer(c.ReleaseLag)
	defer t.Stop()
	select {
	case <-done:
		return errRebind
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return ns.Errorf(syscall.EACCES,
			"%s: the port is served by pid %d; only processes that hold its server file (the opener and the processes it forked while holding it) may open it again", name, opener)
	}
}

// gate is a lock whose waiters can give up when their context ends, so a
// blocked call on a shared handle never makes another one uninterruptible.
type gate chan struct{}

func newGate() gate { return make(gate, 1) }

func (g gate) lock(ctx context.Context) error {
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g gate) unlock() { <-g }
