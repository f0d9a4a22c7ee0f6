package sftp

import (
	"os"
	"sync"
	"time"

	"github.com/pkg/sftp"

	"wirefs/internal/remote"
)

// Temporaries opened ahead ("spares"). A whole-file store writes to a
// temporary name beside the file and renames it over the file, so that a
// failed upload never leaves part of the data under the file's name
// (Store). An SFTP write needs the handle that its open returns, so a
// small file's store waited for two answers before its rename: the
// temporary's open, then its write and close. While a program writes
// file after file into one directory (cp -r, tar x, a compiler's
// objects), the connection keeps the next store's temporary opened ahead
// there: a store that takes it sends its data, mode and close with the
// look at what the name holds, all at once, and waits for one answer.
//
// A spare is an empty file named .wirefs-spare-XXXXXXXX (remote.SpareName;
// listings leave it out), opened for the
// next small store in a directory once two came there within
// spareBurst of each other, and removed when no store took it within
// spareIdle, or when the session closes. A daemon that is killed leaves
// its spares behind, empty.
const (
	spareBurst = time.Second
	spareIdle  = 2 * time.Second
	// spareClose bounds the removal of the spares when the session
	// closes (a server that stopped answering).
	spareClose = 2 * time.Second
)

// spare is a temporary opened ahead.
type spare struct {
	name  string
	f     *sftp.File
	timer *time.Timer // removes it after spareIdle
}

// spares are a connection's temporaries opened ahead, one per directory.
type spares struct {
	mu      sync.Mutex
	ready   map[string]*spare    // by directory
	opening map[string]bool      // directories whose spare is being opened
	last    map[string]time.Time // the last small store in each directory, within spareBurst
	ended   bool
}

// takeSpare returns the temporary opened ahead in dir for a small store
// (nil: none), and opens the next store's when stores come in a burst.
func (c *conn) takeSpare(dir string) *spare {
	s := &c.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil
	}
	now := time.Now()
	sp := s.ready[dir]
	if sp != nil {
		delete(s.ready, dir)
		sp.timer.Stop()
	}
	burst := now.Sub(s.last[dir]) < spareBurst
	for d, at := range s.last {
		if now.Sub(at) >= spareBurst {
			delete(s.last, d)
		}
	}
	if s.last == nil {
		s.last, s.ready, s.opening = map[string]time.Time{}, map[string]*spare{}, map[string]bool{}
	}
	s.last[dir] = now
	if (sp != nil || burst) && !s.opening[dir] {
		s.opening[dir] = true
		if !c.background(func() { c.openSpare(dir) }) {
			delete(s.opening, dir)
		}
	}
	return sp
}

// openSpare opens a spare in dir. A directory where it cannot be made
// (no right to add files) has none: its stores open their own
// temporaries, and say why they cannot.
func (c *conn) openSpare(dir string) {
	name := remote.SpareName(dir)
	f, err := c.sftp.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	s := &c.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.opening, dir)
	if err != nil {
		return
	}
	if s.ended || s.ready[dir] != nil {
		c.background(func() { c.removeSpare(&spare{name: name, f: f}) })
		return
	}
	sp := &spare{name: name, f: f}
	sp.timer = time.AfterFunc(spareIdle, func() {
		s.mu.Lock()
		unused := s.ready[dir] == sp
		if unused {
			delete(s.ready, dir)
		}
		s.mu.Unlock()
		if unused {
			c.background(func() { c.removeSpare(sp) })
		}
	})
	s.ready[dir] = sp
}

// removeSpare closes and removes an unused spare.
func (c *conn) removeSpare(sp *spare) {
	sp.f.Close()
	c.sftp.Remove(sp.name)
}

// endSpares removes the unused spares when the session closes, waiting
// at most spareClose; no spare is opened after.
func (c *conn) endSpares() {
	s := &c.spares
	s.mu.Lock()
	s.ended = true
	left := make([]*spare, 0, len(s.ready))
	for _, sp := range s.ready {
		sp.timer.Stop()
		left = append(left, sp)
	}
	s.ready = nil
	s.mu.Unlock()
	if len(left) == 0 {
		return
	}
	done := make(chan struct{}, len(left))
	for _, sp := range left {
		go func() { c.removeSpare(sp); done <- struct{}{} }()
	}
	timeout := time.NewTimer(spareClose)
	defer timeout.Stop()
	for range left {
		select {
		case <-done:
		case <-timeout.C:
			return // closing the connection ends the removals left
		}
	}
}
