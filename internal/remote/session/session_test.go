package session

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
)

// fake is a protocol whose connections are counters: "refused" is the
// server's answer, "broken" breaks the connection.
type fake struct {
	dials   atomic.Int32
	dialErr error
	gate    chan struct{} // when not nil, dials wait for it (or ctx)
	hangups atomic.Int32
}

type fakeConn struct {
	*Line
	id int32
}

var (
	errRefused = errors.New("refused")
	errBroken  = errors.New("broken")
)

func (f *fake) session(t *testing.T) *Session[*fakeConn] {
	s := New(Protocol[*fakeConn]{
		Server: Server{Proto: "fake", Host: "me@host", ConnectTimeout: time.Second, Timeout: time.Second},
		Dial: func(ctx context.Context) (*fakeConn, error) {
			if f.gate != nil {
				select {
				case <-f.gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if f.dialErr != nil {
				return nil, f.dialErr
			}
			c := &fakeConn{id: f.dials.Add(1)}
			c.Line = NewLine(func() { f.hangups.Add(1) }, nil)
			return c, nil
		},
		Answer: func(op, p string, err error) (error, bool) {
			if errors.Is(err, errRefused) || err == io.EOF {
				if err == io.EOF {
					return err, true
				}
				return Server{Proto: "fake", Host: "me@host"}.Error(syscall.EACCES, op, p, err), true
			}
			return nil, false
		},
	})
	t.Cleanup(func() { s.Close() })
	return s
}

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if got := ns.Errno(err); got != want {
		t.Fatalf("%s: %v (errno %v), want %v", what, err, got, want)
	}
}

func TestDialOnceAndShare(t *testing.T) {
	f := &fake{gate: make(chan struct{})}
	s := f.session(t)
	var wg sync.WaitGroup
	ids := make(chan int32, 10)
	for range 10 {
		wg.Go(func() {
			id, err := Call(context.Background(), s, "stat", "/x", Always, func(c *fakeConn) (int32, error) { return c.id, nil }, nil)
			if err != nil {
				t.Error(err)
			}
			ids <- id
		})
	}
	time.Sleep(20 * time.Millisecond)
	close(f.gate)
	wg.Wait()
	close(ids)
	for id := range ids {
		if id != 1 {
			t.Errorf("a call ran on connection %d", id)
		}
	}
	if n := f.dials.Load(); n != 1 {
		t.Fatalf("%d dials for concurrent first calls, want 1", n)
	}
}

func TestRetryRule(t *testing.T) {
	for _, c := range []struct {
		name    string
		fresh   bool  // the connection is dialled by the call
		fail    error // the first attempt's error
		retry   Retry
		retried bool
	}{
		{"reused, dropped, idempotent", false, errBroken, Always, true},
		{"reused, dropped, never", false, errBroken, nil, false},
		{"fresh, dropped", true, errBroken, Always, false},
		{"reused, timed out", false, syscall.ETIMEDOUT, Always, false},
		{"reused, refused", false, errRefused, Always, false},
		{"reused, nothing sent", false, errBroken, Unsent(func() int64 { return 0 }), true},
		{"reused, data sent", false, errBroken, Unsent(func() int64 { return 1 }), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fake{}
			s := f.session(t)
			if !c.fresh {
				if err := s.Connect(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			var attempts atomic.Int32
			_, err := Call(context.Background(), s, "op", "/p", c.retry, func(fc *fakeConn) (struct{}, error) {
				if attempts.Add(1) == 1 {
					return struct{}{}, c.fail
				}
				return struct{}{}, nil
			}, nil)
			if got := attempts.Load() == 2; got != c.retried {
				t.Fatalf("retried: %v, want %v (err %v)", got, c.retried, err)
			}
			if c.retried && err != nil {
				t.Fatalf("the retry failed: %v", err)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	f := &fake{}
	s := f.session(t)
	ctx := context.Background()
	call := func(err error) error {
		_, e := Call(ctx, s, "read", "/f", nil, func(*fakeConn) (int, error) { return 0, err }, nil)
		return e
	}
	// The server's refusal: its errno, the connection stays.
	err := call(errRefused)
	wantErrno(t, "refused", err, syscall.EACCES)
	if err.Error() != "fake me@host: read /f: refused" {
		t.Errorf("message %q", err)
	}
	// The protocol's own error passes unchanged.
	own := ns.Errorf(syscall.ENOSPC, "fake me@host: read /f: full")
	if err := call(own); err != own {
		t.Errorf("own error became %v", err)
	}
	// End of file passes.
	if err := call(io.EOF); err != io.EOF {
		t.Errorf("EOF became %v", err)
	}
	if f.dials.Load() != 1 || f.hangups.Load() != 0 {
		t.Fatalf("answers cost the connection: %d dials, %d hangups", f.dials.Load(), f.hangups.Load())
	}
	// Anything else broke the connection: EIO, and it is dropped.
	err = call(errBroken)
	wantErrno(t, "broken", err, syscall.EIO)
	if !strings.HasPrefix(err.Error(), "fake me@host: read /f: lost the connection: broken") {
		t.Errorf("message %q", err)
	}
	if f.hangups.Load() != 1 {
		t.Fatal("a broken connection was not closed")
	}
	// A timeout: ETIMEDOUT.
	err = call(syscall.ETIMEDOUT)
	wantErrno(t, "timed out", err, syscall.ETIMEDOUT)
	if !strings.Contains(err.Error(), "no progress for 1s") {
		t.Errorf("message %q", err)
	}
	// A call on a connection that ended reports why it ended.
	c, _, _ := s.conn()
	s.Drop(c, s.Stalled())
	_, err = On(ctx, s, c, "read", "/f", func() (int, error) { return 0, errors.New("use of closed connection") }, nil)
	wantErrno(t, "on a stalled connection", err, syscall.ETIMEDOUT)
}

func TestDialErrors(t *testing.T) {
	ctx := context.Background()
	f := &fake{dialErr: syscall.ECONNREFUSED}
	err := f.session(t).Connect(ctx)
	wantErrno(t, "refused", err, syscall.ECONNREFUSED)
	if err.Error() != "fake me@host: connect: cannot connect: connection refused" {
		t.Errorf("message %q", err)
	}
	f = &fake{dialErr: ns.Errorf(syscall.EACCES, "authentication failed")}
	err = f.session(t).Connect(ctx)
	wantErrno(t, "refused login", err, syscall.EACCES)
	if err.Error() != "fake me@host: connect: authentication failed" {
		t.Errorf("message %q", err)
	}
}

// TestAbandon: a cancelled caller returns at once; the call runs to its
// end and its result is released; Close waits for it.
func TestAbandon(t *testing.T) {
	base := leakcheck.Take(t)
	f := &fake{}
	s := f.session(t)
	ctx, cancel := context.WithCancel(context.Background())
	unblock := make(chan struct{})
	released := make(chan int, 1)
	start := time.Now()
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := Call(ctx, s, "open", "/f", Always, func(*fakeConn) (int, error) {
		<-unblock
		return 42, nil
	}, func(v int) { released <- v })
	wantErrno(t, "cancelled", err, syscall.EINTR)
	if d := time.Since(start); d > time.Second {
		t.Errorf("the cancelled call returned after %v", d)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close did not wait for the abandoned call")
	case <-time.After(50 * time.Millisecond):
	}
	close(unblock)
	if v := <-released; v != 42 {
		t.Fatalf("released %d", v)
	}
	<-closed
	base.Check(t)

	_, err = Call(context.Background(), s, "stat", "/f", Always, func(*fakeConn) (int, error) { return 0, nil }, nil)
	wantErrno(t, "after Close", err, syscall.EIO)
}

func TestCloseStopsADial(t *testing.T) {
	f := &fake{gate: make(chan struct{})} // a dial that never completes
	s := f.session(t)
	done := make(chan error, 1)
	go func() { done <- s.Connect(context.Background()) }()
	time.Sleep(20 * time.Millisecond)
	s.Close()
	select {
	case err := <-done:
		wantErrno(t, "dial stopped by Close", err, syscall.EIO)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not stop the dial")
	}
}

func TestWhere(t *testing.T) {
	s := Server{Proto: "9p", Host: "h:564"}
	for _, c := range []struct{ op, p, want string }{
		{"stat", "/a", "9p h:564: stat /a"},
		{"connect", "", "9p h:564: connect"},
		{"", "", "9p h:564"},
	} {
		if got := s.Where(c.op, c.p); got != c.want {
			t.Errorf("Where(%q, %q) = %q, want %q", c.op, c.p, got, c.want)
		}
	}
	err := s.Errorf(syscall.ENOENT, "stat", "/a", "no such file (%w)", errRefused)
	if err.Error() != "9p h:564: stat /a: no such file (refused)" || ns.Errno(err) != syscall.ENOENT {
		t.Errorf("Errorf = %v (%v)", err, ns.Errno(err))
	}
	var e *ns.Error
	if !errors.As(err, &e) || e.Op != "stat" || e.Path != "/a" || !errors.Is(err, errRefused) {
		t.Errorf("the error does not keep op, path and cause: %#v", e)
	}
	err = s.Wrap("connect", "", Interrupted(canceled()))
	if err.Error() != "9p h:564: connect: context canceled" || !errors.Is(err, context.Canceled) || ns.Errno(err) != syscall.EINTR {
		t.Errorf("Wrap(Interrupted) = %v (%v)", err, ns.Errno(err))
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
