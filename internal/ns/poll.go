package ns

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Poller is a daemon-served stream handle that can tell whether a read or
// a write would block, so that a door can answer poll(2), select(2),
// epoll and O_NONBLOCK. Kernel objects need not implement it (their
// descriptor answers), nor do stored files (always ready, as regular
// files are).
type Poller interface {
	// Poll returns the events among want (POLLIN: a read returns at
	// once — data, end of file or an accepted client; POLLOUT) that
	// are ready now, with POLLHUP or POLLERR when the peer is gone.
	// When none is ready and wake is not nil, wake is called once,
	// later, when one may have become ready.
	Poll(want uint32, wake func()) uint32
}

// alwaysReady is what a file without readiness of its own reports, as the
// kernel does for regular files (DEFAULT_POLLMASK).
const alwaysReady = unix.POLLIN | unix.POLLOUT | 0x40 /* POLLRDNORM */ | 0x100 /* POLLWRNORM */

// Poll answers Poll for any handle: a Poller answers itself, a kernel
// object by its descriptor, anything else is always ready.
func Poll(h Handle, want uint32, wake func()) uint32 {
	switch p := h.(type) {
	case Poller:
		return p.Poll(want, wake)
	case KernelObject:
		f, err := p.KernelFile()
		if err != nil {
			return unix.POLLERR
		}
		return PollConn(f, want, wake)
	}
	return want & alwaysReady
}

// PollConn answers Poll for a kernel descriptor: a socket, a pipe.
func PollConn(c syscall.Conn, want uint32, wake func()) uint32 {
	rc, err := c.SyscallConn()
	if err != nil {
		return unix.POLLERR
	}
	ready := uint32(unix.POLLNVAL)
	// Control keeps the descriptor open while f runs.
	rc.Control(func(fd uintptr) { ready = pollFD(int(fd), want, wake) })
	return ready
}

func pollFD(fd int, want uint32, wake func()) uint32 {
	fds := []unix.PollFd{{Fd: int32(fd), Events: int16(want)}}
	for {
		if _, err := unix.Poll(fds, 0); !errors.Is(err, unix.EINTR) {
			break
		}
	}
	ready := uint32(uint16(fds[0].Revents))
	if ready != 0 || wake == nil {
		return ready
	}
	if err := watcher.watch(fd, want, wake); err != nil {
		// Cannot be watched: say ready, so that the program's read
		// blocks as it would without poll rather than wait forever.
		return want
	}
	return 0
}

// watcher wakes pollers when descriptors become ready: one epoll set for
// the process, each descriptor armed once (EPOLLONESHOT) per wait. It
// exists (a goroutine, an epoll descriptor) only while some descriptor is
// watched.
var watcher = &fdWatcher{wakes: map[int]watch{}}

type fdWatcher struct {
	mu      sync.Mutex
	epfd    int
	running bool
	wakes   map[int]watch
}

type watch struct {
	events uint32
	wake   func()
}

// pruneEvery bounds how long the watcher keeps a descriptor that was
// closed while watched (epoll forgets it silently when it is closed).
const pruneEvery = time.Second

func (w *fdWatcher) watch(fd int, want uint32, wake func()) error {
	ev := unix.EPOLLONESHOT | unix.EPOLLERR | unix.EPOLLHUP
	if want&unix.POLLIN != 0 {
		ev |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if want&unix.POLLOUT != 0 {
		ev |= unix.EPOLLOUT
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.epfd == 0 {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return os.NewSyscallError("epoll_create1", err)
		}
		w.epfd = epfd
	}
	if err := w.arm(fd, uint32(ev)); err != nil {
		return err
	}
	w.wakes[fd] = watch{uint32(ev), wake}
	if !w.running {
		w.running = true
		go w.run(w.epfd)
	}
	return nil
}

// arm (re)arms fd in the epoll set. A descriptor stays in the set after it
// fired (one-shot disarms it), until it is closed.
func (w *fdWatcher) arm(fd int, events uint32) error {
	e := &unix.EpollEvent{Events: events, Fd: int32(fd)}
	err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_MOD, fd, e)
	if errors.Is(err, unix.ENOENT) {
		err = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, e)
	}
	return err
}

func (w *fdWatcher) run(epfd int) {
	events := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(epfd, events, int(pruneEvery/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			n = 0
		}
		var fire []func()
		w.mu.Lock()
		for _, e := range events[:max(n, 0)] {
			if x, ok := w.wakes[int(e.Fd)]; ok {
				delete(w.wakes, int(e.Fd))
				fire = append(fire, x.wake)
			}
		}
		if n == 0 {
			w.prune()
		}
		stop := len(w.wakes) == 0
		if stop {
			w.running = false
			unix.Close(w.epfd)
			w.epfd = 0
		}
		w.mu.Unlock()
		for _, wake := range fire {
			wake()
		}
		if stop {
			return
		}
	}
}

// prune forgets descriptors that were closed while watched: epoll no
// longer has them. (A live one is re-armed with its own events: no
// change.)
func (w *fdWatcher) prune() {
	for fd, x := range w.wakes {
		e := &unix.EpollEvent{Events: x.events, Fd: int32(fd)}
		if unix.EpollCtl(w.epfd, unix.EPOLL_CTL_MOD, fd, e) != nil {
			delete(w.wakes, fd)
		}
	}
}
