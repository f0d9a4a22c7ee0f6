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
			if err := netlink.ClassAdd(class{ifindex: dev, id: 5, rate: 1e9, ceil: 1e9}.htb()); err != nil { // not classSock: it would stay in this namespace
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
