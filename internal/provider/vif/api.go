package vif

import (
	"fmt"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"wirefs/internal/ns"
)

// Spec is a VIF made by a program rather than through the files
// (wirefs nice): Ceil 0 means Rate (a shaper).
type Spec struct {
	Iface  string
	Name   string
	Rate   uint64
	Ceil   uint64
	Weight uint32
}

// Make creates the VIF s under its interface's root VIF and returns the
// cgroup directory of the processes attached to it (for clone3's
// CLONE_INTO_CGROUP, so that a command starts in it).
func (p *Provider) Make(s Spec) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.writable(); err != nil {
		return "", err
	}
	ifc, err := p.ifaceLocked(s.Iface)
	if err != nil {
		return "", err
	}
	if err := p.ensureUp(ifc); err != nil {
		return "", err
	}
	q := params{rate: s.Rate, ceil: s.Ceil, weight: s.Weight, prio: fairPrio, mode: ModeFair}
	if q.ceil == 0 || q.ceil == q.rate {
		q.ceil, q.mode = q.rate, ModeShape
	}
	if q.weight == 0 {
		q.weight = 1
	}
	// check against the root first, so that nothing is made for a
	// value that is refused
	probe := newVIF(ifc, ifc.root, s.Name, 0, 0, 0)
	if err := probe.check(q); err != nil {
		return "", ns.Errorf(syscall.EINVAL, "%s/%s: %v", s.Iface, s.Name, err)
	}
	v, err := p.mkdir(ifc.root, s.Name, uint32(syscall.Geteuid()), uint32(syscall.Getegid()), 0o755)
	if err != nil {
		return "", err
	}
	if err := p.apply(v, q); err != nil {
		return "", err
	}
	g, err := p.groupFor(map[string]*VIF{ifc.name: v})
	if err != nil {
		return "", err
	}
	return g.dir, nil
}

// DefaultIface is the interface of the default route (IPv4, else IPv6).
func DefaultIface() (string, error) {
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := routeList(family)
		if err != nil {
			continue
		}
		for _, r := range routes {
			if r.Dst == nil || r.Dst.IP.IsUnspecified() {
				if l, err := linkByIndex(r.LinkIndex); err == nil {
					return l.Attrs().Name, nil
				}
			}
		}
	}
	return "", fmt.Errorf("no default route: name the interface (--iface)")
}

// Drain waits until the VIF s made has sent what its processes left
// queued (a socket closed at exit still holds its send buffer: removing
// the VIF at once would let that go out unshaped): until its byte count
// has been still for a few packets' time at its rate, or limit has passed.
func (p *Provider) Drain(s Spec, limit time.Duration) {
	p.mu.Lock()
	ifc := p.ifaces[s.Iface]
	var v *VIF
	if ifc != nil {
		v = ifc.root.children[s.Name]
	}
	p.mu.Unlock()
	if v == nil || !ifc.up {
		return
	}
	quiet := time.Duration(3 * 1514 * 8 * float64(time.Second) / float64(v.rate))
	quiet = max(quiet, 300*time.Millisecond)
	deadline := time.Now().Add(limit)
	var last uint64
	still := time.Now()
	for time.Now().Before(deadline) {
		sts, err := p.tc.classStats(v.id, ifc.index)
		if err != nil {
			return
		}
		st := sts[0]
		if st.bytes != last || st.backlog != 0 {
			last, still = st.bytes, time.Now()
		} else if time.Since(still) >= quiet {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
