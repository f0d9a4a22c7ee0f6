// Package resolve is the daemon's name resolver: a cache with a bounded TTL
// in front of the system resolver. Lookups of different names run in
// parallel and concurrent lookups of one name share a single query, so a
// slow lookup never blocks other opens (seed 000 §3).
package resolve

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// LookupFunc asks the system for a name's addresses.
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// Resolver caches answers for TTL (failures for NegTTL).
type Resolver struct {
	TTL     time.Duration // how long an answer is reused
	NegTTL  time.Duration // how long a failure is reused
	Timeout time.Duration // bound on one query
	Lookup  LookupFunc

	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	done    chan struct{} // closed when the query finished
	addrs   []netip.Addr
	err     error
	expires time.Time
}

// DefaultTimeout bounds one query unless a resolver says otherwise.
const DefaultTimeout = 10 * time.Second

// New returns a resolver that asks the system resolver.
func New(ttl time.Duration) *Resolver {
	return &Resolver{
		TTL:     ttl,
		NegTTL:  min(ttl, 5*time.Second),
		Timeout: DefaultTimeout,
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
	}
}

// ServerLookup asks the DNS server at server (UDP, TCP for truncated
// answers) instead of the servers of /etc/resolv.conf, whose other
// settings (search domains, ndots) and /etc/hosts still apply.
func ServerLookup(server netip.AddrPort) LookupFunc {
	r := &net.Resolver{
		PreferGo: true, // the system's getaddrinfo cannot be pointed at a server
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, server.String())
			if err != nil {
				return nil, err
			}
			// Go's resolver waits for an answer until its own deadline
			// (resolv.conf's timeout, 5 s), even for a lookup given up
			// long before: closing the socket when the try's context
			// ends leaves nothing behind the lookup.
			context.AfterFunc(ctx, func() { c.Close() })
			return c, nil
		},
	}
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		return r.LookupNetIP(ctx, "ip", host)
	}
}

// ParseServer parses a DNS server's address: an IP address, with a port
// (default 53) as in 127.0.0.1:5353 or [::1]:5353.
func ParseServer(s string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, 53), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("%q is not an IP address or ADDR:PORT", s)
	}
	return ap, nil
}

// Resolve returns host's addresses, IPv4 first (as getaddrinfo orders them
// for most configurations). Numeric hosts are returned as they are.
func (r *Resolver) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if isInvalidTLD(host) {
		// RFC 6761 §6.4: resolvers answer "no such name" for .invalid
		// without asking any server (tests rely on this to stay local).
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	r.mu.Lock()
	if r.entries == nil {
		r.entries = map[string]*entry{}
	}
	e := r.entries[host]
	if e != nil {
		select {
		case <-e.done:
			if time.Now().After(e.expires) {
				e = nil
			}
		default: // a query is in flight: share it
		}
	}
	if e == nil {
		if len(r.entries) >= maxEntries {
			r.purgeExpired()
		}
		e = &entry{done: make(chan struct{})}
		r.entries[host] = e
		go r.query(host, e)
	}
	r.mu.Unlock()
	select {
	case <-e.done:
		return e.addrs, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// maxEntries bounds the cache; past it, expired answers are dropped.
const maxEntries = 4096

func (r *Resolver) purgeExpired() {
	now := time.Now()
	for h, e := range r.entries {
		select {
		case <-e.done:
			if now.After(e.expires) {
				delete(r.entries, h)
			}
		default:
		}
	}
}

func isInvalidTLD(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "invalid" || strings.HasSuffix(h, ".invalid")
}

// query runs detached from any one caller's context: a caller that gives
// up must not fail the query for the others sharing it.
func (r *Resolver) query(host string, e *entry) {
	ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
	defer cancel()
	addrs, err := r.Lookup(ctx, host)
	for i := range addrs {
		addrs[i] = addrs[i].Unmap() // the system resolver may return v4-in-v6
	}
	ttl := r.TTL
	if err != nil {
		ttl = r.NegTTL
	}
	sortV4First(addrs)
	e.addrs, e.err, e.expires = addrs, err, time.Now().Add(ttl)
	close(e.done)
}

func sortV4First(a []netip.Addr) {
	slices.SortStableFunc(a, func(x, y netip.Addr) int {
		return cmp.Compare(v6rank(x), v6rank(y))
	})
}

func v6rank(a netip.Addr) int {
	if a.Unmap().Is4() {
		return 0
	}
	return 1
}

// Cached returns the names whose answers are cached and still valid.
func (r *Resolver) Cached() map[string][]netip.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]netip.Addr{}
	now := time.Now()
	for h, e := range r.entries {
		select {
		case <-e.done:
			if e.err == nil && now.Before(e.expires) {
				out[h] = e.addrs
			}
		default:
		}
	}
	return out
}

// Flush forgets every cached answer.
func (r *Resolver) Flush() {
	r.mu.Lock()
	r.entries = nil
	r.mu.Unlock()
}
