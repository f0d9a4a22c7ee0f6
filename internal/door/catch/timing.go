package catch

import (
	"fmt"
	"io"
	"math/bits"
	"sync/atomic"
	"time"
)

// Where a trapped call spends its time in the supervisor, when asked
// (Options.Timing, `wirefs run --timing`): the measurement behind
// bench/catch.sh. Off, it costs one nil test per phase.
//
// What the supervisor cannot see is the kernel's part: the trap, the two
// context switches and the wake-ups. bench/catch.sh gets it as the time
// per call of a stat loop under wirefs run, minus the native loop, minus
// the phases below.

// phase is one step of serving a trapped call.
type phase int

const (
	phReadPath phase = iota // process_vm_readv of the path (and a second read for long names)
	phDecide                // the local-name tests, the /proc lookups of relative names, route
	phReply                 // SECCOMP_IOCTL_NOTIF_SEND of a local name's CONTINUE (with the synchronous wake-up the target runs on this CPU before the call returns: not all of it is the supervisor's)
	phResolve               // Namespace.Resolve of a namespace name
	phCreds                 // the caller's uid and gid from /proc/TID/status
	phOpen                  // the provider's Open (a connect, for tcp/)
	phInject                // handing over: fcntl, ADDFD with SEND, closing our copy; or a result written to /proc/TID/mem
	phDoor                  // calls made on the private door (stat, access, open by name...)
	nPhases
)

var phaseNames = [nPhases]string{"read path", "decide", "reply (CONTINUE)", "resolve", "creds", "provider open", "inject fd", "private door"}

// timing adds up the time of each phase, and counts its durations in
// buckets of a quarter of an octave for the median: means are pulled up
// by the odd call that waited for a CPU on a loaded machine.
type timing struct {
	calls   [nPhases]atomic.Uint64
	ns      [nPhases]atomic.Uint64
	buckets [nPhases][nBuckets]atomic.Uint64
}

const nBuckets = 4 * 40 // up to 2^40 ns

// bucket is the bucket of a duration of d ns: 4 per power of two, one
// per nanosecond below 16.
func bucket(d uint64) int {
	if d < 16 {
		return int(d)
	}
	e := bits.Len64(d) - 1 // 2^e <= d
	b := 4*e + int(d>>(e-2)&3)
	return min(b, nBuckets-1)
}

// bucketStart is the shortest duration in bucket b.
func bucketStart(b int) uint64 {
	if b < 16 {
		return uint64(b)
	}
	e := b / 4
	return 1<<e | uint64(b%4)<<(e-2)
}

// median returns the start of the bucket that holds phase p's median.
func (t *timing) median(p phase) uint64 {
	n := t.calls[p].Load()
	var seen uint64
	for b := range nBuckets {
		if seen += t.buckets[p][b].Load(); 2*seen >= n {
			return bucketStart(b)
		}
	}
	return 0
}

// newTiming returns a timing when o asks for one, else nil.
func newTiming(o Options) *timing {
	if o.Timing == nil {
		return nil
	}
	return new(timing)
}

// start returns the time a phase starts, or the zero time when t is nil.
func (t *timing) start() time.Time {
	if t == nil {
		return time.Time{}
	}
	return time.Now()
}

// end counts a phase that started at t0 and returns the time it ended.
func (t *timing) end(p phase, t0 time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	now := time.Now()
	t.count(p, now.Sub(t0))
	return now
}

// count counts one call of phase p that took d.
func (t *timing) count(p phase, d time.Duration) {
	t.calls[p].Add(1)
	t.ns[p].Add(uint64(d))
	t.buckets[p][bucket(uint64(d))].Add(1)
}

// report writes one line per phase that ran: calls, total and mean.
func (t *timing) report(w io.Writer) {
	fmt.Fprintf(w, "wirefs run: supervisor time per phase\n%-16s %9s %10s %9s %9s\n", "phase", "calls", "total ms", "mean µs", "median µs")
	for p := range nPhases {
		n := t.calls[p].Load()
		if n == 0 {
			continue
		}
		ns := t.ns[p].Load()
		fmt.Fprintf(w, "%-16s %9d %10.2f %9.2f %9.2f\n", phaseNames[p], n, float64(ns)/1e6, float64(ns)/float64(n)/1e3, float64(t.median(p))/1e3)
	}
}
