package catch

import (
	"context"
	"time"
)

// A namespace call is served on the goroutine that received it: nearly
// every one is over in tens of microseconds (a loopback connect, a stat on
// the private door), and starting a receiver for each — a new goroutine,
// its stack grown anew, a thread woken to run it, and a target whose next
// call finds no receiver waiting — cost more than the call (connect+close
// took 175 µs against 21 µs raw). So that one that blocks (a concurrent
// server waiting for a client, a slow connect or DNS lookup) does not
// hold up the calls behind it, a watchdog looks at the calls being served
// every handoffAfter: one it sees twice has taken at least that long, and
// another receiver takes over; the serving goroutine ends once it has
// answered its call, so the number of receivers stays the same. The
// watchdog also ends the context of a call whose notification stopped
// standing (the target was interrupted or died), checked every
// watchEvery.
//
// A watchdog rather than a timer per call: arming a timer wakes Go's
// network poller, a thread switch per call on top of the two the trap
// costs. The watchdog runs only while namespace calls are being served,
// and stops after watchdogIdle without any.

// serving is a namespace call being served.
type serving struct {
	id        uint64             // the notification
	cancel    context.CancelFunc // ends the call's context
	ticks     int                // watchdog ticks that saw it (guarded by server.busyMu)
	handedOff bool               // another receiver took over (guarded by server.busyMu)
}

const (
	handoffAfter = time.Millisecond
	watchEvery   = 20 * time.Millisecond
	watchdogIdle = 50 * time.Millisecond
)

// serveInline serves the namespace call p of notification n on the
// receiving goroutine and reports whether that goroutine is still the
// receiver.
func (s *server) serveInline(n *notif, p pending) bool {
	ctx, cancel := context.WithCancel(s.ctx)
	c := &serving{id: n.ID, cancel: cancel}
	s.busyMu.Lock()
	if s.busy == nil {
		s.busy = map[*serving]struct{}{}
	}
	s.busy[c] = struct{}{}
	start := !s.watching
	s.watching = true
	s.busyMu.Unlock()
	if start {
		go s.watchdog()
	}
	p.serve(ctx, s, n)
	cancel()
	s.busyMu.Lock()
	delete(s.busy, c)
	handedOff := c.handedOff
	s.busyMu.Unlock()
	return !handedOff
}

// watchdog hands receiving over from calls that take long and cancels
// the calls whose notification stopped standing, until no call has been
// served for watchdogIdle.
func (s *server) watchdog() {
	t := time.NewTicker(handoffAfter)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-t.C:
		case <-s.ctx.Done():
			s.busyMu.Lock()
			s.watching = false
			s.busyMu.Unlock()
			return
		}
		var check []*serving
		s.busyMu.Lock()
		if len(s.busy) == 0 {
			if idle++; time.Duration(idle)*handoffAfter >= watchdogIdle {
				s.watching = false
				s.busyMu.Unlock()
				return
			}
		} else {
			idle = 0
		}
		for c := range s.busy {
			c.ticks++
			if c.ticks == 2 {
				c.handedOff = true
				s.nHandoffs.Add(1)
				go s.receive()
			}
			if time.Duration(c.ticks)*handoffAfter%watchEvery == 0 {
				check = append(check, c)
			}
		}
		s.busyMu.Unlock()
		for _, c := range check {
			if !s.valid(c.id) {
				c.cancel()
			}
		}
	}
}
