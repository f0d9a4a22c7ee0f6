package cache

import (
	"context"

	"wirefs/internal/remote"
)

// Opening ahead for appends. An append write-back over SFTP or 9P is two
// round trips, the open and the data; the close(2) that waits for it
// pays both. Once a program has opened a file with O_APPEND (or while a
// write-back of the file runs and another closer waits for the next), a
// write-back of appended bytes is coming: the file is opened on the
// server then, in the background, and the write-back that comes uses
// that open file (remote.AppendOpener), paying for the data only. With
// four appenders on one file, their write-backs now follow each other a
// round trip apart instead of two.
//
// The server's file is never opened before a program's open(2) named
// it, so the data reach the file that open named, as when the write-back
// opens it itself; a file opened ahead and not used is closed when its
// last handle is.

// openedAhead is a file being opened, or opened, ahead of its write-back.
type openedAhead struct {
	path  string        // the path opened: the file may be renamed since
	ready chan struct{} // closed when the open ended
	af    remote.AppendFile
	err   error
}

// openAhead starts opening f for appending unless that is under way, f's
// changes are not sent at close, or the server's file is not known to
// exist (a new file is stored whole). A file stored while written is
// known to exist by its base: its version is known once it is clean.
func (f *file) openAhead() {
	t := f.t
	ao, ok := t.w.(remote.AppendOpener)
	if !ok {
		return
	}
	if _, twrite := t.bounds(f.path); twrite != 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	exists := f.version.Size >= 0 || (f.dirty && f.base >= 0)
	if f.appendAhead != nil || f.removed || !exists || !t.enter() {
		return
	}
	a := &openedAhead{path: f.path, ready: make(chan struct{})}
	f.appendAhead = a
	go func() {
		defer t.wg.Done()
		a.af, a.err = ao.OpenAppend(t.ctx, a.path)
		close(a.ready)
	}()
}

// takeAhead returns the file opened ahead for path p, or nil. One that
// was opened for another path (f was renamed) is closed.
func (f *file) takeAhead(ctx context.Context, p string) remote.AppendFile {
	f.mu.Lock()
	a := f.appendAhead
	f.appendAhead = nil
	f.mu.Unlock()
	if a == nil {
		return nil
	}
	select {
	case <-a.ready:
	case <-ctx.Done():
		a.close()
		return nil
	}
	if a.err != nil || a.path != p {
		a.close()
		return nil
	}
	return a.af
}

// dropAheadLocked closes the file opened ahead, if any.
func (f *file) dropAheadLocked() {
	if a := f.appendAhead; a != nil {
		f.appendAhead = nil
		a.close()
	}
}

// close closes a's file once it is open, without waiting.
func (a *openedAhead) close() {
	go func() {
		<-a.ready
		if a.af != nil {
			a.af.Close()
		}
	}()
}
