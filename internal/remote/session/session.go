package session

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"wirefs/internal/ns"
)

// Line is the core's part of one connection: how it ends. A protocol's
// connection type embeds a *Line (so that it satisfies Conn) made by
// NewLine.
type Line struct {
	hangup func()
	dog    *Watchdog
	done   chan struct{}
	once   sync.Once
	why    error // set before done is closed
}

// NewLine returns the line of a connection that hangup closes. dog, when
// not nil, is the connection's watchdog in the Observe shape: calls on the
// connection are its waits, and it is stopped when the line ends.
func NewLine(hangup func(), dog *Watchdog) *Line {
	return &Line{hangup: hangup, dog: dog, done: make(chan struct{})}
}

// End ends the connection for why (a cause: Stalled, Lost, ErrClosed...),
// unless it ended already: the first reason wins. It closes the
// connection, which fails every call on it.
func (l *Line) End(why error) {
	l.once.Do(func() {
		l.why = why
		close(l.done)
		if l.dog != nil {
			l.dog.Stop()
		}
		l.hangup()
	})
}

// Err returns nil while the connection lives, else why it ended.
func (l *Line) Err() error {
	select {
	case <-l.done:
		return l.why
	default:
		return nil
	}
}

// Done is closed when the connection ends.
func (l *Line) Done() <-chan struct{} { return l.done }

// Watchdog returns the watchdog given to NewLine.
func (l *Line) Watchdog() *Watchdog { return l.dog }

func (l *Line) line() *Line { return l }

// Conn is a protocol's connection: a pointer to a struct that embeds a
// *Line.
type Conn interface {
	comparable
	line() *Line
}

// Protocol is what a Session needs of its protocol.
type Protocol[C Conn] struct {
	Server
	Log *slog.Logger
	// Dial makes a new connection. ctx ends when the session is closed.
	// Its error is the cause of the calls that wanted the connection:
	// an *ns.Error for what the protocol knows (a refused login, a host
	// key), a plain error (the socket's) for Unreachable to read.
	Dial func(ctx context.Context) (C, error)
	// Answer reads err, which an operation on a live connection returned
	// and which is not an *ns.Error: when it is the server's answer (a
	// refusal, end of file), it returns the error the caller gets (made
	// with Error) and true; when err means the connection broke, false.
	Answer func(op, p string, err error) (error, bool)
}

// Session is one shared connection to a server (see the package comment).
// It is safe for concurrent use.
type Session[C Conn] struct {
	Server
	log    *slog.Logger
	dial   func(ctx context.Context) (C, error)
	answer func(op, p string, err error) (error, bool)

	life context.Context // ends at Close: stops a dial in progress
	end  context.CancelFunc
	wg   sync.WaitGroup // every goroutine the session started

	mu      sync.Mutex
	cur     C
	live    bool // cur is set
	pending *dialing[C]
	closed  bool
}

// dialing is one dial that every call waiting for a connection shares.
type dialing[C Conn] struct {
	done chan struct{}
	c    C
	err  error
}

// New returns a session that dials when a call first needs a connection.
func New[C Conn](p Protocol[C]) *Session[C] {
	s := &Session[C]{Server: p.Server, log: p.Log, dial: p.Dial, answer: p.Answer}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.life, s.end = context.WithCancel(context.Background())
	return s
}

// Connect makes sure the session has a connection, dialling one if
// needed: for a Dial that should report an unreachable server at once.
func (s *Session[C]) Connect(ctx context.Context) error {
	_, err := Call(ctx, s, "connect", "", nil, func(C) (struct{}, error) { return struct{}{}, nil }, nil)
	return err
}

// Call runs fn on the session's connection, dialling one if needed, in
// its own goroutine, and returns its result; or, as soon as ctx ends,
// Interrupted, abandoning fn, whose result then goes to release (when fn
// succeeded and release is not nil). fn must not touch memory the caller
// keeps using. Its error is judged (see the package comment); when the
// connection broke under it, Again decides whether it runs once more on a
// new one.
func Call[C Conn, T any](ctx context.Context, s *Session[C], op, p string, retry Retry, fn func(C) (T, error), release func(T)) (T, error) {
	return abandonable(ctx, s, op, p, func() (T, error) {
		for attempt := 0; ; attempt++ {
			c, reused, err := s.conn()
			if err != nil {
				var zero T
				return zero, s.dialError(op, p, err)
			}
			v, err := bracket(c, func() (T, error) { return fn(c) })
			err, broke := s.judge(c, op, p, err)
			if !broke || !Again(attempt, reused, err, retry) {
				return v, err
			}
			s.log.Debug("connection lost; retrying on a new one", "server", s.Where("", ""), "op", op, "path", p, "err", err)
		}
	}, release)
}

// On runs fn, an operation on c (a file open on it), as Call does, but
// without retry: what fn needs lives on c only.
func On[C Conn, T any](ctx context.Context, s *Session[C], c C, op, p string, fn func() (T, error), release func(T)) (T, error) {
	return abandonable(ctx, s, op, p, func() (T, error) {
		v, err := bracket(c, fn)
		err, _ = s.judge(c, op, p, err)
		return v, err
	}, release)
}

// Judge returns the error for err, which op on p returned on c: see the
// package comment. A connection that broke is ended.
func (s *Session[C]) Judge(c C, op, p string, err error) error {
	err, _ = s.judge(c, op, p, err)
	return err
}

func (s *Session[C]) judge(c C, op, p string, err error) (_ error, broke bool) {
	if err == nil {
		return nil, false
	}
	var nsErr *ns.Error
	if errors.As(err, &nsErr) {
		return err, false
	}
	l := c.line()
	if why := l.Err(); why != nil {
		return s.Wrap(op, p, why), true
	}
	if e, ok := s.answer(op, p, err); ok {
		return e, false
	}
	s.Drop(c, s.Cause(context.Background(), err, false))
	return s.Wrap(op, p, l.Err()), true
}

// Drop ends c for why (the first reason wins) and logs it; the next call
// dials a new connection.
func (s *Session[C]) Drop(c C, why error) {
	l := c.line()
	if l.Err() != nil {
		return
	}
	l.End(why)
	if l.Err() == why && !errors.Is(why, ErrClosed) {
		s.log.Warn("connection dropped; the next call reconnects", "server", s.Where("", ""), "why", why)
	}
}

// bracket runs fn as a wait of c's watchdog, if it has one.
// Begin counts a request whose answer is waited for outside On (sent
// now, its answer awaited later) as a wait of c's watchdog, until end is
// called: a server that stops answering it is cut like one that stalls a
// call.
func Begin[C Conn](c C) (end func()) {
	if d := c.line().dog; d != nil {
		d.Begin()
		return d.End
	}
	return func() {}
}

// Pause takes the caller, within a call on c (Call, On), out of c's
// watchdog's waits until resume: for a call that waits on something
// other than the server, such as a store reading the data a program is
// still writing, so that the server's silence meanwhile is no stall (an
// idle server is still probed). A resume after the call ended is
// balanced by the call's own end.
func Pause[C Conn](c C) (resume func()) {
	if d := c.line().dog; d != nil {
		d.End()
		return d.Begin
	}
	return func() {}
}

func bracket[C Conn, T any](c C, fn func() (T, error)) (T, error) {
	defer Begin(c)()
	return fn()
}

// conn returns the live connection, or dials one (one dial at a time,
// shared by every call waiting for it); reused says the connection was
// there before this call.
func (s *Session[C]) conn() (c C, reused bool, err error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return c, false, ErrClosed
	}
	if s.live && s.cur.line().Err() == nil {
		c = s.cur
		s.mu.Unlock()
		return c, true, nil
	}
	d := s.pending
	if d == nil {
		d = &dialing[C]{done: make(chan struct{})}
		s.pending = d
		s.wg.Add(1)
		go s.dialFor(d)
	}
	s.mu.Unlock()
	<-d.done
	return d.c, false, d.err
}

func (s *Session[C]) dialFor(d *dialing[C]) {
	defer s.wg.Done()
	c, err := s.dial(s.life)
	s.mu.Lock()
	s.pending = nil
	closed := s.closed
	if err == nil {
		s.cur, s.live = c, true
	}
	s.mu.Unlock()
	switch {
	case err == nil && closed:
		c.line().End(ErrClosed)
	case err != nil && closed:
		err = ErrClosed
	}
	d.c, d.err = c, err
	close(d.done)
}

// dialError is the error of op on p that found no connection.
func (s *Session[C]) dialError(op, p string, err error) error {
	var nsErr *ns.Error
	if errors.As(err, &nsErr) {
		return s.Error(nsErr.Errno, op, p, err)
	}
	return s.Wrap(op, p, s.Unreachable(err))
}

// Go runs fn in a goroutine that Close waits for. Once the session is
// closed it runs nothing and returns false: the connection fn would use
// is ended already.
func (s *Session[C]) Go(fn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}

// Close ends the connection, stops a dial in progress and waits for every
// goroutine the session started; calls fail with ErrClosed after it.
func (s *Session[C]) Close() error {
	s.mu.Lock()
	s.closed = true
	c, live := s.cur, s.live
	s.mu.Unlock()
	s.end()
	if live {
		c.line().End(ErrClosed)
	}
	s.wg.Wait()
	return nil
}

// abandonable runs fn in a goroutine of s and returns its result, or
// Interrupted as soon as ctx ends; an abandoned fn's result goes to
// release.
func abandonable[C Conn, T any](ctx context.Context, s *Session[C], op, p string, fn func() (T, error), release func(T)) (T, error) {
	var zero T
	if ctx.Err() != nil {
		return zero, s.Wrap(op, p, Interrupted(ctx))
	}
	type result struct {
		v   T
		err error
	}
	// Unbuffered: the result is handed over only while the caller
	// waits for it, and otherwise released.
	done := make(chan result)
	started := s.Go(func() {
		v, err := fn()
		select {
		case done <- result{v, err}:
		case <-ctx.Done():
			if err == nil && release != nil {
				release(v)
			}
		}
	})
	if !started {
		return zero, s.Wrap(op, p, ErrClosed)
	}
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, s.Wrap(op, p, Interrupted(ctx))
	}
}
