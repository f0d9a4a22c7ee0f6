package splice

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Pacer paces a transfer: a token bucket of bytes per second (a rate),
// the seed's schedule (after every N blocks, pause d), or both, and a
// switch that pauses it. Its settings may change while it runs; it is
// safe for the several goroutines of a split, merge or relay, which then
// share the rate. A nil *Pacer does not pace.
type Pacer struct {
	mu      sync.Mutex
	lim     *rate.Limiter // nil: no rate
	bps     float64
	n       int           // schedule: blocks per burst (0: none)
	d       time.Duration // schedule: pause after each burst
	count   int
	paused  bool
	resumed chan struct{} // closed by Resume
}

// NewPacer paces at bytesPerSec (0: no rate) and the schedule n, d
// (n = 0: none).
func NewPacer(bytesPerSec float64, n int, d time.Duration) *Pacer {
	p := &Pacer{}
	p.SetRate(bytesPerSec)
	p.SetSchedule(n, d)
	return p
}

// quantum is how long a burst at the rate may last: blocks are cut to
// this much so that a slow rate is smooth, and the bucket holds twice as
// much so that a late wake-up does not lose the time it overslept.
const quantum = 10 * time.Millisecond

// SetRate changes the rate (bytes per second; 0 removes it).
func (p *Pacer) SetRate(bytesPerSec float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bps = bytesPerSec
	if bytesPerSec <= 0 {
		p.lim = nil
		return
	}
	burst := max(int(bytesPerSec*2*quantum.Seconds()), 1024)
	if p.lim == nil {
		p.lim = rate.NewLimiter(rate.Limit(bytesPerSec), burst)
		// Start empty: the first bytes already pay their way.
		p.lim.ReserveN(time.Now(), burst)
		return
	}
	p.lim.SetLimit(rate.Limit(bytesPerSec))
	p.lim.SetBurst(burst)
}

// Rate is the rate in bytes per second, 0 for none.
func (p *Pacer) Rate() float64 {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bps
}

// SetSchedule sets the seed's schedule: after every n blocks, pause d.
func (p *Pacer) SetSchedule(n int, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.d, p.count = n, d, 0
}

// Pause stops the transfer after its current block until Resume.
func (p *Pacer) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused, p.resumed = true, make(chan struct{})
	}
}

// Resume lets a paused transfer go on.
func (p *Pacer) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resumed)
	}
}

// Paused reports whether the transfer is paused.
func (p *Pacer) Paused() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// chunk is how much one step may move: the block, or less at a slow rate.
func (p *Pacer) chunk(block int) int {
	if p == nil {
		return block
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lim == nil {
		return block
	}
	return min(block, max(int(p.bps*quantum.Seconds()), 512))
}

// wait is called after each step that moved n bytes: it waits while
// paused, for the tokens of n bytes, and for the schedule's pause.
func (p *Pacer) wait(ctx context.Context, n int) error {
	if p == nil {
		return ctx.Err()
	}
	p.mu.Lock()
	lim, paused, resumed := p.lim, p.paused, p.resumed
	var pause time.Duration
	if p.n > 0 {
		p.count++
		if p.count%p.n == 0 {
			pause = p.d
		}
	}
	p.mu.Unlock()
	if paused {
		select {
		case <-resumed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if lim != nil {
		for n > 0 {
			k := min(n, lim.Burst())
			if err := lim.WaitN(ctx, k); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			n -= k
		}
	}
	if pause > 0 {
		t := time.NewTimer(pause)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return ctx.Err()
}
