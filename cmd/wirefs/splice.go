package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"wirefs/internal/ns"
	"wirefs/internal/protocols"
	"wirefs/internal/provider/netstream"
	"wirefs/internal/splice"
)

const spliceLong = `Move everything SRC gives to DST inside the kernel (seed 002's dsplice):
splice(2) through a pipe between sockets, pipes and files, sendfile(2) from
a file to a socket, copy_file_range(2) between files. An end that the
daemon serves (no kernel object: a remote file not fully cached, an
explicit-addressing server) is copied through user space instead.

SRC and DST are local paths, namespace names resolved in this process (no
mount, no root): tcp/HOST:PORT connects, tcp/PORT listens and accepts one
client, sftp/USER@HOST/PATH, http://HOST/PATH, /net/tcp/... (the --prefix
is dropped); or - for stdin or stdout. A local file whose name starts
with a namespace root is written ./tcp/x.

Several DSTs split the stream: each gets all of it (tee(2)), a slow one
slows the others, a failing one stops the splice or, with --keep-going,
is reported while the rest go on. --merge SRC... DST recombines: blocks
from every SRC into DST in arrival order, each block written whole.
--both A B relays both ways (half-close passed on); with --fork and a
server A, one relay per accepted client, until interrupted.

--rate takes tc's units: 10mbit, 500kbit, 1gbit, 100kbps (kilobytes),
2MiB/s, kb/s. --schedule N,d is the seed's: after N blocks of --block
bytes, pause d (4,16ms). On a terminal a progress bar shows on stderr.
Exit status: 0 done, 1 failed (the message names the end and the cause),
2 bad command line, 130 interrupted (the bytes moved are printed).
`

type spliceOptions struct {
	rate, schedule, block string
	merge, both, fork     bool
	keepGoing, quiet      bool
	prefix                string
	ns                    nsConfig
}

// spliceCommand is wirefs splice [options] SRC DST [DST...].
func spliceCommand(reg *protocols.Registry) *cobra.Command {
	var o spliceOptions
	c := setup(&cobra.Command{
		Use:   "splice [options] SRC DST [DST...]",
		Short: "in-kernel copy, split, merge, relay",
		Long:  spliceLong,
		Args: func(c *cobra.Command, args []string) error {
			switch {
			case o.both && len(args) != 2:
				return usageErrorf(c, "--both wants A B, got %s", arguments(len(args)))
			case o.fork && !o.both:
				return usageErrorf(c, "--fork goes with --both")
			case o.both && o.merge:
				return usageErrorf(c, "--both and --merge do not go together")
			case len(args) < 2:
				return usageErrorf(c, "want SRC DST [DST...], got %s", arguments(len(args)))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runSplice(c, reg, &o, args)
		},
	})
	fl := c.Flags()
	fl.StringVar(&o.rate, "rate", "", "pace at `RATE` (tc units: 10mbit, 500kbit, 100kbps, 2MiB/s)")
	fl.StringVar(&o.schedule, "schedule", "", "the seed's schedule `N,d`: N blocks, then pause d (4,16ms)")
	fl.StringVar(&o.block, "block", "64k", "move at most `SIZE` per step (up to 1m)")
	fl.BoolVar(&o.merge, "merge", false, "SRC... DST: recombine several sources into the last name")
	fl.BoolVar(&o.both, "both", false, "A B: relay both ways, half-close passed on")
	fl.BoolVar(&o.fork, "fork", false, "with --both and a server A: one relay per accepted client")
	fl.BoolVar(&o.keepGoing, "keep-going", false, "split: report a failing DST and go on with the others")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar, no summary")
	fl.StringVar(&o.prefix, "prefix", "/net", "names under `DIR` are namespace names")
	// The namespace's settings keep their defaults; connecting is the one
	// that matters to a splice.
	defaults := pflag.NewFlagSet("ns", pflag.ContinueOnError)
	o.ns.addFlags(defaults)
	fl.DurationVar(&o.ns.connectTimeout, "connect-timeout", 30*time.Second, "give up connecting after `DURATION`")
	return c
}

func runSplice(c *cobra.Command, reg *protocols.Registry, o *spliceOptions, args []string) error {
	opts := splice.Options{KeepGoing: o.keepGoing, Stats: splice.NewStats()}
	var err error
	if opts.Block, err = splice.ParseSize(o.block); err != nil {
		return usageErrorf(c, "--block: %v", err)
	}
	var bps float64
	if o.rate != "" {
		if bps, err = splice.ParseRate(o.rate); err != nil {
			return usageErrorf(c, "--rate: %v", err)
		}
	}
	var n int
	var d time.Duration
	if o.schedule != "" {
		if n, d, err = splice.ParseSchedule(o.schedule); err != nil {
			return usageErrorf(c, "--schedule: %v", err)
		}
	}
	if bps > 0 || n > 0 {
		opts.Pacer = splice.NewPacer(bps, n, d)
	}
	stderr := c.ErrOrStderr()
	if showsBar(stderr, o.quiet) {
		// The bar moves when a call returns: about once a second.
		// Unwatched, a sendfile moves up to 1 GiB a call, cheaper.
		opts.Progress = time.Second
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	op := &opener{reg: reg, o: o}
	defer op.close()
	opts.SinkFailed = func(err error) {
		fmt.Fprintf(stderr, "wirefs splice: %s (going on)\n", describe(err))
	}

	type result struct {
		moved int64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		switch {
		case o.both && o.fork:
			r.moved, r.err = forkRelay(ctx, op, args[0], args[1], opts, stderr)
		case o.both:
			r.moved, r.err = relay(ctx, op, args[0], args[1], opts, stderr, o.quiet)
		case o.merge:
			r.moved, r.err = merge(ctx, op, args[:len(args)-1], args[len(args)-1], opts, stderr, o.quiet)
		default:
			r.moved, r.err = split(ctx, op, args[0], args[1:], opts, stderr, o.quiet)
		}
		done <- r
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		// Every wait wakes on cancellation but a read of a terminal,
		// which nothing can interrupt: give the rest a moment.
		select {
		case r = <-done:
		case <-time.After(time.Second):
			r.moved = opts.Stats.Bytes()
		}
	}
	moved, err := r.moved, r.err
	if ctx.Err() != nil {
		op.close()
		fmt.Fprintf(stderr, "wirefs splice: interrupted: %d bytes moved\n", moved)
		return exitStatus(130)
	}
	if err != nil {
		fmt.Fprintf(stderr, "wirefs splice: %s\n", describe(err))
		return exitStatus(exitFailure)
	}
	return nil
}

func split(ctx context.Context, op *opener, src string, dsts []string, o splice.Options, stderr io.Writer, quiet bool) (int64, error) {
	in, err := op.open(ctx, src, false)
	if err != nil {
		return 0, err
	}
	var outs []*splice.End
	for _, d := range dsts {
		out, err := op.open(ctx, d, true)
		if err != nil {
			return 0, err
		}
		outs = append(outs, out)
	}
	done := progress(stderr, quiet, in.Size(), o.Stats)
	n, err := splice.Split(ctx, in, outs, o)
	done()
	return n, errors.Join(err, op.flush(ctx))
}

func merge(ctx context.Context, op *opener, srcs []string, dst string, o splice.Options, stderr io.Writer, quiet bool) (int64, error) {
	var ins []*splice.End
	for _, s := range srcs {
		in, err := op.open(ctx, s, false)
		if err != nil {
			return 0, err
		}
		ins = append(ins, in)
	}
	out, err := op.open(ctx, dst, true)
	if err != nil {
		return 0, err
	}
	done := progress(stderr, quiet, -1, o.Stats)
	n, err := splice.Merge(ctx, ins, out, o)
	done()
	return n, errors.Join(err, op.flush(ctx))
}

func relay(ctx context.Context, op *opener, a, b string, o splice.Options, stderr io.Writer, quiet bool) (int64, error) {
	ea, err := op.open(ctx, a, true)
	if err != nil {
		return 0, err
	}
	eb, err := op.open(ctx, b, true)
	if err != nil {
		return 0, err
	}
	done := progress(stderr, quiet, -1, o.Stats)
	ab, ba, err := splice.Relay(ctx, ea, eb, o)
	done()
	return ab + ba, err
}

// forkRelay accepts clients on the server a until interrupted and relays
// each to a fresh b, as socat TCP-LISTEN:PORT,fork does. A failing relay
// is reported and the others go on.
func forkRelay(ctx context.Context, op *opener, a, b string, o splice.Options, stderr io.Writer) (int64, error) {
	l, err := op.listen(a)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	if _, ok := op.nsName(b); ok {
		// Built once, here, for every relay (closed by op).
		if _, err := op.namespace(); err != nil {
			return 0, err
		}
	}
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var total atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return total.Load(), nil
			}
			return total.Load(), err
		}
		wg.Go(func() {
			defer c.Close()
			one := &opener{reg: op.reg, o: op.o, nsOnce: op.nsOnce, nsDone: op.nsDone}
			defer one.close()
			ea, err := splice.Kernel(c.RemoteAddr().String(), c.(*net.TCPConn))
			if err == nil {
				var eb *splice.End
				if eb, err = one.open(ctx, b, true); err == nil {
					var ab, ba int64
					ab, ba, err = splice.Relay(ctx, ea, eb, splice.Options{Block: o.Block, Pacer: o.Pacer, Stats: o.Stats})
					total.Add(ab + ba)
				}
			}
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(stderr, "wirefs splice: %s: %s\n", c.RemoteAddr(), describe(err))
			}
		})
	}
}

// showsBar says whether a splice shows a progress bar on w: a terminal,
// and not quiet.
func showsBar(w io.Writer, quiet bool) bool {
	f, ok := w.(*os.File)
	return !quiet && ok && term.IsTerminal(int(f.Fd()))
}

// progress shows a bar on stderr while a splice runs (showsBar); the
// returned func ends it.
func progress(w io.Writer, quiet bool, size int64, st *splice.Stats) func() {
	if !showsBar(w, quiet) {
		return func() {}
	}
	bar := progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(w),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetDescription("splice"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(size > 0),
		progressbar.OptionFullWidth(),
		progressbar.OptionSpinnerType(14),
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				bar.Set64(st.Bytes())
			case <-stop:
				bar.Set64(st.Bytes())
				bar.Finish()
				fmt.Fprintln(w)
				return
			}
		}
	})
	return func() { close(stop); wg.Wait() }
}

// opener opens the ends of a splice and closes them at the end.
type opener struct {
	reg     *protocols.Registry
	o       *spliceOptions
	closers []func() error
	flushes []func(context.Context) error

	// The namespace is built on the first name that needs it; forked
	// relays share it.
	nsOnce  *sync.Once
	nsDone  *nsResult
	nsClose func() // set on the opener that built it
}

type nsResult struct {
	d   *daemonNamespace
	err error
}

func (op *opener) close() {
	for i := len(op.closers) - 1; i >= 0; i-- {
		op.closers[i]()
	}
	op.closers = nil
	if op.nsClose != nil {
		op.nsClose()
		op.nsClose = nil
	}
}

// flush makes written remote files reach their server (as close(2) does
// through a door) and reports its failure.
func (op *opener) flush(ctx context.Context) error {
	var errs []error
	for _, f := range op.flushes {
		errs = append(errs, f(ctx))
	}
	op.flushes = nil
	return errors.Join(errs...)
}

func (op *opener) namespace() (*daemonNamespace, error) {
	if op.nsOnce == nil {
		op.nsOnce, op.nsDone = &sync.Once{}, &nsResult{}
	}
	op.nsOnce.Do(func() {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		op.nsDone.d, op.nsDone.err = lazyNamespace(op.o.ns, op.reg, log)
		if op.nsDone.err == nil {
			d := op.nsDone.d
			op.nsClose = func() { d.close(log) }
		}
	})
	return op.nsDone.d, op.nsDone.err
}

// nsName says whether name is a namespace name and returns it without
// the prefix: "/net/tcp/h:80", "tcp/h:80", "sftp://me@h/f".
func (op *opener) nsName(name string) (string, bool) {
	if strings.Contains(name, "://") {
		if n, ok := urlName(op.reg)(name); ok {
			return n, true
		}
	}
	if p := strings.TrimSuffix(op.o.prefix, "/"); p != "" && strings.HasPrefix(name, p+"/") {
		return strings.TrimPrefix(name, p+"/"), true
	}
	first, _, _ := strings.Cut(name, "/")
	if !strings.Contains(name, "/") {
		return "", false
	}
	switch first {
	case "tcp", "udp", "dns":
		return name, true
	}
	for _, s := range op.reg.Schemes() {
		if first == s {
			return name, true
		}
	}
	return "", false
}

// tcpServer is the address a tcp/ name of a simple server binds ("" and
// false for any other name).
func tcpServer(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "tcp/")
	if !ok {
		return "", false
	}
	n, err := netstream.ParseName("tcp", rest)
	if err != nil || n.Role != netstream.Server || n.Explicit {
		return "", false
	}
	return net.JoinHostPort(n.Local.Host, fmt.Sprint(n.Local.Port)), true
}

func (op *opener) listen(name string) (net.Listener, error) {
	n, ok := op.nsName(name)
	addr, server := tcpServer(n)
	if !ok || !server {
		return nil, fmt.Errorf("%s: --fork wants a server name such as tcp/8080", name)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// open opens one end: for reading (a source) or writing (a sink, or
// either way for --both).
func (op *opener) open(ctx context.Context, name string, write bool) (*splice.End, error) {
	if name == "-" {
		return op.stdio(write)
	}
	if n, ok := op.nsName(name); ok {
		if addr, server := tcpServer(n); server {
			return op.accept(ctx, name, addr)
		}
		return op.openNS(ctx, name, n, write)
	}
	var f *os.File
	var err error
	if write {
		// Opened with the caller's own rights: this process is the caller.
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
		if errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENXIO) {
			f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		}
	} else {
		f, err = os.Open(name)
	}
	if err != nil {
		return nil, err
	}
	op.closers = append(op.closers, f.Close)
	return splice.File(name, f)
}

// stdio is - : stdin as a source, stdout as a sink. A pipe or socket is
// made non-blocking (and restored at the end) so that Ctrl-C wakes the
// splice; a terminal is copied in user space.
func (op *opener) stdio(write bool) (*splice.End, error) {
	fd := 0
	if write {
		fd = 1
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, os.NewSyscallError("dup", err)
	}
	var st unix.Stat_t
	unix.Fstat(dup, &st)
	if t := st.Mode & unix.S_IFMT; t == unix.S_IFIFO || t == unix.S_IFSOCK {
		fl, _ := unix.FcntlInt(uintptr(dup), unix.F_GETFL, 0)
		if fl&unix.O_NONBLOCK == 0 {
			unix.SetNonblock(dup, true)
			op.closers = append(op.closers, func() error { return unix.SetNonblock(fd, false) })
		}
	}
	f := os.NewFile(uintptr(dup), "-")
	op.closers = append(op.closers, f.Close)
	return splice.File("-", f)
}

// accept listens on addr and waits for one client.
func (op *opener) accept(ctx context.Context, name, addr string) (*splice.End, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	c, err := l.Accept()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	op.closers = append(op.closers, c.Close)
	return splice.Kernel(name, c.(*net.TCPConn))
}

// openNS opens a namespace name as an open(2) through a door would, with
// this process as the caller; a sink that does not exist yet is created
// in its directory.
func (op *opener) openNS(ctx context.Context, name, n string, write bool) (*splice.End, error) {
	d, err := op.namespace()
	if err != nil {
		return nil, err
	}
	caller := ns.Caller{Pid: uint32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	flags := os.O_RDONLY
	if write {
		flags = os.O_RDWR
	}
	var h ns.Handle
	node, err := d.ns.Resolve(ctx, n)
	switch {
	case err == nil:
		o, ok := node.(ns.Opener)
		if !ok {
			return nil, fmt.Errorf("%s: %w", name, syscall.EISDIR)
		}
		if ns.IsStored(node) && write {
			flags = os.O_WRONLY | os.O_TRUNC
		}
		h, err = o.Open(ctx, caller, flags)
	case write && ns.Errno(err) == syscall.ENOENT:
		var parent ns.Node
		if parent, err = d.ns.Resolve(ctx, path.Dir(n)); err == nil {
			cr, ok := parent.(ns.Creator)
			if !ok {
				return nil, fmt.Errorf("%s: %w", name, syscall.EROFS)
			}
			_, h, err = cr.Create(ctx, caller, path.Base(n), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	op.closers = append(op.closers, h.Close)
	if fl, ok := h.(ns.Flusher); ok && write {
		op.flushes = append(op.flushes, fl.Flush)
	}
	return splice.Handle(name, h)
}

// describe words an error as cp and socat do: what, on which name, and
// the cause with a capital ("connect 127.0.0.1:9: Connection refused").
func describe(err error) string {
	var pe *os.PathError
	var oe *net.OpError
	var se *splice.Error
	switch {
	case errors.As(err, &se):
		return se.Error()
	case errors.As(err, &oe):
		op := oe.Op
		if op == "dial" {
			op = "connect"
		}
		addr := ""
		if oe.Addr != nil {
			addr = " " + oe.Addr.String()
		}
		return op + addr + ": " + splice.Cause(oe.Err)
	case errors.As(err, &pe):
		return pe.Op + " " + pe.Path + ": " + splice.Cause(pe.Err)
	}
	return err.Error()
}
