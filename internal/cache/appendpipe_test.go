package cache

import (
	"context"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// pipeBackend is a local backend whose appends can overlap, as over SFTP:
// StartAppend lands the bytes at once, in call order (the server's order),
// and its answer waits until the test releases it; a failure planned for
// a start lands nothing.
type pipeBackend struct {
	*localBackend
	started chan int      // the number of each StartAppend, as it is called
	release chan struct{} // closed: the answers come
	mu      sync.Mutex
	n       int
	fail    map[int]error // StartAppend number → its answer
}

var (
	_ remote.AppendOpener  = (*pipeBackend)(nil)
	_ remote.AppendStarter = (*pipeFile)(nil)
)

func newPipeBackend(t *testing.T) *pipeBackend {
	return &pipeBackend{localBackend: newLocalBackend(t), started: make(chan int, 16),
		release: make(chan struct{}), fail: map[int]error{}}
}

func (b *pipeBackend) OpenAppend(ctx context.Context, p string) (remote.AppendFile, error) {
	if _, err := os.Stat(b.local(p)); err != nil {
		return nil, localErr("append", p, err)
	}
	return &pipeFile{b: b, p: p}, nil
}

type pipeFile struct {
	b *pipeBackend
	p string
}

func (f *pipeFile) Append(ctx context.Context, r io.Reader, n int64) (int64, error) {
	return f.b.Append(ctx, f.p, r, n)
}

func (f *pipeFile) Close() {}

func (f *pipeFile) StartMax() int { return 1 << 15 }

func (f *pipeFile) StartAppend(data []byte) func(context.Context) error {
	b := f.b
	b.mu.Lock()
	b.n++
	n, fail := b.n, b.fail[b.n]
	b.mu.Unlock()
	if fail == nil {
		out, err := os.OpenFile(b.local(f.p), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			fail = localErr("append", f.p, err)
		} else {
			out.Write(data)
			out.Close()
		}
	}
	b.started <- n
	return func(ctx context.Context) error {
		select {
		case <-b.release:
			return fail
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// nextStart returns the number of the next StartAppend. It is bounded
// only so that a cache that does not overlap appends fails the test
// instead of hanging it.
func (b *pipeBackend) nextStart(t *testing.T) int {
	t.Helper()
	select {
	case n := <-b.started:
		return n
	case <-time.After(time.Minute):
		t.Fatal("no append started while the ones before it were unanswered")
		return 0
	}
}

// closer appends rec through its own handle and flushes, in a goroutine;
// the flush's result comes on the returned channel.
func closer(t *testing.T, n ns.Node, rec string) <-chan error {
	t.Helper()
	h := openNode(t, n, os.O_WRONLY|os.O_APPEND)
	if _, err := h.(ns.WriterAt).WriteAt(bg, []byte(rec), 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- h.(ns.Flusher).Flush(bg)
		h.Close()
	}()
	return done
}

// TestAppendsOverlap: while one closer's append is on its way, the next
// closers' appends go out behind it at once (not after its answer), land
// in order, and each close returns once its own bytes are answered.
func TestAppendsOverlap(t *testing.T) {
	b := newPipeBackend(t)
	_, _, n := cachedLog(t, b, b.localBackend, "start\n")
	var done []<-chan error
	for i, rec := range []string{"one\n", "two\n", "three\n"} {
		done = append(done, closer(t, n, rec))
		if got := b.nextStart(t); got != i+1 {
			t.Fatalf("start %d came as %d", i+1, got)
		}
	}
	// Three appends started and none answered: they overlap.
	close(b.release)
	for i, d := range done {
		if err := <-d; err != nil {
			t.Fatalf("close %d: %v", i+1, err)
		}
	}
	if got, _ := b.get("/log"); string(got) != "start\none\ntwo\nthree\n" {
		t.Fatalf("server has %q", got)
	}
	if f := n.(*file); f.isDirty() {
		t.Fatal("the file is still dirty after every close returned")
	}
}

// TestOverlappingAppendFails: the first of overlapping appends fails and
// lands nothing while the one behind it lands: both closes fail, the
// changes stay, and the retry writes them in place, so the server's file
// ends in our order.
func TestOverlappingAppendFails(t *testing.T) {
	b := newPipeBackend(t)
	b.fail[1] = ns.Errorf(syscall.EIO, "connection lost")
	_, _, n := cachedLog(t, b, b.localBackend, "start\n")
	first := closer(t, n, "one\n")
	b.nextStart(t)
	second := closer(t, n, "two\n")
	b.nextStart(t)
	close(b.release)
	for i, d := range []<-chan error{first, second} {
		if err := <-d; ns.Errno(err) != syscall.EIO {
			t.Fatalf("close %d: %v, want the first append's EIO", i+1, err)
		}
	}
	if got, _ := b.get("/log"); string(got) != "start\ntwo\n" {
		t.Fatalf("before the retry the server has %q", got)
	}
	h := openNode(t, n, os.O_WRONLY)
	if err := h.(ns.Syncer).Sync(bg); err != nil {
		t.Fatalf("retry: %v", err)
	}
	h.Close()
	if got, _ := b.get("/log"); string(got) != "start\none\ntwo\n" {
		t.Fatalf("after the retry the server has %q", got)
	}
}
