package vif

import (
	"fmt"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// tcConn is the provider's route netlink socket for reading class
// counters, the request of every stats read. It is a plain blocking
// descriptor, not an os.File: the library's sockets are registered with
// Go's poller, and each request and answer on them woke the poller's
// thread from epoll_wait (another CPU woken, twice per request); a
// request here is one sendto and one recvfrom per answer, both
// synchronous (the kernel answers within sendto). One per provider, so
// it is in the provider's network namespace and closed with it.
type tcConn struct {
	mu  sync.Mutex // one request at a time: answers are matched by seq
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
	// broadcast): a lost answer must not hold a stats read forever.
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

// classStats reads the counters of the class Major:id on each device:
// one RTM_GETTCLASS per device, all in one datagram, for that class
// alone (a dump would send and parse every class of the device).
func (c *tcConn) classStats(id uint16, devs ...int) ([]classStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return nil, unix.EBADF
	}
	first := c.seq + 1
	var req []byte
	for _, dev := range devs {
		c.seq++
		// NLM_F_ECHO: without it the kernel only broadcasts the class to
		// the tc group (rtnetlink_send), never to the asker
		r := nl.NewNetlinkRequest(unix.RTM_GETTCLASS, unix.NLM_F_ECHO)
		r.Seq = c.seq
		r.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(dev), Handle: handle(id)})
		req = append(req, r.Serialize()...)
	}
	if err := unix.Sendto(c.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("class %x:%x: send: %w", Major, id, err)
	}
	out, got := make([]classStats, len(devs)), make([]bool, len(devs))
	for left := len(devs); left > 0; {
		n, _, err := unix.Recvfrom(c.fd, c.buf, 0)
		if err != nil {
			return nil, fmt.Errorf("class %x:%x: receive: %w", Major, id, err)
		}
		msgs, err := syscall.ParseNetlinkMessage(c.buf[:n])
		if err != nil {
			return nil, fmt.Errorf("class %x:%x: %w", Major, id, err)
		}
		for _, m := range msgs {
			i := int(m.Header.Seq - first) // unsigned: wraps for an earlier seq
			if m.Header.Seq-first >= uint32(len(devs)) || m.Header.Pid != c.pid || got[i] {
				continue // a late answer to an earlier request that timed out
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return nil, fmt.Errorf("class %x:%x: short netlink error", Major, id)
				}
				if errno := int32(nl.NativeEndian().Uint32(m.Data)); errno != 0 {
					return nil, fmt.Errorf("class %x:%x of device %d: %w", Major, id, devs[i], unix.Errno(-errno))
				}
			case unix.RTM_NEWTCLASS:
				if out[i], err = parseClassStats(m.Data); err != nil {
					return nil, err
				}
				got[i] = true
				left--
			}
		}
	}
	return out, nil
}
