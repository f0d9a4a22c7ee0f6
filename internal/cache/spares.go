package cache

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// spareTarget is how many empty data files a session keeps created ahead.
const spareTarget = 32

// spares are empty data files created ahead of need by a background
// goroutine, so that a cold read does not wait for the creation of its
// data file: creating an inode can cost far more than the network round
// trips of a small file (~0.5 ms on some ext4 directories, against ~20 µs
// for a rename or an open). A spare is an ID.data without a record, which
// New removes like any data file whose record never made it.
type spares struct {
	mu      sync.Mutex
	ids     []string
	filling bool
}

// takeSpare returns the id of an empty data file in t.dir, or "" when none
// is ready (then the caller creates its own), and keeps the pool filled.
func (t *tree) takeSpare() string {
	s := &t.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	id := ""
	if n := len(s.ids); n > 0 {
		id, s.ids = s.ids[n-1], s.ids[:n-1]
	}
	if !s.filling && len(s.ids) < spareTarget/2 {
		s.filling = t.spawn(t.fillSpares)
	}
	return id
}

func (t *tree) fillSpares() {
	s := &t.spares
	for t.ctx.Err() == nil {
		s.mu.Lock()
		if len(s.ids) >= spareTarget {
			s.filling = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		id := newID()
		fd, err := syscall.Open(filepath.Join(t.dir, id+".data"), syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			break // the demand path creates its own and reports why
		}
		syscall.Close(fd)
		s.mu.Lock()
		s.ids = append(s.ids, id)
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.filling = false
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
