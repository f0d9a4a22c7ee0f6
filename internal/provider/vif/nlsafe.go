package vif

import (
	"fmt"
	"log/slog"

	"github.com/vishvananda/netlink"
)

// The library's parsers of what the kernel sends panic on a malformed
// attribute: nl.ParseRouteAttr (v1.3.1) checks an attribute's length
// against what is left but then skips its padded length, which for an
// unpadded last attribute (length 5 of 5 bytes left) is past the end.
// The kernel pads its attributes, so this is a defence, not a bug seen;
// but a daemon serving others must answer a bad message with an error,
// not exit. The calls below are the ones whose answers the library
// parses (the rest only read an acknowledgement's error number, and
// wirefs parses class counters itself, walkAttrs); each recovers a panic
// inside the library into an error, with a log line. Recovering here
// rather than patching a vendored copy: the fix upstream is one bounds
// check, and a copy of the whole library for it would be 30k lines to
// keep; the recovery stays correct whatever the library's version.
func guarded[T any](what string, f func() (T, error)) (res T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: malformed netlink answer (the netlink library panicked: %v)", what, r)
			slog.Error("vif: " + err.Error())
		}
	}()
	return f()
}

func linkList() ([]netlink.Link, error) { return guarded("list links", netlink.LinkList) }

func linkByName(name string) (netlink.Link, error) {
	return guarded("link "+name, func() (netlink.Link, error) { return netlink.LinkByName(name) })
}

func linkByIndex(index int) (netlink.Link, error) {
	return guarded(fmt.Sprintf("link %d", index), func() (netlink.Link, error) { return netlink.LinkByIndex(index) })
}

func qdiscList(l netlink.Link) ([]netlink.Qdisc, error) {
	return guarded("qdiscs of "+l.Attrs().Name, func() ([]netlink.Qdisc, error) { return netlink.QdiscList(l) })
}

func routeList(family int) ([]netlink.Route, error) {
	return guarded("routes", func() ([]netlink.Route, error) { return netlink.RouteList(nil, family) })
}
