package resolve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"

	"time"
	"wirefs/internal/leakcheck"
)

// fakeDNS is an injected Lookup: it counts queries per name and answers
// from a table; names in block wait until their channel is closed.
type fakeDNS struct {
	mu      sync.Mutex
	calls   map[string]int
	answers map[string][]netip.Addr
	block   map[string]chan struct{}
	ctxs    map[string]context.Context
}

func newFake() *fakeDNS {
	return &fakeDNS{calls: map[string]int{}, answers: map[string][]netip.Addr{}, block: map[string]chan struct{}{}, ctxs: map[string]context.Context{}}
}

func (f *fakeDNS) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	f.calls[host]++
	f.ctxs[host] = ctx
	wait := f.block[host]
	f.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return slices.Clone(a), nil
}

func (f *fakeDNS) set(host string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var as []netip.Addr
	for _, s := range addrs {
		as = append(as, netip.MustParseAddr(s))
	}
	f.answers[host] = as
}

func (f *fakeDNS) blockOn(host string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(chan struct{})
	f.block[host] = c
	return c
}

func (f *fakeDNS) n(host string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[host]
}

func (f *fakeDNS) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := 0
	for _, n := range f.calls {
		t += n
	}
	return t
}

func newResolver(f *fakeDNS, ttl, negTTL time.Duration) *Resolver {
	return &Resolver{TTL: ttl, NegTTL: negTTL, Timeout: 10 * time.Second, Lookup: f.lookup}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestNewDefaults(t *testing.T) {
	r := New(time.Minute)
	if r.TTL != time.Minute || r.NegTTL != 5*time.Second || r.Timeout <= 0 || r.Lookup == nil {
		t.Fatalf("New(1m) = TTL %v NegTTL %v Timeout %v", r.TTL, r.NegTTL, r.Timeout)
	}
	if r := New(time.Second); r.NegTTL != time.Second {
		t.Fatalf("NegTTL %v, want min(ttl, 5s) = 1s", r.NegTTL)
	}
}

func TestCacheHitWithinTTL(t *testing.T) {
	f := newFake()
	f.set("host.test", "192.0.2.1")
	r := newResolver(f, time.Hour, time.Hour)
	for i := 0; i < 5; i++ {
		got, err := r.Resolve(context.Background(), "host.test")
		if err != nil || !slices.Equal(got, addrs("192.0.2.1")) {
			t.Fatalf("Resolve = %v, %v", got, err)
		}
	}
	if n := f.n("host.test"); n != 1 {
		t.Fatalf("%d queries within the TTL, want 1", n)
	}
	if c := r.Cached(); !slices.Equal(c["host.test"], addrs("192.0.2.1")) || len(c) != 1 {
		t.Fatalf("Cached() = %v", c)
	}
}

func TestRequeryAfterTTL(t *testing.T) {
	// A bubble of fake time: its sleeps take no time and synctest.Wait
	// returns once every goroutine is blocked.
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.set("host.test", "192.0.2.1")
		r := newResolver(f, 50*time.Millisecond, time.Hour)
		if _, err := r.Resolve(context.Background(), "host.test"); err != nil {
			t.Fatal(err)
		}
		f.set("host.test", "192.0.2.2")
		if got, _ := r.Resolve(context.Background(), "host.test"); !slices.Equal(got, addrs("192.0.2.1")) {
			t.Fatalf("within TTL got %v", got)
		}
		time.Sleep(80 * time.Millisecond)
		if len(r.Cached()) != 0 {
			t.Fatalf("Cached() shows an expired answer: %v", r.Cached())
		}
		got, err := r.Resolve(context.Background(), "host.test")
		if err != nil || !slices.Equal(got, addrs("192.0.2.2")) {
			t.Fatalf("after TTL: %v, %v; want the new answer", got, err)
		}
		if n := f.n("host.test"); n != 2 {
			t.Fatalf("%d queries, want 2", n)
		}
	})
}

func TestNegativeTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake() // no answers: every name is "not found"
		r := newResolver(f, time.Hour, 50*time.Millisecond)
		for i := 0; i < 3; i++ {
			_, err := r.Resolve(context.Background(), "missing.test")
			var de *net.DNSError
			if !errors.As(err, &de) || !de.IsNotFound {
				t.Fatalf("Resolve = %v, want not found", err)
			}
		}
		if n := f.n("missing.test"); n != 1 {
			t.Fatalf("%d queries within the negative TTL, want 1", n)
		}
		if len(r.Cached()) != 0 {
			t.Fatalf("Cached() lists a failure: %v", r.Cached())
		}
		time.Sleep(80 * time.Millisecond)
		f.set("missing.test", "192.0.2.9")
		got, err := r.Resolve(context.Background(), "missing.test")
		if err != nil || !slices.Equal(got, addrs("192.0.2.9")) {
			t.Fatalf("after negative TTL: %v, %v", got, err)
		}
		if n := f.n("missing.test"); n != 2 {
			t.Fatalf("%d queries, want 2", n)
		}
		// The positive TTL (an hour) now applies.
		time.Sleep(80 * time.Millisecond)
		r.Resolve(context.Background(), "missing.test")
		if n := f.n("missing.test"); n != 2 {
			t.Fatalf("%d queries, want 2 (answer cached for TTL, not NegTTL)", n)
		}
	})
}

func TestConcurrentLookupsShareOneQuery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.set("shared.test", "192.0.2.1", "2001:db8::1")
		release := f.blockOn("shared.test")
		// A tiny TTL: only a query in flight can be shared, not a cached one.
		r := newResolver(f, time.Nanosecond, time.Nanosecond)
		const n = 50
		var started, done sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			started.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				started.Done()
				got, err := r.Resolve(context.Background(), "shared.test")
				if err == nil && !slices.Equal(got, addrs("192.0.2.1", "2001:db8::1")) {
					err = fmt.Errorf("got %v", got)
				}
				errs <- err
			}()
		}
		started.Wait()
		synctest.Wait() // every caller waits on the one query
		close(release)
		done.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if c := f.n("shared.test"); c != 1 {
			t.Fatalf("%d concurrent lookups made %d queries, want 1", n, c)
		}
	})
}

func TestSlowNameDoesNotBlockOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.set("slow.test", "192.0.2.1")
		f.set("fast.test", "192.0.2.2")
		release := f.blockOn("slow.test")
		defer close(release)
		r := newResolver(f, time.Hour, time.Hour)
		go r.Resolve(context.Background(), "slow.test")
		synctest.Wait() // the query is in flight
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		got, err := r.Resolve(ctx, "fast.test")
		if err != nil || !slices.Equal(got, addrs("192.0.2.2")) {
			t.Fatalf("fast lookup while slow one in flight: %v, %v", got, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("fast lookup took %v", d)
		}
	})
}

func TestCancelledCallerLeavesSharedQuery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.set("slow.test", "192.0.2.7")
		release := f.blockOn("slow.test")
		r := newResolver(f, time.Hour, time.Hour)

		other := make(chan error, 1)
		go func() {
			got, err := r.Resolve(context.Background(), "slow.test")
			if err == nil && !slices.Equal(got, addrs("192.0.2.7")) {
				err = fmt.Errorf("got %v", got)
			}
			other <- err
		}()
		synctest.Wait() // the query is in flight

		ctx, cancel := context.WithCancel(context.Background())
		go func() { synctest.Wait(); cancel() }()
		start := time.Now()
		_, err := r.Resolve(ctx, "slow.test")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled caller: err %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("cancelled caller waited %v", d)
		}
		// The query goes on for the other caller, on its own context.
		f.mu.Lock()
		qctx := f.ctxs["slow.test"]
		f.mu.Unlock()
		if qctx.Err() != nil {
			t.Fatalf("shared query's context ended with the caller's: %v", qctx.Err())
		}
		if _, ok := qctx.Deadline(); !ok {
			t.Errorf("shared query has no deadline (Timeout not applied)")
		}
		select {
		case err := <-other:
			t.Fatalf("other caller returned before the answer: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		close(release)
		select {
		case err := <-other:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("other caller never got the answer")
		}
		if c := f.n("slow.test"); c != 1 {
			t.Fatalf("%d queries, want 1", c)
		}
		// And the answer is cached for later callers.
		if got, err := r.Resolve(context.Background(), "slow.test"); err != nil || !slices.Equal(got, addrs("192.0.2.7")) || f.n("slow.test") != 1 {
			t.Fatalf("later caller: %v, %v (%d queries)", got, err, f.n("slow.test"))
		}
	})
}

func TestQueryTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.blockOn("hang.test") // never released: the query's own timeout ends it
		r := newResolver(f, time.Hour, time.Hour)
		r.Timeout = 50 * time.Millisecond
		start := time.Now()
		_, err := r.Resolve(context.Background(), "hang.test")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want deadline exceeded", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("query bounded by 50ms took %v", d)
		}
	})
}

func TestInvalidTLDNeverQueried(t *testing.T) {
	f := newFake()
	r := newResolver(f, time.Hour, time.Hour)
	for _, h := range []string{"nosuch.invalid", "invalid", "INVALID", "a.b.Invalid.", "x.invalid."} {
		_, err := r.Resolve(context.Background(), h)
		var de *net.DNSError
		if !errors.As(err, &de) || !de.IsNotFound || de.Name != h {
			t.Errorf("Resolve(%q) = %v, want a not-found DNSError", h, err)
		}
	}
	if n := f.total(); n != 0 {
		t.Fatalf(".invalid names made %d queries", n)
	}
	// Names that merely contain "invalid" are asked.
	for _, h := range []string{"invalid.test", "notinvalid", "x.invalidx"} {
		r.Resolve(context.Background(), h)
		if f.n(h) != 1 {
			t.Errorf("%q was not queried", h)
		}
	}
}

func TestNumericHostsBypass(t *testing.T) {
	f := newFake()
	r := newResolver(f, time.Hour, time.Hour)
	for _, h := range []string{"127.0.0.1", "::1", "fe80::1%eth0", "2001:db8::1", "::ffff:192.0.2.1"} {
		got, err := r.Resolve(context.Background(), h)
		if err != nil || len(got) != 1 || got[0] != netip.MustParseAddr(h) {
			t.Errorf("Resolve(%q) = %v, %v", h, got, err)
		}
	}
	if n := f.total(); n != 0 {
		t.Fatalf("numeric hosts made %d queries", n)
	}
	if len(r.Cached()) != 0 {
		t.Fatalf("numeric hosts cached: %v", r.Cached())
	}
}

func TestIPv4FirstAndUnmapped(t *testing.T) {
	f := newFake()
	f.set("mixed.test", "2001:db8::1", "192.0.2.1", "::1", "::ffff:192.0.2.2", "192.0.2.3", "fe80::1")
	r := newResolver(f, time.Hour, time.Hour)
	got, err := r.Resolve(context.Background(), "mixed.test")
	if err != nil {
		t.Fatal(err)
	}
	want := addrs("192.0.2.1", "192.0.2.2", "192.0.2.3", "2001:db8::1", "::1", "fe80::1")
	if !slices.Equal(got, want) {
		t.Fatalf("Resolve = %v, want %v (IPv4 first, stable, v4-mapped unmapped)", got, want)
	}
	for _, a := range got {
		if a.Is4In6() {
			t.Fatalf("%v is still v4-mapped", a)
		}
	}
}

func TestFlush(t *testing.T) {
	f := newFake()
	f.set("a.test", "192.0.2.1")
	r := newResolver(f, time.Hour, time.Hour)
	r.Resolve(context.Background(), "a.test")
	r.Flush()
	if len(r.Cached()) != 0 {
		t.Fatalf("Cached after Flush: %v", r.Cached())
	}
	r.Resolve(context.Background(), "a.test")
	if f.n("a.test") != 2 {
		t.Fatalf("Flush did not force a new query")
	}
}

func TestFlushDuringQuery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.set("a.test", "192.0.2.1")
		release := f.blockOn("a.test")
		r := newResolver(f, time.Hour, time.Hour)
		res := make(chan error, 1)
		go func() { _, err := r.Resolve(context.Background(), "a.test"); res <- err }()
		synctest.Wait() // the query is in flight
		r.Flush()
		close(release)
		if err := <-res; err != nil {
			t.Fatalf("caller of a query flushed in flight: %v", err)
		}
	})
}

func TestCacheBounded(t *testing.T) {
	var calls atomic.Int64
	r := &Resolver{TTL: time.Nanosecond, NegTTL: time.Nanosecond, Timeout: time.Second,
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			calls.Add(1)
			return addrs("192.0.2.1"), nil
		}}
	for i := 0; i < maxEntries+10; i++ {
		if _, err := r.Resolve(context.Background(), fmt.Sprintf("h%d.test", i)); err != nil {
			t.Fatal(err)
		}
	}
	r.mu.Lock()
	n := len(r.entries)
	r.mu.Unlock()
	if n > maxEntries {
		t.Fatalf("%d cache entries, bound is %d", n, maxEntries)
	}
}

func TestLookupErrorIsReturned(t *testing.T) {
	boom := &net.OpError{Op: "read", Net: "udp", Err: syscall.ECONNREFUSED}
	r := &Resolver{TTL: time.Hour, NegTTL: time.Hour, Timeout: time.Second,
		Lookup: func(context.Context, string) ([]netip.Addr, error) { return nil, boom }}
	_, err := r.Resolve(context.Background(), "x.test")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err %v", err)
	}
}

// TestServerThatNeverAnswers: a DNS server that reads queries and never
// replies (a real UDP socket) makes a lookup fail with a timeout once
// Timeout has passed, not hang; nothing of the query is left behind.
func TestServerThatNeverAnswers(t *testing.T) {
	base := leakcheck.Take(t)
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	asked := make(chan struct{})
	go func() {
		buf := make([]byte, 512)
		for first := true; ; first = false {
			if _, _, err := silent.ReadFrom(buf); err != nil {
				return
			}
			if first {
				close(asked)
			}
		}
	}()
	r := New(time.Minute)
	r.Timeout = 300 * time.Millisecond
	r.Lookup = ServerLookup(netip.MustParseAddrPort(silent.LocalAddr().String()))
	_, err = r.Resolve(context.Background(), "never-answered.example")
	select {
	case <-asked:
	default:
		t.Fatalf("the lookup returned (%v) without asking the server", err)
	}
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsTimeout {
		t.Fatalf("lookup from a silent server: %v (%T), want a DNS timeout", err, err)
	}
	silent.Close()
	base.Check(t)
}

func TestParseServer(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1": "127.0.0.1:53", "127.0.0.1:5353": "127.0.0.1:5353",
		"::1": "[::1]:53", "[::1]:5353": "[::1]:5353",
	} {
		if got, err := ParseServer(in); err != nil || got.String() != want {
			t.Errorf("ParseServer(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "localhost", "localhost:53", "127.0.0.1:0", "127.0.0.1:", "[::1]", "1.2.3.4:65536"} {
		if got, err := ParseServer(in); err == nil {
			t.Errorf("ParseServer(%q) = %v, want an error", in, got)
		}
	}
}

func FuzzParseServer(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "127.0.0.1:5353", "::1", "[::1]:53", "[fe80::1%eth0]:53", "host:53", ":53", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ap, err := ParseServer(s)
		if err != nil {
			return
		}
		if !ap.IsValid() || ap.Port() == 0 {
			t.Fatalf("ParseServer(%q) = %v", s, ap)
		}
		// What it parsed is what a --dns-server of its own spelling gives.
		if again, err := ParseServer(ap.String()); err != nil || again != ap {
			t.Fatalf("ParseServer(%q) = %v; its spelling gives %v, %v", s, ap, again, err)
		}
	})
}
