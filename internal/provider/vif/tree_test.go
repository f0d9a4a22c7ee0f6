package vif

import (
	"errors"
	"syscall"
	"testing"

	"wirefs/internal/ns"
)

// tree builds eth0 (100mbit) / web (rate 10mbit, ceil 20mbit) / api
// without a kernel.
func tree() (root, web, api *VIF) {
	ifc := &iface{name: "eth0", index: 1, byID: map[uint16]*VIF{}}
	root = newVIF(ifc, nil, "eth0", rootID, 0, 0)
	root.rate, root.ceil = 100e6, 100e6
	ifc.root = root
	web = newVIF(ifc, root, "web", 2, 1000, 1000)
	web.rate, web.ceil = 10e6, 20e6
	root.children["web"] = web
	api = newVIF(ifc, web, "api", 3, 1000, 1000)
	web.children["api"] = api
	return
}

func TestSet(t *testing.T) {
	_, web, api := tree()
	if api.rate != leafRate || api.effCeil() != 20e6 || api.mode != ModeFair || api.weight != 1 {
		t.Fatalf("a new VIF's defaults: %+v", api.params())
	}
	for _, c := range []struct {
		v           *VIF
		file, value string
		ok          bool
	}{
		{api, "rate", "5mbit", true},
		{api, "rate", "11mbit", false}, // above the parent's rate
		{api, "ceil", "20mbit", true},
		{api, "ceil", "21mbit", false}, // above the parent's ceil
		{api, "rate", "fast", false},
		{api, "weight", "0", false},
		{api, "weight", "100", true},
		{api, "priority", "8", false},
		{api, "mode", "shape", true},
		{api, "mode", "nice", false},
		{web, "ceil", "5mbit", false}, // below its child's ceil (and its own rate)
		{web, "rate", "5kbit", false}, // below its child's rate
		{web, "stats", "1", false},
	} {
		q, err := c.v.set(c.file, c.value)
		if c.ok != (err == nil) {
			t.Errorf("%s/%s = %q: %v (want ok %v)", c.v.path(), c.file, c.value, err, c.ok)
			continue
		}
		if err != nil {
			if e := ns.Errno(err); e != syscall.EINVAL && e != syscall.EACCES {
				t.Errorf("%s/%s = %q: errno %v", c.v.path(), c.file, c.value, e)
			}
			continue
		}
		c.v.rate, c.v.ceil, c.v.weight, c.v.prio, c.v.mode = q.rate, q.ceil, q.weight, q.prio, q.mode
	}
	// a shaper's ceil is its rate
	if api.effCeil() != 5e6 {
		t.Errorf("shape mode: ceil %d, want the rate", api.effCeil())
	}
	if _, err := web.set("rate", "4mbit"); !errors.Is(err, syscall.EINVAL) && ns.Errno(err) != syscall.EINVAL {
		t.Errorf("web below its children's rates: %v", err)
	}
}

func TestResolveTarget(t *testing.T) {
	root, web, api := tree()
	for tgt, want := range map[string]*VIF{
		"/net/vif/eth0/web":      web,
		"../../vif/eth0/web/api": api,
		"/net/vif/eth0":          root,
		"/net/vif/eth1/web":      nil,
		"/net/vif/eth0/nope":     nil,
		"web":                    nil,
	} {
		if got := resolveTarget(root.ifc, tgt); got != want {
			t.Errorf("resolveTarget(%q) = %v, want %v", tgt, got, want)
		}
	}
}

func TestMay(t *testing.T) {
	owner := ns.Caller{Uid: 1000, Gid: 1000}
	other := ns.Caller{Uid: 1001, Gid: 1001}
	if !may(owner, 1000, 1000, 0o755, 3) || may(other, 1000, 1000, 0o755, 2) || !may(other, 1000, 1000, 0o757, 2) ||
		!may(ns.Caller{}, 1000, 1000, 0, 7) {
		t.Error("may disagrees with the file permission rules")
	}
}
