package sftp

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"wirefs/internal/ns"
	"wirefs/internal/remote/session"
)

// conn is one SSH connection with its SFTP session. It ends once, for a
// reason (its session.Line); the session then dials a new one for the
// next call.
//
// pkg/sftp requests never time out, and x/crypto/ssh reads the socket all
// the time, so the connection is watched in the session core's Observe
// shape: every call (and every read chunk in flight) is a wait, bytes
// arriving are progress, and a connection that makes none for the
// timeout while something waits is dropped, which fails every
// outstanding request. While idle, a keepalive@openssh.com request every
// timeout notices a server that vanished without closing the connection.
type conn struct {
	*session.Line
	ssh         *ssh.Client
	sftp        *sftp.Client
	posixRename bool
	packet      int          // the largest read or write one request carries
	rtt         atomic.Int64 // one round trip (ns), measured after the dial (measureRTT); 0: not yet

	// streams are more SFTP sessions on the same SSH connection, for
	// large reads and stores (upload.go): every channel has a fixed
	// 2 MiB window (x/crypto/ssh's for what we receive, OpenSSH's for
	// what we send), which caps one channel at 2 MiB per round trip
	// (40 MB/s at 50 ms). Started in the background (a few round trips
	// each, and sshd starts a process for each through the user's
	// shell: a few ms, or ~150 ms where the shell's rc is slow; large reads
	// made before they are go through the main session, a store starts
	// on it and spreads when they are ready) once the connection is
	// found spreadRTT or more away (measureRTT), else at the first large
	// read or store; closed with c. Not at dial near the server: sshd's
	// work for every packet grows with the channels it serves, and a
	// connection that only appends and stats paid for four idle ones
	// on every round trip (open/append/close cycles ~10% slower at 0 ms);
	// a round trip of 5 ms or more dwarfs that.
	streamsMu sync.Mutex
	streams   []*sftp.Client
	asked     bool           // a large read or store wanted the streams: started
	starting  sync.WaitGroup // the streams being started
	ready     chan struct{}  // closed once the streams asked for are started (or refused)
	ended     bool           // c ended: streams started late are closed at once
	turn      atomic.Uint32

	// background runs fn in a goroutine of the session, which waits
	// for it when it closes (false: closed, fn not run).
	background func(fn func()) bool
}

// Large reads are spread over streamCount SFTP sessions besides the main
// one; reads of at most smallRead bytes (whole small files) stay on the
// main session.
const (
	streamCount = 4
	smallRead   = 512 << 10
)

// readClient returns the SFTP session a read of n bytes (< 0: to the
// end) goes through.
func (c *conn) readClient(n int64) *sftp.Client {
	if n >= 0 && n <= smallRead {
		return c.sftp
	}
	c.streamsMu.Lock()
	defer c.streamsMu.Unlock()
	c.startStreams()
	if len(c.streams) == 0 {
		return c.sftp // not yet, or the server takes one session per connection
	}
	return c.streams[int(c.turn.Add(1))%len(c.streams)]
}

// startStreams starts the streams in the background unless they were
// asked for already; ready is closed when they are. The caller holds
// streamsMu.
func (c *conn) startStreams() {
	if c.asked {
		return
	}
	c.asked = true
	if c.ended {
		close(c.ready)
		return
	}
	for range streamCount {
		c.starting.Add(1)
		if !c.background(func() {
			defer c.starting.Done()
			c.addStream(newClient(c.ssh, c.packet))
		}) {
			c.starting.Done()
		}
	}
	if !c.background(func() { c.starting.Wait(); close(c.ready) }) {
		close(c.ready) // c ended: nothing started
	}
}

// readyStreams starts the streams if they are not, and returns a channel
// closed when they are, and then the started ones.
func (c *conn) readyStreams() (<-chan struct{}, func() []*sftp.Client) {
	c.streamsMu.Lock()
	defer c.streamsMu.Unlock()
	c.startStreams()
	return c.ready, func() []*sftp.Client {
		c.streamsMu.Lock()
		defer c.streamsMu.Unlock()
		return slices.Clone(c.streams)
	}
}

// addStream adds a started session (each costs a few round trips); one
// the server refused is left out.
func (c *conn) addStream(cl *sftp.Client, err error) {
	if err != nil {
		return
	}
	c.streamsMu.Lock()
	defer c.streamsMu.Unlock()
	if c.ended {
		cl.Close()
		return
	}
	c.streams = append(c.streams, cl)
}

// closeStreams ends the streams, and any started after it (c has ended).
func (c *conn) closeStreams() {
	c.streamsMu.Lock()
	defer c.streamsMu.Unlock()
	c.ended = true
	for _, cl := range c.streams {
		cl.Close()
	}
	c.streams = nil
}

// dial connects, authenticates and starts the SFTP subsystem. ctx ends
// when the session closes. Its errors are causes: the session puts
// "sftp user@host: OP PATH" before them.
func (b *backend) dial(ctx context.Context) (*conn, error) {
	h := b.h
	connectTimeout := b.srv.ConnectTimeout
	dctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(dctx, "tcp", h.addr())
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, unreachable(err)
	}

	// The handshake and the SFTP start take no context: a deadline on
	// the socket bounds them, and cancellation moves it to now. It is
	// suspended while a person types a password.
	var deadlineMu sync.Mutex
	setDeadline := func(t time.Time) {
		deadlineMu.Lock()
		defer deadlineMu.Unlock()
		if ctx.Err() == nil {
			raw.SetDeadline(t)
		}
	}
	setDeadline(time.Now().Add(connectTimeout))
	stop := context.AfterFunc(ctx, func() {
		deadlineMu.Lock()
		defer deadlineMu.Unlock()
		raw.SetDeadline(time.Unix(1, 0))
	})
	defer stop()

	keys, err := newHostKeys(h, b.o.Home, b.o.AcceptNewHostKeys, b.log)
	if err != nil {
		raw.Close()
		return nil, ns.Errorf(syscall.EIO, "cannot read known_hosts: %v", err)
	}
	a := &auth{h: h, home: b.o.Home, log: b.log, askpass: b.o.Askpass,
		pause: func(ask func() (string, error)) (string, error) {
			setDeadline(time.Time{})
			defer setDeadline(time.Now().Add(connectTimeout))
			return ask()
		}}
	defer a.close()
	c := &conn{background: b.s.Go, ready: make(chan struct{})}
	dog := session.NewWatchdog(b.srv.Timeout, func() { b.s.Drop(c, b.srv.Stalled()) })
	config := &ssh.ClientConfig{
		User:              h.user,
		Auth:              a.methods(),
		HostKeyCallback:   keys.callback,
		HostKeyAlgorithms: keys.algorithms(),
	}
	sc, chans, reqs, err := ssh.NewClientConn(session.Observe(raw, dog), h.addr(), config)
	if err != nil {
		raw.Close()
		var hk *hostKeyError
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &hk):
			return nil, ns.Errorf(syscall.EACCES, "%v", hk)
		case strings.Contains(err.Error(), "unable to authenticate") || a.triedAny() && !isNetError(err):
			return nil, ns.Errorf(syscall.EACCES, "authentication failed (tried: %s)", a.triedList())
		}
		return nil, unreachable(err)
	}
	c.ssh = ssh.NewClient(sc, chans, reqs)
	c.Line = session.NewLine(func() {
		if errors.Is(c.Err(), session.ErrClosed) {
			b.endSpares(c) // a connection that broke cannot remove them
		}
		c.ssh.Close()
	}, dog)
	c.sftp, c.packet, err = startSFTP(c.ssh)
	if err != nil {
		c.ssh.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if isNetError(err) {
			return nil, unreachable(err)
		}
		return nil, ns.Errorf(syscall.EIO, "the server does not start SFTP: %v", err)
	}
	if !stop() {
		c.sftp.Close()
		c.ssh.Close()
		return nil, ctx.Err()
	}
	raw.SetDeadline(time.Time{})
	_, c.posixRename = c.sftp.HasExtension("posix-rename@openssh.com")
	// The server closing the connection ends it; the watcher waits for
	// that. Once the session is closed, the session ends c itself.
	b.s.Go(func() {
		err := c.ssh.Wait()
		b.s.Drop(c, session.Lost(err))
		// Ends pkg/sftp's receiving goroutines.
		c.sftp.Close()
		c.closeStreams()
		dog.Wait()
	})
	dog.Probe(func() {
		dog.Begin()
		defer dog.End()
		// OpenSSH answers with a failure: any answer is a sign of life.
		c.ssh.SendRequest("keepalive@openssh.com", true, nil)
	})
	b.log.Debug("sftp: connected", "server", h.name(), "addr", h.addr(), "version", string(c.ssh.ServerVersion()))
	c.background(c.measureRTT)
	return c, nil
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// unreachable gives an unknown host the hint that names can come from
// ~/.ssh/config; other failures to connect are the session's to word.
func unreachable(err error) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return ns.Errorf(syscall.ENOENT, "unknown host (not in DNS, nor a Host in ~/.ssh/config): %v", err)
	}
	return err
}

// startSFTP starts the SFTP subsystem on sc with the largest packets the
// server answers whole: pkg/sftp takes a short read answer for the end
// of the file, so a packet must never be larger than the server's limit.
// OpenSSH's sftp-server answers reads of up to 255 KiB
// (SFTP_MAX_READ_LENGTH) since it announces limits@openssh.com (8.6);
// older ones and other servers get the 32 KiB every server takes. Few
// large packets, not many small ones, are what fill a long fat pipe:
// 64 × 32 KiB in flight cap a stream at 2 MiB per round trip.
func startSFTP(sc *ssh.Client) (*sftp.Client, int, error) {
	if strings.Contains(string(sc.ServerVersion()), "OpenSSH") {
		c, err := newClient(sc, openSSHPacket)
		if err != nil {
			return nil, 0, err
		}
		if _, ok := c.HasExtension("limits@openssh.com"); ok {
			return c, openSSHPacket, nil
		}
		c.Close() // an OpenSSH older than 8.6: its reads stop at 64 KiB
	}
	c, err := newClient(sc, packetSize)
	return c, packetSize, err
}

// newClient starts an SFTP session on sc with packets of packet bytes.
func newClient(sc *ssh.Client, packet int) (*sftp.Client, error) {
	return sftp.NewClient(sc,
		sftp.UseConcurrentReads(true),
		sftp.UseConcurrentWrites(true),
		sftp.MaxConcurrentRequestsPerFile(maxRequests),
		sftp.MaxPacketUnchecked(packet),
		// Fstat on the open handle: the path may be renamed meanwhile.
		sftp.UseFstat(true),
	)
}

// measureRTT times one round trip of the SSH connection (a global
// request the server answers at once), for what depends on the distance
// to the server (upload.go), and starts the streams of a distant one.
// Starting the SFTP session is no measure: sshd starts a process for it.
func (c *conn) measureRTT() {
	t0 := time.Now()
	if _, _, err := c.ssh.SendRequest("keepalive@openssh.com", true, nil); err == nil {
		rtt := time.Since(t0)
		c.rtt.Store(int64(rtt))
		if rtt >= spreadRTT {
			c.streamsMu.Lock()
			c.startStreams()
			c.streamsMu.Unlock()
		}
	}
}
