package catch

import (
	"fmt"
	"io"
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
	phReply                 // SECCOMP_IOCTL_NOTIF_SEND of a local name's CONTINUE
	phResolve               // Namespace.Resolve of a namespace name
	phCreds                 // the caller's uid and gid from /proc/TID/status
	phOpen                  // the provider's Open (a connect, for tcp/)
	phInject                // handing over: fcntl, ADDFD with SEND, closing our copy; or a result written to /proc/TID/mem
	phDoor                  // calls made on the private door (stat, access, open by name...)
	nPhases
)

var phaseNames = [nPhases]string{"read path", "decide", "reply (CONTINUE)", "resolve", "creds", "provider open", "inject fd", "private door"}

// timing adds up the time of each phase.
type timing struct {
	calls [nPhases]atomic.Uint64
	ns    [nPhases]atomic.Uint64
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
	t.calls[p].Add(1)
	t.ns[p].Add(uint64(now.Sub(t0)))
	return now
}

// report writes one line per phase that ran: calls, total and mean.
func (t *timing) report(w io.Writer) {
	fmt.Fprintf(w, "wirefs run: supervisor time per phase\n%-16s %9s %10s %9s\n", "phase", "calls", "total ms", "mean µs")
	for p := range nPhases {
		n := t.calls[p].Load()
		if n == 0 {
			continue
		}
		ns := t.ns[p].Load()
		fmt.Fprintf(w, "%-16s %9d %10.2f %9.2f\n", phaseNames[p], n, float64(ns)/1e6, float64(ns)/float64(n)/1e3)
	}
}
