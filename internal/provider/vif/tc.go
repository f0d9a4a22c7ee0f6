package vif

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Major is the handle major of every qdisc wirefs makes ("wf"): the
// mark by which the next start recognises leftovers of a killed daemon.
// A root qdisc with any other non-zero handle is someone else's.
const Major = 0x7766

// selfBit marks a VIF's own leaf class: VIF n is the class Major:n, and
// the processes attached to n itself (not to a child) are in the leaf
// Major:(n|selfBit) under it — HTB queues only in leaves.
const selfBit = 0x8000

// rootID is the root VIF's class; its leaf is the default class.
const rootID = 1

func handle(minor uint16) uint32 { return netlink.MakeHandle(Major, minor) }

// quantumUnit is the HTB quantum of weight 1: HTB shares the spare
// bandwidth among siblings in proportion to their quanta (deficit round
// robin), which holds only when a quantum is at least the largest packet:
// 64 KiB, a GSO packet.
const quantumUnit = 65536

// leafRate is the guarantee of a VIF's own leaf: tiny, so that it takes
// the VIF's bandwidth only by borrowing, weighted as its children.
const leafRate = 8000

// ours reports whether q is a qdisc wirefs made.
func ours(q netlink.Qdisc) bool {
	return q.Attrs().Handle>>16 == Major
}

// rootQdisc is link's root qdisc, or nil.
func rootQdisc(l netlink.Link) (netlink.Qdisc, error) {
	qs, err := qdiscList(l)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT {
			return q, nil
		}
	}
	return nil, nil
}

// linkRate is the interface's speed, 10gbit when it does not say.
func linkRate(name string) uint64 {
	b, err := os.ReadFile("/sys/class/net/" + name + "/speed")
	if err == nil {
		if mbit, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && mbit > 0 {
			return uint64(mbit) * 1e6
		}
	}
	return 10e9
}

// ifaceSock is a socket kept open for ifIndex's ioctl (any socket of the
// daemon's network namespace answers it).
var ifaceSock = sync.OnceValues(func() (int, error) {
	return unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
})

// ifIndex is the index of the interface named name: one ioctl, where a
// netlink RTM_GETLINK costs 20-40 µs (the whole link is sent and parsed),
// and every operation on a VIF checks that its interface is still there.
func ifIndex(name string) (int, error) {
	fd, err := ifaceSock()
	if err != nil {
		return 0, err
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, err
	}
	return int(ifr.Uint32()), nil
}

// setupHTB puts wirefs's HTB on l as its root qdisc, unless l's root
// qdisc is someone else's: only the kernel's default (handle 0) is
// replaced, and deleting ours gives it back.
func setupHTB(l netlink.Link) error {
	name := l.Attrs().Name
	q, err := rootQdisc(l)
	if err != nil {
		return fmt.Errorf("%s: list qdiscs: %w", name, err)
	}
	if q != nil && q.Attrs().Handle != 0 && !ours(q) {
		return &refusal{fmt.Sprintf("%s has a root qdisc (%s %x:) that wirefs did not make; wirefs never touches it (tc qdisc del dev %s root, if it is not needed, makes vif/%s usable)",
			name, q.Type(), q.Attrs().Handle>>16, name, name)}
	}
	if q != nil && ours(q) {
		if err := netlink.QdiscDel(q); err != nil {
			return fmt.Errorf("%s: remove wirefs's old qdisc: %w", name, err)
		}
	}
	htb := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: handle(0), Parent: netlink.HANDLE_ROOT})
	htb.Defcls = uint32(rootID | selfBit)
	htb.Rate2Quantum = 10
	if err := netlink.QdiscAdd(htb); err != nil {
		return fmt.Errorf("%s: add htb qdisc: %w", name, err)
	}
	return nil
}

// removeHTB deletes wirefs's root qdisc from the interface named name
// (with every class under it), if it is there.
func removeHTB(name string) error {
	l, err := linkByName(name)
	if err != nil {
		return nil // gone with its qdiscs
	}
	q, err := rootQdisc(l)
	if err != nil || q == nil || !ours(q) {
		return err
	}
	return netlink.QdiscDel(q)
}

// removeLeftovers deletes wirefs's qdiscs from every interface of the
// namespace (what a killed daemon left) and returns their names.
func removeLeftovers() ([]string, error) {
	links, err := linkList()
	if err != nil {
		return nil, err
	}
	var done []string
	for _, l := range links {
		q, err := rootQdisc(l)
		if err != nil || q == nil || !ours(q) {
			continue
		}
		if err := netlink.QdiscDel(q); err != nil {
			return done, fmt.Errorf("%s: remove wirefs's qdisc: %w", l.Attrs().Name, err)
		}
		done = append(done, l.Attrs().Name)
	}
	return done, nil
}

// class is one HTB class as wirefs asks for it.
type class struct {
	ifindex    int
	id, parent uint16
	rate, ceil uint64 // bits/s
	quantum    uint32
	prio       uint32
}

func (c class) htb() *netlink.HtbClass {
	parent := handle(c.parent) // the root VIF's class hangs off the qdisc, Major:0
	hc := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: c.ifindex, Handle: handle(c.id), Parent: parent},
		netlink.HtbClassAttrs{Rate: c.rate, Ceil: c.ceil, Quantum: c.quantum, Prio: c.prio})
	return hc
}

// classStats are one class's counters.
type classStats struct {
	bytes, packets uint64
	drops          uint32
	backlog        uint32
}

// parseClassStats reads the counters from a class message (RTM_NEWTCLASS:
// tcmsg, then attributes; the counters are TCA_STATS2's gnet_stats_basic,
// bytes u64 and packets u32, and gnet_stats_queue, qlen, backlog, drops,
// requeues and overlimits, u32 each).
func parseClassStats(msg []byte) (classStats, error) {
	var s classStats
	if len(msg) < nl.SizeofTcMsg {
		return s, fmt.Errorf("class message of %d bytes", len(msg))
	}
	native := nl.NativeEndian()
	walkAttrs(msg[nl.SizeofTcMsg:], func(typ uint16, v []byte) {
		if typ != nl.TCA_STATS2 {
			return
		}
		walkAttrs(v, func(typ uint16, v []byte) {
			switch {
			case typ == nl.TCA_STATS_BASIC && len(v) >= 12:
				s.bytes, s.packets = native.Uint64(v), uint64(native.Uint32(v[8:]))
			case typ == nl.TCA_STATS_QUEUE && len(v) >= 12:
				s.backlog, s.drops = native.Uint32(v[4:]), native.Uint32(v[8:])
			}
		})
	})
	return s, nil
}

// walkAttrs calls f with the type and value of each netlink attribute in
// b, up to the first malformed one (nl.ParseRouteAttr panics on some).
func walkAttrs(b []byte, f func(typ uint16, v []byte)) {
	native := nl.NativeEndian()
	for len(b) >= unix.SizeofRtAttr {
		n := int(native.Uint16(b))
		if n < unix.SizeofRtAttr || n > len(b) {
			return
		}
		f(native.Uint16(b[2:])&^unix.NLA_F_NESTED, b[unix.SizeofRtAttr:n])
		b = b[min((n+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1), len(b)):]
	}
}

// refusal is an error that is the user's to fix (EBUSY), with its reason.
type refusal struct{ why string }

func (r *refusal) Error() string { return r.why }
