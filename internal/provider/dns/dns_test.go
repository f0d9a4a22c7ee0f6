package dns

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/resolve"
)

func testDir(t *testing.T) (ns.Dir, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	r := &resolve.Resolver{TTL: time.Hour, NegTTL: time.Hour, Timeout: 5 * time.Second,
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			calls.Add(1)
			switch host {
			case "two.test":
				return []netip.Addr{netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("::ffff:192.0.2.1")}, nil
			case "broken.test":
				return nil, errors.New("resolver exploded")
			case "flaky.test":
				return nil, &net.DNSError{Err: "server misbehaving", Name: host, IsTemporary: true}
			}
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}}
	return Dir(r), &calls
}

func readAll(t *testing.T, n ns.Node) string {
	t.Helper()
	h, err := n.(ns.Opener).Open(context.Background(), ns.Caller{}, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var b strings.Builder
	buf := make([]byte, 5)
	for off := int64(0); ; {
		k, err := h.(ns.ReaderAt).ReadAt(context.Background(), buf, off)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			return b.String()
		}
		b.Write(buf[:k])
		off += int64(k)
	}
}

func TestLookupAndRead(t *testing.T) {
	d, calls := testDir(t)
	ctx := context.Background()
	n, err := d.Lookup(ctx, "two.test")
	if err != nil {
		t.Fatal(err)
	}
	want := "192.0.2.1\n2001:db8::1\n"
	if got := readAll(t, n); got != want {
		t.Fatalf("dns/two.test = %q, want %q", got, want)
	}
	a, _ := n.Attr(ctx)
	if a.Size != int64(len(want)) || a.Mode != 0o444 {
		t.Fatalf("attr %+v", a)
	}
	if v, ok := n.(ns.Volatile); !ok || !v.Volatile() {
		t.Fatal("dns file is not volatile")
	}
	// Listed once cached; the second lookup is a cache hit.
	ents, err := d.ReadDir(ctx)
	if err != nil || len(ents) != 1 || ents[0].Name != "two.test" || ents[0].Attr.Size != int64(len(want)) {
		t.Fatalf("ReadDir = %+v, %v", ents, err)
	}
	d.Lookup(ctx, "two.test")
	if calls.Load() != 1 {
		t.Fatalf("%d queries, want 1", calls.Load())
	}
}

func TestNumericNames(t *testing.T) {
	d, calls := testDir(t)
	for name, want := range map[string]string{"127.0.0.1": "127.0.0.1\n", "::1": "::1\n", "fe80::1%lo": "fe80::1%lo\n"} {
		n, err := d.Lookup(context.Background(), name)
		if err != nil {
			t.Fatalf("dns/%s: %v", name, err)
		}
		if got := readAll(t, n); got != want {
			t.Fatalf("dns/%s = %q", name, got)
		}
	}
	if calls.Load() != 0 {
		t.Fatal("numeric names were queried")
	}
}

func TestLookupErrors(t *testing.T) {
	d, calls := testDir(t)
	for _, tt := range []struct {
		name  string
		errno syscall.Errno
	}{
		{"nosuch.invalid", syscall.ENOENT},
		{"missing.test", syscall.ENOENT},
		{"flaky.test", syscall.EAGAIN},
		{"broken.test", syscall.EIO},
		{"", syscall.EINVAL},
		{".x", syscall.EINVAL},
		{"-x", syscall.EINVAL},
		{"a..b", syscall.EINVAL},
		{"a b", syscall.EINVAL},
		{"a/b", syscall.EINVAL},
		{strings.Repeat("a", 254), syscall.EINVAL},
	} {
		_, err := d.Lookup(context.Background(), tt.name)
		if ns.Errno(err) != tt.errno {
			t.Errorf("dns/%q: %v (errno %v), want %v", tt.name, err, ns.Errno(err), tt.errno)
		}
	}
	if calls.Load() != 3 {
		t.Errorf("%d queries, want 3 (.invalid and malformed names are not asked)", calls.Load())
	}
	ents, _ := d.ReadDir(context.Background())
	if len(ents) != 0 {
		t.Errorf("failures listed: %+v", ents)
	}
}

func TestReadOnly(t *testing.T) {
	d, _ := testDir(t)
	n, err := d.Lookup(context.Background(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range []int{syscall.O_WRONLY, syscall.O_RDWR, syscall.O_WRONLY | syscall.O_TRUNC} {
		if _, err := n.(ns.Opener).Open(context.Background(), ns.Caller{}, fl); ns.Errno(err) != syscall.EROFS {
			t.Errorf("open flags %#x: %v, want EROFS", fl, err)
		}
	}
	h, _ := n.(ns.Opener).Open(context.Background(), ns.Caller{}, syscall.O_RDONLY)
	if k, err := h.(ns.ReaderAt).ReadAt(context.Background(), make([]byte, 4), 1000); k != 0 || err != nil {
		t.Fatalf("ReadAt past end = %d, %v", k, err)
	}
}

func TestDirAttr(t *testing.T) {
	d, _ := testDir(t)
	a, err := d.Attr(context.Background())
	if err != nil || !a.Mode.IsDir() || a.Mode.Perm() != 0o555 {
		t.Fatalf("attr %+v, %v", a, err)
	}
}
