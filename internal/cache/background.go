package cache

import (
	"sync"
	"time"
)

// backgroundLinger is how long the cache says it still works in the
// background after its last background request ended: a cold grep -r
// pauses its prefetch between directories and at every stat (gate.ask),
// and the daemon's answer to "working" (cmd/wirefs/procs.go: more Ps)
// costs a stop of the world each way.
const backgroundLinger = 250 * time.Millisecond

// working tells OnBackground's function when background work starts and
// ends, across every server of the cache.
type working struct {
	mu     sync.Mutex
	f      func(bool)
	n      int         // background requests in flight
	on     bool        // f was last told true
	linger *time.Timer // pending "false" after the last request ended
	gen    int         // which linger is pending
	closed bool
}

// OnBackground sets f, which the cache calls with true when background
// work (prefetch, readdir-ahead) starts on any of its servers, and with
// false once none has been in flight for a while (and at Close). The
// daemon uses it to give that work CPUs of its own, so that a program's
// requests, handled in the same process, do not queue behind it. f is
// called with none of the cache's locks but its own held, one call at a
// time; it must not call the cache.
func (c *Cache) OnBackground(f func(working bool)) {
	w := &c.working
	w.mu.Lock()
	defer w.mu.Unlock()
	w.f = f
}

// note counts delta background requests starting (1) or ending (-1).
func (w *working) note(delta int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += delta
	switch {
	case w.n > 0 && w.linger != nil:
		w.linger.Stop()
		w.linger = nil
	case w.n > 0 && !w.on && !w.closed && w.f != nil:
		w.on = true
		w.f(true)
	case w.n == 0 && w.on:
		w.gen++
		gen := w.gen
		w.linger = time.AfterFunc(backgroundLinger, func() { w.idle(gen) })
	}
}

// idle says the background work ended, unless some started meanwhile
// (then the linger gen is not the pending one).
func (w *working) idle(gen int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen == w.gen && w.linger != nil && w.n == 0 && w.on {
		w.linger, w.on = nil, false
		w.f(false)
	}
}

// close says the work ended, at the cache's Close.
func (w *working) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.linger != nil {
		w.linger.Stop()
		w.linger = nil
	}
	if w.on {
		w.on = false
		w.f(false)
	}
}
