package vif

import (
	"errors"
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wirefs/internal/leakcheck"
	"wirefs/internal/testsrv"
)

// inPrivateNetns runs f on a thread of its own in a new network
// namespace (its loopback, its veth pair: the host's interfaces are
// never touched); the thread ends with f, and the namespace with it.
func inPrivateNetns(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		testsrv.Unavailable(t, "needs root (a network namespace of its own)")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		f()
	}()
	<-done
}

// TestClassStats: one request for the class on two devices answers each
// device's counters in the order asked; a class that is not there is an
// error; the socket is closed with the connection.
func TestClassStats(t *testing.T) {
	inPrivateNetns(t, func() {
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "wft0"}, PeerName: "wft1"}
		if err == nil {
			err = netlink.LinkAdd(veth)
		}
		if err != nil {
			t.Error(err)
			return
		}
		for _, dev := range []int{lo.Attrs().Index, veth.Attrs().Index} {
			htb := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: dev, Handle: handle(0), Parent: netlink.HANDLE_ROOT})
			htb.Defcls = 5 // what lo sends goes to 7766:5
			if err := netlink.QdiscAdd(htb); err != nil {
				t.Error(err)
				return
			}
			if err := netlink.ClassAdd(class{ifindex: dev, id: 5, rate: 1e9, ceil: 1e9}.htb()); err != nil {
				t.Error(err)
				return
			}
		}
		c, err := net.Dial("udp", "127.0.0.1:9") // discard: nobody listens, the packets still leave lo
		if err != nil {
			t.Error(err)
			return
		}
		for range 10 {
			c.Write(make([]byte, 100))
		}
		c.Close()

		base := leakcheck.Take(t)
		tc, err := openTCConn()
		if err != nil {
			t.Error(err)
			return
		}
		st, err := tc.classStats(5, lo.Attrs().Index, veth.Attrs().Index)
		if err != nil || len(st) != 2 || st[0].packets < 10 || st[0].bytes < 10*128 || st[1] != (classStats{}) {
			t.Errorf("classStats(lo, the idle veth) = %+v, %v; want lo's 10 datagrams and nothing on the veth", st, err)
		}
		swapped, err := tc.classStats(5, veth.Attrs().Index, lo.Attrs().Index)
		if err != nil || len(swapped) != 2 || swapped[0] != st[1] || swapped[1].packets != st[0].packets {
			t.Errorf("classStats(the veth, lo) = %+v, %v; want %+v in the other order", swapped, err, st)
		}
		if _, err := tc.classStats(6, lo.Attrs().Index); !errors.Is(err, unix.ENOENT) {
			t.Errorf("classStats of a class that is not there: %v, want ENOENT", err)
		}
		// the error's leftover answer (none here) or a late one must not
		// confuse the next request
		if again, err := tc.classStats(5, lo.Attrs().Index); err != nil || again[0].packets != st[0].packets {
			t.Errorf("classStats after an error = %+v, %v", again, err)
		}
		tc.close()
		if _, err := tc.classStats(5, lo.Attrs().Index); err == nil {
			t.Error("classStats on a closed connection succeeded")
		}
		base.Check(t)
	})
}

// TestClassRequests: the classes tcConn makes and changes are the ones
// the library's ClassAdd and ClassChange make (without their rate
// tables), as the kernel reports them; a removed class is gone.
func TestClassRequests(t *testing.T) {
	inPrivateNetns(t, func() {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "wft0"}, PeerName: "wft1"}
		if err := netlink.LinkAdd(veth); err != nil {
			t.Error(err)
			return
		}
		peer, err := netlink.LinkByName("wft1")
		if err != nil {
			t.Error(err)
			return
		}
		ours, lib := veth.Attrs().Index, peer.Attrs().Index
		for _, dev := range []int{ours, lib} {
			if err := netlink.QdiscAdd(netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: dev, Handle: handle(0), Parent: netlink.HANDLE_ROOT})); err != nil {
				t.Error(err)
				return
			}
		}
		tc, err := openTCConn()
		if err != nil {
			t.Error(err)
			return
		}
		defer tc.close()
		classOf := func(dev int, id uint16) *netlink.HtbClass {
			cs, err := netlink.ClassList(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: dev}}, 0)
			if err != nil {
				t.Error(err)
				return nil
			}
			for _, c := range cs {
				if h, ok := c.(*netlink.HtbClass); ok && h.Handle == handle(id) {
					h.LinkIndex = 0
					h.Statistics = nil
					return h
				}
			}
			return nil
		}
		for _, step := range []struct {
			c      class
			change bool
		}{
			{class{id: 1, rate: 40e9, ceil: 40e9}, false}, // above 2^32 bytes/s: the 64-bit attributes
			{class{id: 2, parent: 1, rate: 2e6, ceil: 10e6, quantum: 3 * quantumUnit, prio: 1}, false},
			{class{id: 2, parent: 1, rate: 3e6, ceil: 3e6, quantum: quantumUnit, prio: 3}, true},
		} {
			a, b := step.c, step.c
			a.ifindex, b.ifindex = ours, lib
			var err1, err2 error
			if step.change {
				err1, err2 = tc.change(a), netlink.ClassChange(b.htb())
			} else {
				err1, err2 = tc.add(a), netlink.ClassAdd(b.htb())
			}
			if err1 != nil || err2 != nil {
				t.Errorf("%+v: tcConn %v, library %v", step.c, err1, err2)
				continue
			}
			got, want := classOf(ours, step.c.id), classOf(lib, step.c.id)
			if got == nil || want == nil || *got != *want {
				t.Errorf("%+v: the kernel has %+v, from the library %+v", step.c, got, want)
			}
		}
		if err := tc.add(class{ifindex: ours, id: 2, parent: 1, rate: 1e6, ceil: 1e6}); !errors.Is(err, unix.EEXIST) {
			t.Errorf("adding a class that is there: %v, want EEXIST", err)
		}
		if err := tc.del(ours, 2); err != nil || classOf(ours, 2) != nil {
			t.Errorf("del: %v; class %+v", err, classOf(ours, 2))
		}
		if err := tc.del(ours, 2); err != nil {
			t.Errorf("del of a class that is not there: %v, want nil", err)
		}
	})
}
