package sftp

import (
	"os"
	"strings"
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
// objects), the session keeps the next store's temporary opened ahead
// there: a store that takes it sends its data, mode and close with the
// look at what the name holds, all at once, and waits for one answer.
//
// A spare is an empty file named .wirefs-spare-XXXXXXXX (remote.SpareName;
// listings leave it out), opened for the next small store in a directory
// once two came there within spareBurst of each other, and removed when
// no store took it within three times the time between the last two
// (at least spareIdleMin, at most spareIdleMax: it is visible on the
// server meanwhile, to diff -r there), before the directory is removed or
// renamed through this session (rm -rf right after a build), or when the
// session closes. A daemon that is killed leaves its spares behind, empty;
// another client that removes the directory meanwhile finds it not empty.
const (
	spareBurst = time.Second
	// spareClose bounds the removal of the spares when the session
	// closes (a server that stopped answering).
	spareClose = 2 * time.Second
)

// Bounds of how long an unused spare is kept (variables: tests that take
// spares on a loaded machine lengthen the shortest). At least half a
// second: a compiler's objects come one per compile, and a spare gone
// before the next one costs it two round trips.
var (
	spareIdleMin = 500 * time.Millisecond
	spareIdleMax = 2 * time.Second
)

// spare is a temporary opened ahead on connection c.
type spare struct {
	c     *conn
	name  string
	f     *sftp.File
	timer *time.Timer // removes it when unused
}

// spares are a session's temporaries opened ahead, one per directory.
type spares struct {
	mu      sync.Mutex
	ready   map[string]*spare        // by directory
	opening map[string]chan struct{} // directories whose spare is being opened; closed when done
	last    map[string]time.Time     // the last small store in each directory, within spareBurst
}

// takeSpare returns the temporary opened ahead on c in dir for a small
// store (nil: none), and opens the next store's when stores come in a
// burst.
func (b *backend) takeSpare(c *conn, dir string) *spare {
	s := &b.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last, s.ready, s.opening = map[string]time.Time{}, map[string]*spare{}, map[string]chan struct{}{}
	}
	sp := s.ready[dir]
	if done := s.opening[dir]; sp == nil && done != nil {
		// A spare is on its way here, less than a round trip off
		// (stores that overlap: make -j2): waiting for it costs less
		// than a temporary of our own, whose open is a round trip
		// before the data and whose rename another after them.
		s.mu.Unlock()
		<-done
		s.mu.Lock()
		sp = s.ready[dir]
	}
	now := time.Now()
	if sp != nil {
		delete(s.ready, dir)
		sp.timer.Stop()
		if sp.c != c { // opened on a connection that this store does not use
			b.dropSpare(sp)
			sp = nil
		}
	}
	gap := now.Sub(s.last[dir])
	burst := gap < spareBurst
	for d, at := range s.last {
		if now.Sub(at) >= spareBurst {
			delete(s.last, d)
		}
	}
	s.last[dir] = now
	if (sp != nil || burst) && s.opening[dir] == nil {
		done := make(chan struct{})
		s.opening[dir] = done
		idle := min(max(3*gap, spareIdleMin), spareIdleMax)
		if !c.background(func() { b.openSpare(c, dir, idle, done) }) {
			delete(s.opening, dir)
		}
	}
	return sp
}

// openSpare opens a spare in dir on c, removed when unused for idle, then
// closes done. A directory where
// it cannot be made (no right to add files) has none: its stores open
// their own temporaries, and say why they cannot.
func (b *backend) openSpare(c *conn, dir string, idle time.Duration, done chan struct{}) {
	name := remote.SpareName(dir)
	f, err := c.sftp.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	s := &b.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(done)
	if s.opening[dir] == done {
		delete(s.opening, dir)
	}
	if err != nil {
		return
	}
	sp := &spare{c: c, name: name, f: f}
	if s.ready[dir] != nil || c.Err() != nil {
		b.dropSpare(sp) // the session closed, or the directory went, meanwhile
		return
	}
	sp.timer = time.AfterFunc(idle, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ready[dir] == sp {
			delete(s.ready, dir)
			b.dropSpare(sp)
		}
	})
	s.ready[dir] = sp
}

// dropSpare closes and removes sp in the background (at once where the
// session is closing).
func (b *backend) dropSpare(sp *spare) {
	if !sp.c.background(func() { removeSpare(sp) }) {
		removeSpare(sp)
	}
}

func removeSpare(sp *spare) {
	sp.f.Close()
	sp.c.sftp.Remove(sp.name)
}

// dropSpares removes the spares in and below directory p before p is
// removed or renamed, waiting for those being opened there: the
// directory is then as the program left it. No new spare is opened there
// until stores come in a burst again.
func (b *backend) dropSpares(p string) {
	s := &b.spares
	under := func(dir string) bool { return dir == p || strings.HasPrefix(dir, p+"/") || p == "/" }
	for {
		s.mu.Lock()
		var wait chan struct{}
		for dir, done := range s.opening {
			if under(dir) {
				wait = done
				break
			}
		}
		if wait == nil {
			break
		}
		s.mu.Unlock()
		<-wait
	}
	var gone []*spare
	for dir, sp := range s.ready {
		if under(dir) {
			sp.timer.Stop()
			delete(s.ready, dir)
			gone = append(gone, sp)
		}
	}
	for dir := range s.last {
		if under(dir) {
			delete(s.last, dir)
		}
	}
	s.mu.Unlock()
	for _, sp := range gone {
		removeSpare(sp)
	}
}

// endSpares removes c's unused spares when the session closes, waiting
// at most spareClose; none is opened on c after.
func (b *backend) endSpares(c *conn) {
	s := &b.spares
	s.mu.Lock()
	var left []*spare
	for dir, sp := range s.ready {
		if sp.c == c {
			sp.timer.Stop()
			delete(s.ready, dir)
			left = append(left, sp)
		}
	}
	s.mu.Unlock()
	if len(left) == 0 {
		return
	}
	done := make(chan struct{}, len(left))
	for _, sp := range left {
		go func() { removeSpare(sp); done <- struct{}{} }()
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
