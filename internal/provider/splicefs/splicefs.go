// Package splicefs is the splice/ directory: seed 002's splices driven
// with plain reads and writes, Plan 9 style. Open splice/clone and read a
// number N: splice/N/ exists while the clone stays open (or after a
// "keep"). Write one line to splice/N/ctl to start it (from SRC to DST...,
// merge SRC... to DST, relay A B) or steer it (rate R, schedule N,d,
// pause, resume, stop, keep); read splice/N/status for one line, "state
// bytes rate_bps elapsed_s [error]". The transfers themselves are
// internal/splice's.
//
// Names in ctl lines are namespace names, opened with the rights of the
// process that wrote the line, as its own open would be; local paths
// (absolute) only when that process's uid is the daemon's (a root daemon
// does not open files for others). splice/N/ is its creator's (0700):
// others get EACCES.
package splicefs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/splice"
)

// Provider holds the live splices.
type Provider struct {
	names *ns.Namespace // where ctl names are resolved
	log   *slog.Logger
	start time.Time

	mu   sync.Mutex
	next int
	jobs map[int]*job
}

// New returns the provider; names in ctl lines resolve in names.
func New(names *ns.Namespace, log *slog.Logger) *Provider {
	return &Provider{names: names, log: log, start: time.Now(), jobs: map[int]*job{}}
}

// Dir is the splice/ directory.
func (p *Provider) Dir() ns.Dir { return &root{p: p} }

// Close stops every splice.
func (p *Provider) Close() error {
	p.mu.Lock()
	jobs := make([]*job, 0, len(p.jobs))
	for _, j := range p.jobs {
		jobs = append(jobs, j)
	}
	p.jobs = map[int]*job{}
	p.mu.Unlock()
	for _, j := range jobs {
		j.stop()
	}
	return nil
}

func (p *Provider) lookup(n int) *job {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.jobs[n]
}

func (p *Provider) remove(j *job) {
	p.mu.Lock()
	if p.jobs[j.id] == j {
		delete(p.jobs, j.id)
	}
	p.mu.Unlock()
	j.stop()
}

type root struct{ p *Provider }

func (r *root) Volatile() bool { return true }

func (r *root) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o555, Mtime: r.p.start, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

func (r *root) Lookup(ctx context.Context, name string) (ns.Node, error) {
	if name == "clone" {
		return &clone{p: r.p}, nil
	}
	if n, err := strconv.Atoi(name); err == nil && strconv.Itoa(n) == name {
		if j := r.p.lookup(n); j != nil {
			return &jobDir{j: j}, nil
		}
	}
	return nil, ns.Errorf(syscall.ENOENT, "splice/%s: no such splice", name)
}

func (r *root) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	a, _ := (&clone{p: r.p}).Attr(ctx)
	ents := []ns.DirEntry{{Name: "clone", Attr: a}}
	r.p.mu.Lock()
	var ids []int
	for id := range r.p.jobs {
		ids = append(ids, id)
	}
	r.p.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		if j := r.p.lookup(id); j != nil {
			a, _ := (&jobDir{j: j}).Attr(ctx)
			ents = append(ents, ns.DirEntry{Name: strconv.Itoa(id), Attr: a})
		}
	}
	return ents, nil
}

// Remove is rmdir splice/N: the splice stops and its directory goes.
func (r *root) Remove(ctx context.Context, name string, dir bool) error {
	n, err := strconv.Atoi(name)
	j := r.p.lookup(n)
	if err != nil || j == nil || !dir {
		return ns.Errorf(syscall.ENOENT, "splice/%s: no such splice", name)
	}
	r.p.remove(j)
	return nil
}

// clone makes a splice at every open.
type clone struct{ p *Provider }

func (c *clone) Volatile() bool { return true }

func (c *clone) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: 0o666, Mtime: c.p.start, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

func (c *clone) Open(ctx context.Context, cl ns.Caller, flags int) (ns.Handle, error) {
	p := c.p
	p.mu.Lock()
	p.next++
	j := newJob(p, p.next, cl)
	p.jobs[j.id] = j
	p.mu.Unlock()
	return &cloneHandle{j: j, text: []byte(fmt.Sprintf("%d\n", j.id))}, nil
}

// cloneHandle reads as the splice's number; closing it ends the splice
// unless it was kept.
type cloneHandle struct {
	j    *job
	text []byte
}

func (h *cloneHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off >= int64(len(h.text)) {
		return 0, nil
	}
	return copy(p, h.text[off:]), nil
}

func (h *cloneHandle) Read(ctx context.Context, p []byte) (int, error) { return h.ReadAt(ctx, p, 0) }

func (h *cloneHandle) Close() error {
	if !h.j.isKept() {
		h.j.p.remove(h.j)
	}
	return nil
}

// jobDir is splice/N/.
type jobDir struct{ j *job }

func (d *jobDir) Volatile() bool { return true }

func (d *jobDir) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o700, Mtime: d.j.created, Uid: d.j.owner.Uid, Gid: d.j.owner.Gid}, nil
}

func (d *jobDir) Lookup(ctx context.Context, name string) (ns.Node, error) {
	switch name {
	case "ctl", "status":
		return &jobFile{j: d.j, name: name}, nil
	}
	return nil, ns.Errorf(syscall.ENOENT, "splice/%d/%s: no such file", d.j.id, name)
}

func (d *jobDir) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	var ents []ns.DirEntry
	for _, n := range []string{"ctl", "status"} {
		a, _ := (&jobFile{j: d.j, name: n}).Attr(ctx)
		ents = append(ents, ns.DirEntry{Name: n, Attr: a})
	}
	return ents, nil
}

// jobFile is splice/N/ctl or splice/N/status.
type jobFile struct {
	j    *job
	name string
}

func (f *jobFile) Volatile() bool { return true }

func (f *jobFile) Attr(context.Context) (ns.Attr, error) {
	mode := os.FileMode(0o400)
	if f.name == "ctl" {
		mode = 0o600
	}
	return ns.Attr{Mode: mode, Mtime: time.Now(), Uid: f.j.owner.Uid, Gid: f.j.owner.Gid}, nil
}

func (f *jobFile) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	if c.Uid != f.j.owner.Uid && c.Uid != 0 {
		return nil, ns.Errorf(syscall.EACCES, "splice/%d belongs to uid %d", f.j.id, f.j.owner.Uid)
	}
	write := flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0
	if f.name == "status" {
		if write {
			return nil, ns.Errorf(syscall.EACCES, "splice/%d/status is read-only", f.j.id)
		}
		return &text{b: []byte(f.j.status() + "\n")}, nil
	}
	return &ctlHandle{j: f.j, caller: c, text: []byte(fmt.Sprintf("%d\n", f.j.id))}, nil
}

type text struct{ b []byte }

func (t *text) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off >= int64(len(t.b)) {
		return 0, nil
	}
	return copy(p, t.b[off:]), nil
}

func (t *text) Close() error { return nil }

// ctlHandle takes ctl lines; it reads as the splice's number.
type ctlHandle struct {
	j      *job
	caller ns.Caller
	text   []byte
	mu     sync.Mutex
}

func (h *ctlHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return (&text{b: h.text}).ReadAt(ctx, p, off)
}

// WriteAt takes one or more lines; a write without a newline is a whole
// line too (echo -n). A bad line fails the write with EINVAL.
func (h *ctlHandle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	return h.Write(ctx, p)
}

func (h *ctlHandle) Write(ctx context.Context, p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		c, err := ParseCtl(line)
		if err == nil {
			err = h.j.apply(c, h.caller)
		}
		if err != nil {
			h.j.p.log.Warn("splice ctl", "splice", h.j.id, "line", line, "err", err)
			if ns.Errno(err) != syscall.EIO && ns.Errno(err) != 0 {
				return 0, err
			}
			return 0, ns.Errorf(syscall.EINVAL, "splice/%d/ctl: %v", h.j.id, err)
		}
	}
	return len(p), nil
}

func (h *ctlHandle) Close() error { return nil }

// job is one splice.
type job struct {
	p       *Provider
	id      int
	owner   ns.Caller
	created time.Time
	pacer   *splice.Pacer
	stats   *splice.Stats

	mu      sync.Mutex
	kept    bool
	state   string // idle, running, paused, done, failed, stopped
	err     error
	cancel  context.CancelFunc
	done    chan struct{}
	closers []func() error
	elapsed time.Duration // once ended
}

func newJob(p *Provider, id int, owner ns.Caller) *job {
	return &job{p: p, id: id, owner: owner, created: time.Now(), state: "idle",
		pacer: splice.NewPacer(0, 0, 0), stats: splice.NewStats()}
}

func (j *job) isKept() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.kept
}

// status is the line of splice/N/status: state bytes rate_bps elapsed_s
// [error]; rate_bps is the mean since the start, in bits per second.
func (j *job) status() string {
	j.mu.Lock()
	state, err, el := j.state, j.err, j.elapsed
	if state == "running" || state == "paused" {
		el = j.stats.Elapsed()
		if j.pacer.Paused() {
			state = "paused"
		}
	}
	j.mu.Unlock()
	if state == "idle" {
		el = 0
	}
	b := j.stats.Bytes()
	var bps int64
	if s := el.Seconds(); s > 0 {
		bps = int64(float64(b) * 8 / s)
	}
	line := fmt.Sprintf("%s %d %d %.3f", state, b, bps, el.Seconds())
	if err != nil {
		line += " " + strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return line
}

func (j *job) apply(c Command, caller ns.Caller) error {
	switch c.Verb {
	case "keep":
		j.mu.Lock()
		j.kept = true
		j.mu.Unlock()
	case "stop":
		j.stop()
	case "pause":
		j.pacer.Pause()
	case "resume":
		j.pacer.Resume()
	case "rate":
		j.pacer.SetRate(c.Rate)
	case "schedule":
		j.pacer.SetSchedule(c.N, c.D)
	default:
		return j.start(c, caller)
	}
	return nil
}

func (j *job) start(c Command, caller ns.Caller) error {
	j.mu.Lock()
	if j.state != "idle" {
		j.mu.Unlock()
		return errors.New("already started (one transfer per splice; clone another)")
	}
	j.state = "opening"
	j.mu.Unlock()
	if c.HasRate {
		j.pacer.SetRate(c.Rate)
	}
	if c.N > 0 {
		j.pacer.SetSchedule(c.N, c.D)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ends, closers, err := j.open(ctx, c, caller)
	if err != nil {
		cancel()
		for _, cl := range closers {
			cl()
		}
		j.mu.Lock()
		j.state = "idle"
		j.mu.Unlock()
		return err
	}
	j.mu.Lock()
	j.cancel, j.done, j.closers, j.state = cancel, make(chan struct{}), closers, "running"
	j.stats = splice.NewStats()
	j.mu.Unlock()
	o := splice.Options{Pacer: j.pacer, Stats: j.stats}
	go func() {
		var err error
		srcs, dsts := ends[:len(c.Srcs)], ends[len(c.Srcs):]
		switch c.Verb {
		case "from":
			_, err = splice.Split(ctx, srcs[0], dsts, o)
		case "merge":
			_, err = splice.Merge(ctx, srcs, dsts[0], o)
		case "relay":
			_, _, err = splice.Relay(ctx, srcs[0], dsts[0], o)
		}
		j.mu.Lock()
		j.elapsed = j.stats.Elapsed()
		switch {
		case ctx.Err() != nil:
			j.state = "stopped"
		case err != nil:
			j.state, j.err = "failed", err
		default:
			j.state = "done"
		}
		closers := j.closers
		j.closers = nil
		j.mu.Unlock()
		for _, cl := range closers {
			cl()
		}
		cancel()
		close(j.done)
	}()
	return nil
}

// stop ends the transfer and waits for it.
func (j *job) stop() {
	j.mu.Lock()
	cancel, done := j.cancel, j.done
	j.mu.Unlock()
	if cancel != nil {
		j.pacer.Resume()
		cancel()
		<-done
	}
}

// open opens the names of c as caller: sources for reading, sinks for
// writing (relay: both ways).
func (j *job) open(ctx context.Context, c Command, caller ns.Caller) ([]*splice.End, []func() error, error) {
	var ends []*splice.End
	var closers []func() error
	names := append(append([]string{}, c.Srcs...), c.Dsts...)
	for i, name := range names {
		write := i >= len(c.Srcs) || c.Verb == "relay"
		e, closer, err := j.openName(ctx, name, write, caller)
		if err != nil {
			return nil, closers, err
		}
		closers = append(closers, closer)
		ends = append(ends, e)
	}
	return ends, closers, nil
}

func (j *job) openName(ctx context.Context, name string, write bool, caller ns.Caller) (*splice.End, func() error, error) {
	if strings.HasPrefix(name, "/") {
		if int(caller.Uid) != os.Geteuid() {
			return nil, nil, ns.Errorf(syscall.EACCES, "%s: local paths are opened only for the daemon's own user", name)
		}
		flags := os.O_RDONLY
		if write {
			flags = os.O_RDWR | os.O_CREATE | os.O_TRUNC
		}
		f, err := os.OpenFile(name, flags, 0o666)
		if err != nil {
			return nil, nil, ns.Errorf(ns.Errno(err), "%v", err)
		}
		e, err := splice.File(name, f)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return e, f.Close, nil
	}
	flags := os.O_RDONLY
	if write {
		flags = os.O_RDWR
	}
	node, err := j.p.names.Resolve(ctx, name)
	var h ns.Handle
	switch {
	case err == nil:
		o, ok := node.(ns.Opener)
		if !ok {
			return nil, nil, ns.Errorf(syscall.EISDIR, "%s: not a file", name)
		}
		if ns.IsStored(node) && write {
			flags = os.O_WRONLY | os.O_TRUNC
		}
		h, err = o.Open(ctx, caller, flags)
	case write && ns.Errno(err) == syscall.ENOENT:
		var parent ns.Node
		if parent, err = j.p.names.Resolve(ctx, path.Dir(name)); err == nil {
			cr, ok := parent.(ns.Creator)
			if !ok {
				return nil, nil, ns.Errorf(syscall.EROFS, "%s: cannot be created", name)
			}
			_, h, err = cr.Create(ctx, caller, path.Base(name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	e, err := splice.Handle(name, h)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	closer := h.Close
	if fl, ok := h.(ns.Flusher); ok && write {
		closer = func() error { return errors.Join(fl.Flush(context.Background()), h.Close()) }
	}
	return e, closer, nil
}
