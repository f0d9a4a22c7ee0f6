package vif

import (
	"syscall"
	"testing"

	"github.com/vishvananda/netlink/nl"
)

// TestGuarded: a malformed answer inside the library is an error, not a
// crash of the daemon. The attribute is 5 bytes long and the last of the
// message, unpadded: nl.ParseRouteAttr (v1.3.1) slices to its padded
// length, 8, past the end.
func TestGuarded(t *testing.T) {
	bad := []byte{5, 0, 1, 0, 'x'}
	_, err := guarded("parse", func() ([]syscall.NetlinkRouteAttr, error) { return nl.ParseRouteAttr(bad) })
	if err == nil {
		t.Fatal("a malformed attribute parsed without an error")
	}
	t.Log(err)
	if v, err := guarded("fine", func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("guarded(fine) = %v, %v", v, err)
	}
}
