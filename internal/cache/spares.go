package cache

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// spareTarget is how many empty data files a session keeps created ahead.
const spareTarget = 32

// spares are empty data files created ahead of need by a background
// goroutine, so that a cold read does not wait for the creation of its
// data file: creating an inode can cost far more than the network round
// trips of a small file (~0.25-0.5 ms on some ext4 file systems, against
// ~20 µs for a rename or an open). A spare is an ID.data without a
// record, which New removes like any data file whose record never made
// it.
//
// The filler runs at the lowest CPU priority (nice 19, on a thread of
// its own), and prefetch takes only spares (spareFor): files fetched
// ahead are created with the CPU that nothing else wants. Creating them
// at the daemon's priority made a prefetching daemon CPU-bound, and a
// program's stat meanwhile waited for it (+4 to +26 ms at 10 ms RTT,
// bench/RESULTS.md "Foreground stat during prefetch"). A program's own
// read creates its file itself when no spare is ready.
type spares struct {
	mu      sync.Mutex
	ids     []string
	filling bool
	added   chan struct{} // closed when a spare is added (spareFor waits on it)
}

// takeSpare returns the id of an empty data file in t.dir, or "" when none
// is ready (then the caller creates its own), and keeps the pool filled.
func (t *tree) takeSpare() string {
	s := &t.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.takeSpareLocked()
}

func (t *tree) takeSpareLocked() string {
	s := &t.spares
	id := ""
	if n := len(s.ids); n > 0 {
		id, s.ids = s.ids[n-1], s.ids[:n-1]
	}
	if !s.filling && len(s.ids) < spareTarget/2 {
		s.filling = t.spawn(t.fillSpares)
	}
	return id
}

// spareFor waits for a spare for a file fetched ahead ("" and an error
// when ctx ends or the filler cannot make one).
func (t *tree) spareFor(ctx context.Context) (string, error) {
	s := &t.spares
	for {
		s.mu.Lock()
		id := t.takeSpareLocked()
		if id == "" && !s.filling {
			s.mu.Unlock()
			return "", syscall.ENOSPC // the filler stopped: it could not create one
		}
		if s.added == nil {
			s.added = make(chan struct{})
		}
		added := s.added
		s.mu.Unlock()
		if id != "" {
			return id, nil
		}
		select {
		case <-added:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// putSpare gives back a spare that was not used.
func (t *tree) putSpare(id string) {
	s := &t.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, id)
}

func (t *tree) fillSpares() {
	// A thread of its own at nice 19, ended with the goroutine (the
	// priority is the thread's, and must not pass to other goroutines).
	runtime.LockOSThread()
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
	s := &t.spares
	for t.ctx.Err() == nil {
		s.mu.Lock()
		if len(s.ids) >= spareTarget {
			s.filling = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		// Not while a program waits for a stat's answer: this
		// goroutine's system calls hold the daemon's P (procs.go)
		// until the runtime takes it back.
		if t.gate.quiet(t.ctx) != nil {
			break
		}
		id := newID()
		fd, err := syscall.Open(filepath.Join(t.dir, id+".data"), syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			break // the demand path creates its own and reports why
		}
		syscall.Close(fd)
		s.mu.Lock()
		s.ids = append(s.ids, id)
		if s.added != nil {
			close(s.added)
			s.added = nil
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.filling = false
	if s.added != nil {
		close(s.added) // waiters see the filler stopped
		s.added = nil
	}
	s.mu.Unlock()
}

// removeSpares deletes the unused spares (at close, after every goroutine
// ended).
func (t *tree) removeSpares() {
	s := &t.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.ids {
		os.Remove(filepath.Join(t.dir, id+".data"))
	}
	s.ids = nil
}
