package vif

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// tcConn is the provider's route netlink socket for its HTB classes:
// making, changing and removing them, and reading their counters (every
// stats read). It is a plain blocking descriptor, not an os.File: the
// library's sockets are registered with Go's poller, and each request
// and answer on them woke the poller's thread from epoll_wait (another
// CPU woken, twice per request); a request here is one sendto and one
// recvfrom per answer, both synchronous (the kernel has answered when
// sendto returns). One per provider, so it is in the provider's network
// namespace and closed with it.
type tcConn struct {
	mu  sync.Mutex // one exchange at a time: answers are matched by seq
	fd  int        // -1 once closed
	pid uint32     // the socket's port id, the answers' destination
	seq uint32
	buf []byte // one answer (a class message is ~240 bytes)
}

func openTCConn() (*tcConn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	c := &tcConn{fd: fd, buf: make([]byte, 64<<10)}
	// The kernel answers at once or not at all (a request it would only
	// broadcast): a lost answer must not hold an operation forever.
	tv := unix.Timeval{Sec: 1}
	err = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err == nil {
		err = unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	}
	if err == nil {
		var sa unix.Sockaddr
		if sa, err = unix.Getsockname(fd); err == nil {
			c.pid = sa.(*unix.SockaddrNetlink).Pid
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	return c, nil
}

func (c *tcConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// exchange sends reqs in one datagram (the kernel handles them in
// order, each on its own: one failing does not stop the next) and waits
// for an answer to each: an acknowledgement, an error, or a message of
// type want, which is given to got with the request's index (want 0, got
// nil: acknowledgements only). It returns the errors joined.
func (c *tcConn) exchange(reqs []*nl.NetlinkRequest, want uint16, got func(i int, msg []byte) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return unix.EBADF
	}
	first := c.seq + 1
	var b []byte
	for _, r := range reqs {
		c.seq++
		r.Seq = c.seq
		b = append(b, r.Serialize()...)
	}
	if err := unix.Sendto(c.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	answered := make([]bool, len(reqs))
	var errs []error
	for left := len(reqs); left > 0; {
		n, _, err := unix.Recvfrom(c.fd, c.buf, 0)
		if err != nil {
			return fmt.Errorf("receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(c.buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			i := int(m.Header.Seq - first) // unsigned: wraps for an earlier seq
			if m.Header.Seq-first >= uint32(len(reqs)) || m.Header.Pid != c.pid || answered[i] {
				continue // a late answer to an earlier exchange that timed out
			}
			switch {
			case m.Header.Type == unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return errors.New("short netlink error")
				}
				if errno := int32(nl.NativeEndian().Uint32(m.Data)); errno != 0 {
					errs = append(errs, unix.Errno(-errno))
				}
			case m.Header.Type == want && got != nil:
				if err := got(i, m.Data); err != nil {
					errs = append(errs, err)
				}
			default:
				continue
			}
			answered[i] = true
			left--
		}
	}
	return errors.Join(errs...)
}

// classStats reads the counters of the class Major:id on each device:
// one RTM_GETTCLASS per device, all in one datagram, for that class
// alone (a dump would send and parse every class of the device).
func (c *tcConn) classStats(id uint16, devs ...int) ([]classStats, error) {
	reqs := make([]*nl.NetlinkRequest, len(devs))
	for i, dev := range devs {
		// NLM_F_ECHO: without it the kernel only broadcasts the class to
		// the tc group (rtnetlink_send), never to the asker
		reqs[i] = nl.NewNetlinkRequest(unix.RTM_GETTCLASS, unix.NLM_F_ECHO)
		reqs[i].AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(dev), Handle: handle(id)})
	}
	out := make([]classStats, len(devs))
	err := c.exchange(reqs, unix.RTM_NEWTCLASS, func(i int, msg []byte) (err error) {
		out[i], err = parseClassStats(msg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("class %x:%x: %w", Major, id, err)
	}
	return out, nil
}

func (c *tcConn) add(cl class) error {
	return c.modify(unix.RTM_NEWTCLASS, unix.NLM_F_CREATE|unix.NLM_F_EXCL, cl)
}
func (c *tcConn) change(cl class) error { return c.modify(unix.RTM_NEWTCLASS, 0, cl) }

// del removes the class Major:id of the device; one that is not there
// is not an error.
func (c *tcConn) del(ifindex int, id uint16) error {
	err := c.modify(unix.RTM_DELTCLASS, 0, class{ifindex: ifindex, id: id})
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

func (c *tcConn) modify(cmd, flags int, cl class) error {
	r := nl.NewNetlinkRequest(cmd, flags|unix.NLM_F_ACK)
	if cmd == unix.RTM_DELTCLASS {
		r.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(cl.ifindex), Handle: handle(cl.id)})
	} else {
		htbClassRequest(r, cl)
	}
	if err := c.exchange([]*nl.NetlinkRequest{r}, 0, nil); err != nil {
		return fmt.Errorf("class %x:%x of device %d: %w", Major, cl.id, cl.ifindex, err)
	}
	return nil
}

// htbClassRequest fills r with the class as the library's ClassAdd and
// ClassChange send it (its NewHtbClass computes the burst buffers),
// except for the two rate tables (2 KiB, built by reflection at each
// change: a fifth of a rate write's CPU here): the kernel reads them only
// for a rate spec that does not name its link layer (iproute2 before
// Linux 3.8), and these say Ethernet, as the library's do.
func htbClassRequest(r *nl.NetlinkRequest, cl class) {
	hc := cl.htb()
	r.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(cl.ifindex), Handle: hc.Handle, Parent: hc.Parent})
	r.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("htb")))
	spec := func(bytesPerSec uint64) nl.TcRateSpec {
		return nl.TcRateSpec{Rate: uint32(min(bytesPerSec, math.MaxUint32)), Linklayer: nl.LINKLAYER_ETHERNET}
	}
	opt := nl.TcHtbCopt{Rate: spec(hc.Rate), Ceil: spec(hc.Ceil), Buffer: hc.Buffer, Cbuffer: hc.Cbuffer, Quantum: hc.Quantum, Prio: hc.Prio}
	options := nl.NewRtAttr(nl.TCA_OPTIONS, nil)
	options.AddRtAttr(nl.TCA_HTB_PARMS, opt.Serialize())
	if hc.Rate > math.MaxUint32 { // the kernel takes the larger of the two
		options.AddRtAttr(nl.TCA_HTB_RATE64, nl.Uint64Attr(hc.Rate))
	}
	if hc.Ceil > math.MaxUint32 {
		options.AddRtAttr(nl.TCA_HTB_CEIL64, nl.Uint64Attr(hc.Ceil))
	}
	r.AddData(options)
}
