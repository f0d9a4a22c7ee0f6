package fuse

import (
	"context"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// Stream files answer poll(2), select(2) and epoll with the readiness of
// what serves them (ns.Poll: the socket, the pipe, a server waiting for
// its client), and O_NONBLOCK reads and writes that would block fail with
// EAGAIN. This needs FUSE_POLL, which go-fuse gains from
// third_party/go-fuse-poll.patch. Stored files are always ready, as
// regular files are.

var _ fs.FilePoller = (*handle)(nil)

// pollState is a stream handle's part in polling: the kernel's latest
// wake-up for a waiting poller. Edge-triggered epoll asks only once; after
// the program has read everything (EAGAIN), it waits without asking
// again, so the EAGAIN re-arms that wake-up.
type pollState struct {
	mu   sync.Mutex
	wake func()
}

// unblocking are the events after which a read (want POLLIN) or a write
// (POLLOUT) does not block: the event itself, or an end.
func unblocking(want uint32) uint32 {
	ends := uint32(unix.POLLHUP | unix.POLLERR)
	if want&unix.POLLIN != 0 {
		ends |= unix.POLLRDHUP
	}
	return want | ends
}

func (h *handle) Poll(ctx context.Context, events uint32, notify func()) (uint32, syscall.Errno) {
	if h.stored {
		return ns.Poll(nil, events, nil), 0
	}
	if notify != nil {
		h.poll.mu.Lock()
		h.poll.wake = notify
		h.poll.mu.Unlock()
	}
	return ns.Poll(h.h, events, notify), 0
}

// wouldBlock reports whether an O_NONBLOCK read or write (want POLLIN or
// POLLOUT) of a stream must fail with EAGAIN, and then arranges for a
// waiting poller to be woken when it no longer would.
func (h *handle) wouldBlock(ctx context.Context, want uint32) bool {
	c, ok := ctx.(*fuse.Context)
	if h.stored || !ok || c.Flags&syscall.O_NONBLOCK == 0 {
		return false
	}
	if ns.Poll(h.h, want, nil)&unblocking(want) != 0 {
		return false
	}
	h.poll.mu.Lock()
	wake := h.poll.wake
	h.poll.mu.Unlock()
	if wake != nil && ns.Poll(h.h, want, wake) != 0 {
		wake() // ready since: the poller asks again at once
	}
	return true
}
