package netstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// maxDatagram is the largest UDP payload; headerRoom is space kept in front
// of it for the "HOST PORT LENGTH\n" line of explicit addressing.
const (
	maxDatagram = 65535
	headerRoom  = 128
)

func (p *Provider) openUDP(ctx context.Context, name string, n Name, c ns.Caller) (ns.Handle, error) {
	if n.Role == Client {
		return p.dialUDP(ctx, name, n, c)
	}
	binds, err := p.resolveEndpoint(ctx, n.Local)
	if err != nil {
		return nil, err
	}
	key := bindKey("udp", binds[0])
	for {
		if s, ok := p.server(key).(*udpServer); ok {
			h, err := s.reopen(ctx, name, c)
			if err == errRebind {
				continue
			}
			return h, err
		}
		h, err := p.listenUDP(key, name, n.Explicit, binds[0], c)
		if errors.Is(err, syscall.EADDRINUSE) && p.server(key) != nil {
			continue // lost a race with another opener of the same name
		}
		return h, err
	}
}

// listenUDP binds and returns the handle of the server file.
func (p *Provider) listenUDP(key, name string, explicit bool, bind netip.AddrPort, c ns.Caller) (ns.Handle, error) {
	if err := mayBind("udp", name, int(bind.Port()), c); err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(bind))
	if err != nil {
		return nil, dialError("udp", name, err)
	}
	s := &udpServer{p: p, key: key, conn: conn, opener: c.Pid, done: make(chan struct{})}
	h := &udpServerHandle{s: s, explicit: explicit, r: newRecordReader()}
	s.handle = h
	if p.claimServer(key, s) != nil {
		conn.Close()
		return nil, syscall.EADDRINUSE
	}
	s.untrack = p.track("udp", name, c)
	return h, nil
}

func (p *Provider) dialUDP(ctx context.Context, name string, n Name, c ns.Caller) (ns.Handle, error) {
	remotes, err := p.resolveEndpoint(ctx, n.Remote)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{}
	if n.Local.Host != "" || n.Local.Port != 0 {
		local, err := p.localAddr(ctx, "udp", name, n.Local, remotes[0].Addr(), c)
		if err != nil {
			return nil, err
		}
		d.LocalAddr = net.UDPAddrFromAddrPort(local)
		d.Control = reuseAddr
	}
	conn, err := d.DialContext(ctx, "udp", remotes[0].String())
	if err != nil {
		return nil, dialError("udp", name, err)
	}
	return &udpClient{conn: conn.(*net.UDPConn), r: newRecordReader(), untrack: p.track("udp", name, c)}, nil
}

// recordReader returns records (datagrams, or header+datagram) to reads
// whose buffers may be shorter than a record: the rest waits for the next
// read, and a read never returns bytes of two records.
type recordReader struct {
	g       gate
	buf     []byte
	pending []byte
	held    atomic.Bool // len(pending) > 0, for Poll, which must not wait for g
}

func newRecordReader() *recordReader { return &recordReader{g: newGate()} }

// read copies from the pending record, or from next(buf) when none is left.
func (r *recordReader) read(ctx context.Context, p []byte, next func(ctx context.Context, buf []byte) ([]byte, error)) (int, error) {
	if err := r.g.lock(ctx); err != nil {
		return 0, err
	}
	defer r.g.unlock()
	if len(r.pending) == 0 {
		if r.buf == nil {
			r.buf = make([]byte, headerRoom+maxDatagram)
		}
		rec, err := next(ctx, r.buf)
		if err != nil {
			return 0, err
		}
		r.pending = rec
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	r.held.Store(len(r.pending) > 0)
	return n, nil
}

// poll is the readiness of a record reader on conn: a read returns at
// once while part of a record is held.
func (r *recordReader) poll(conn *net.UDPConn, want uint32, wake func()) uint32 {
	if want&unix.POLLIN != 0 && r.held.Load() {
		return want & (unix.POLLIN | unix.POLLOUT)
	}
	return ns.PollConn(conn, want, wake)
}

// recvInto reads one non-empty datagram into buf[headerRoom:]. Empty
// datagrams are skipped: a zero-byte read would look like end of file.
func recvInto(ctx context.Context, conn *net.UDPConn, buf []byte) ([]byte, netip.AddrPort, error) {
	for {
		var from netip.AddrPort
		n, err := ns.Interruptible(ctx, conn.SetReadDeadline, func() (int, error) {
			n, a, err := conn.ReadFromUDPAddrPort(buf[headerRoom:])
			from = a
			return n, err
		})
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, from, ns.Errorf(syscall.EBADF, "socket closed")
			}
			return nil, from, err
		}
		if n > 0 {
			return buf[headerRoom : headerRoom+n], from, nil
		}
	}
}

// udpClient is a connected UDP socket: each write is one datagram.
type udpClient struct {
	conn    *net.UDPConn
	r       *recordReader
	untrack func()
}

func (u *udpClient) Poll(want uint32, wake func()) uint32 { return u.r.poll(u.conn, want, wake) }

func (u *udpClient) Read(ctx context.Context, p []byte) (int, error) {
	return u.r.read(ctx, p, func(ctx context.Context, buf []byte) ([]byte, error) {
		d, _, err := recvInto(ctx, u.conn, buf)
		return d, err
	})
}

func (u *udpClient) Write(ctx context.Context, p []byte) (int, error) {
	return ns.Interruptible(ctx, u.conn.SetWriteDeadline, func() (int, error) { return u.conn.Write(p) })
}

func (u *udpClient) Close() error {
	u.untrack()
	return u.conn.Close()
}

// udpServer is a bound UDP name.
type udpServer struct {
	p         *Provider
	key       string
	conn      *net.UDPConn
	handle    ns.Handle // the server file: holders of it may reopen
	opener    uint32    // pid of the opener, for messages
	done      chan struct{}
	closeOnce sync.Once
	untrack   func()

	mu   sync.Mutex
	last netip.AddrPort // peer of the last read or write
}

func (s *udpServer) setLast(a netip.AddrPort) {
	s.mu.Lock()
	s.last = a
	s.mu.Unlock()
}

func (s *udpServer) lastPeer() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *udpServer) sendTo(ctx context.Context, p []byte, to netip.AddrPort) (int, error) {
	return ns.Interruptible(ctx, s.conn.SetWriteDeadline, func() (int, error) { return s.conn.WriteToUDPAddrPort(p, to) })
}

// reopen gives a write-only channel to the last peer (seed 000 §2.3), to
// processes that hold the server file.
func (s *udpServer) reopen(ctx context.Context, name string, c ns.Caller) (ns.Handle, error) {
	if !c.HoldsHandle(s.handle) {
		return nil, awaitRelease(ctx, c, s.done, "udp/"+name, s.opener)
	}
	dest := s.lastPeer()
	if !dest.IsValid() {
		return nil, ns.Errorf(syscall.EDESTADDRREQ, "udp/%s: no datagram has been received or sent yet, so there is no peer to reply to", name)
	}
	return &udpChannel{s: s, dest: dest, untrack: s.p.track("udp", name, c)}, nil
}

type udpServerHandle struct {
	s        *udpServer
	explicit bool
	r        *recordReader
	w        recordWriter
}

func (h *udpServerHandle) Poll(want uint32, wake func()) uint32 {
	return h.r.poll(h.s.conn, want, wake)
}

func (h *udpServerHandle) Read(ctx context.Context, p []byte) (int, error) {
	return h.r.read(ctx, p, func(ctx context.Context, buf []byte) ([]byte, error) {
		d, from, err := recvInto(ctx, h.s.conn, buf)
		if err != nil {
			return nil, err
		}
		h.s.setLast(from)
		if !h.explicit {
			return d, nil
		}
		hdr := fmt.Sprintf("%s %d %d\n", peerHost(from.Addr()), from.Port(), len(d))
		start := headerRoom - len(hdr)
		copy(buf[start:], hdr)
		return buf[start : headerRoom+len(d)], nil
	})
}

func (h *udpServerHandle) Write(ctx context.Context, p []byte) (int, error) {
	if h.explicit {
		return h.w.write(p, func(to netip.AddrPort, payload []byte) error {
			// Only traffic on the original handle sets the peer that a
			// reopen replies to (seed 000 §2.3.5), not channel writes.
			_, err := h.s.sendTo(ctx, payload, to)
			if err == nil {
				h.s.setLast(to)
			}
			return err
		})
	}
	to := h.s.lastPeer()
	if !to.IsValid() {
		return 0, ns.Errorf(syscall.EDESTADDRREQ, "%s: no datagram received yet, so there is no peer to reply to", h.s.key)
	}
	return h.s.sendTo(ctx, p, to)
}

// Close unbinds before the server leaves the table, so that an open
// waiting for it (awaitRelease) can bind at once.
func (h *udpServerHandle) Close() error {
	var err error
	h.s.closeOnce.Do(func() {
		err = h.s.conn.Close()
		close(h.s.done)
		h.s.p.dropServer(h.s.key, h.s)
		h.s.untrack()
	})
	return err
}

// udpChannel is a write-only channel to one peer through a server's socket.
type udpChannel struct {
	s       *udpServer
	dest    netip.AddrPort
	untrack func()
}

func (u *udpChannel) Poll(want uint32, wake func()) uint32 {
	if want&unix.POLLIN != 0 { // a read fails at once: the channel is write-only
		return unix.POLLIN | ns.PollConn(u.s.conn, want&^unix.POLLIN, nil)
	}
	return ns.PollConn(u.s.conn, want, wake)
}

func (u *udpChannel) Read(context.Context, []byte) (int, error) {
	return 0, ns.Errorf(syscall.EBADF, "%s: a reopened UDP server file is a write-only channel to %s", u.s.key, u.dest)
}

func (u *udpChannel) Write(ctx context.Context, p []byte) (int, error) {
	return u.s.sendTo(ctx, p, u.dest)
}

func (u *udpChannel) Close() error {
	u.untrack()
	return nil
}

// recordWriter parses explicit-addressing writes: "HOST PORT LENGTH\n"
// followed by LENGTH bytes, possibly split over several writes or several
// in one write.
type recordWriter struct {
	mu  sync.Mutex
	buf []byte
}

// maxHeaderLine bounds a header line so garbage cannot grow the buffer.
const maxHeaderLine = 256

func (w *recordWriter) write(p []byte, send func(netip.AddrPort, []byte) error) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) > maxHeaderLine {
				w.buf = nil
				return 0, ns.Errorf(syscall.EINVAL, "explicit addressing: no \"HOST PORT LENGTH\" line within %d bytes", maxHeaderLine)
			}
			return len(p), nil
		}
		to, length, err := ParseHeader(string(w.buf[:i]))
		if err != nil {
			w.buf = nil
			return 0, err
		}
		if len(w.buf)-i-1 < length {
			return len(p), nil // the payload continues in the next write
		}
		payload := w.buf[i+1 : i+1+length]
		if err := send(to, payload); err != nil {
			w.buf = nil
			return 0, err
		}
		w.buf = w.buf[i+1+length:]
		if len(w.buf) == 0 {
			w.buf = nil
		}
	}
}

// ParseHeader parses "HOST PORT LENGTH" (HOST numeric; IPv6 with or
// without brackets).
func ParseHeader(line string) (netip.AddrPort, int, error) {
	bad := func(why string) (netip.AddrPort, int, error) {
		return netip.AddrPort{}, 0, ns.Errorf(syscall.EINVAL, "explicit addressing header %q: %s (want \"HOST PORT LENGTH\")", line, why)
	}
	f := strings.Fields(line)
	if len(f) != 3 {
		return bad("need three fields")
	}
	host := f[0]
	if inner, ok := strings.CutPrefix(host, "["); ok {
		host, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return bad("unbalanced '['")
		}
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return bad("host is not a numeric address")
	}
	port, err := strconv.ParseUint(f[1], 10, 16)
	if err != nil || port == 0 {
		return bad("bad port")
	}
	length, err := strconv.ParseUint(f[2], 10, 32)
	if err != nil || length > maxDatagram {
		return bad("bad length")
	}
	return netip.AddrPortFrom(a, uint16(port)), int(length), nil
}
