package session

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Watchdog fires when a connection makes no progress for its timeout while
// something waits on it (see the package comment). It costs no goroutine
// while nothing waits: one timer, armed lazily.
type Watchdog struct {
	stall func() // runs once, when a wait made no progress for the timeout

	timeout atomic.Int64 // time.Duration; <= 0: no bound
	last    atomic.Int64 // unix nanoseconds of the last arrival, or of the start of a wait after a quiet spell
	stalled atomic.Bool

	mu      sync.Mutex
	waits   int
	timer   *time.Timer
	due     time.Time // when the timer fires; zero when it is not armed
	stopped bool
	probe   func() // nil: no probing of an idle peer
	probing bool
	wg      sync.WaitGroup // a probe in progress
}

// NewWatchdog returns a watchdog with the given bound; stall (which may be
// nil) runs once, in its own goroutine, when it fires.
func NewWatchdog(timeout time.Duration, stall func()) *Watchdog {
	w := &Watchdog{stall: stall}
	w.timeout.Store(int64(timeout))
	w.last.Store(time.Now().UnixNano())
	w.timer = time.AfterFunc(time.Hour, w.check)
	w.timer.Stop()
	return w
}

// Probe makes the watchdog ask an idle peer for a sign of life: when
// nothing waits and nothing arrived for the timeout, probe runs in its own
// goroutine (one at a time). It should send a request the peer answers,
// bracketed by Begin and End, so that a peer that vanished stalls it.
func (w *Watchdog) Probe(probe func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.probe = probe
	w.arm(time.Now(), w.Timeout())
}

// Begin starts a wait on the peer; End ends it.
func (w *Watchdog) Begin() {
	w.mu.Lock()
	w.waits++
	if w.waits == 1 {
		// Time before a wait, with nothing waiting, is no stall.
		now := time.Now()
		w.last.Store(now.UnixNano())
		w.arm(now, w.Timeout())
	}
	w.mu.Unlock()
}

// End ends a wait that Begin started. The timer is left to notice.
func (w *Watchdog) End() {
	w.mu.Lock()
	w.waits--
	w.mu.Unlock()
}

// Arrived records progress: bytes came from the peer.
func (w *Watchdog) Arrived() { w.last.Store(time.Now().UnixNano()) }

// Stalled reports whether the watchdog fired.
func (w *Watchdog) Stalled() bool { return w.stalled.Load() }

// Timeout returns the bound.
func (w *Watchdog) Timeout() time.Duration { return time.Duration(w.timeout.Load()) }

// SetTimeout changes the bound, for waits in progress too.
func (w *Watchdog) SetTimeout(d time.Duration) {
	w.timeout.Store(int64(d))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waits > 0 || w.probe != nil {
		w.due = time.Time{} // the new bound may be shorter: re-arm
		now := time.Now()
		w.arm(now, d-now.Sub(time.Unix(0, w.last.Load())))
	}
}

// Stop disarms the watchdog for good: it never fires after Stop returns
// (a stall already running goes on). Wait waits for a probe in progress.
func (w *Watchdog) Stop() {
	w.mu.Lock()
	w.stopped = true
	w.timer.Stop()
	w.due = time.Time{}
	w.mu.Unlock()
}

// Wait waits for a probe in progress; call it after Stop.
func (w *Watchdog) Wait() { w.wg.Wait() }

// arm makes the timer fire within d of now, unless it fires sooner
// already. Called with mu held.
func (w *Watchdog) arm(now time.Time, d time.Duration) {
	if w.stopped || w.stalled.Load() || w.Timeout() <= 0 {
		return
	}
	d = max(d, 0)
	at := now.Add(d)
	if !w.due.IsZero() && !w.due.After(at) {
		return
	}
	w.due = at
	w.timer.Reset(d)
}

// check runs when the timer fires: it re-arms for the rest of the bound,
// fires, or probes.
func (w *Watchdog) check() {
	w.mu.Lock()
	w.due = time.Time{}
	if w.stopped || w.stalled.Load() {
		w.mu.Unlock()
		return
	}
	t := w.Timeout()
	now := time.Now()
	silent := now.Sub(time.Unix(0, w.last.Load()))
	var fire bool
	switch {
	case t <= 0:
	case silent < t:
		if w.waits > 0 || w.probe != nil {
			w.arm(now, t-silent)
		}
	case w.waits > 0:
		w.stalled.Store(true)
		fire = true
	case w.probe != nil:
		if !w.probing {
			w.probing = true
			w.wg.Add(1)
			go w.runProbe()
		}
		w.arm(now, t)
	}
	w.mu.Unlock()
	if fire && w.stall != nil {
		w.stall()
	}
}

func (w *Watchdog) runProbe() {
	defer w.wg.Done()
	w.probe()
	w.mu.Lock()
	w.probing = false
	w.mu.Unlock()
}

// Watched is a net.Conn under a Watchdog.
type Watched struct {
	net.Conn
	dog   *Watchdog
	waits bool // each Read and Write is a wait
}

// Watch returns c under a new watchdog of the given bound for which each
// Read and Write is a wait. When it fires, stall runs first (when not
// nil: to end the connection for that reason, before any call sees the
// failure), then c's deadlines are moved to the past, so that the blocked
// call and every later one fail with a timeout (os.ErrDeadlineExceeded).
func Watch(c net.Conn, timeout time.Duration, stall func()) *Watched {
	return &Watched{Conn: c, waits: true, dog: NewWatchdog(timeout, func() {
		if stall != nil {
			stall()
		}
		c.SetDeadline(time.Unix(1, 0))
	})}
}

// Observe returns c reporting what arrives from the peer to dog, whose
// waits the caller brackets: for a connection that a library reads all
// the time, whether or not a request waits (SSH).
func Observe(c net.Conn, dog *Watchdog) *Watched { return &Watched{Conn: c, dog: dog} }

// Watchdog returns the connection's watchdog.
func (c *Watched) Watchdog() *Watchdog { return c.dog }

// SetTimeout changes the bound of the connection's watchdog.
func (c *Watched) SetTimeout(d time.Duration) { c.dog.SetTimeout(d) }

func (c *Watched) Read(p []byte) (int, error) {
	if c.waits {
		c.dog.Begin()
		defer c.dog.End()
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.dog.Arrived()
	}
	return n, err
}

func (c *Watched) Write(p []byte) (int, error) {
	if c.waits {
		c.dog.Begin()
		defer c.dog.End()
	}
	return c.Conn.Write(p)
}

// Close stops a watchdog of its own and closes the connection.
func (c *Watched) Close() error {
	if c.waits {
		c.dog.Stop()
	}
	return c.Conn.Close()
}

// Reader is an io.Reader under a Watchdog: each Read is a wait.
type Reader struct {
	r   io.Reader
	dog *Watchdog
}

// WatchReader returns r under a new watchdog of the given bound; stall
// runs when it fires and must make the blocked Read return (cancel the
// request it reads).
func WatchReader(r io.Reader, timeout time.Duration, stall func()) *Reader {
	return &Reader{r: r, dog: NewWatchdog(timeout, stall)}
}

func (r *Reader) Read(p []byte) (int, error) {
	r.dog.Begin()
	n, err := r.r.Read(p)
	if n > 0 {
		r.dog.Arrived()
	}
	r.dog.End()
	return n, err
}

// Stalled reports whether the reader's watchdog fired.
func (r *Reader) Stalled() bool { return r.dog.Stalled() }

// Stop disarms the reader's watchdog (when the reader is closed).
func (r *Reader) Stop() { r.dog.Stop() }
