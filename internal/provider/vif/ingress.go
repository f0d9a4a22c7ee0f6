package vif

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Ingress: a qdisc shapes what leaves a device, so what comes in by an
// interface is redirected (an ingress qdisc with a match-all u32 filter
// and a mirred action) to an IFB device of wirefs's, on whose egress
// sits an HTB with the same classes as the interface's. There the
// classifier is a cls_bpf program (bpf/vif.c, compiled by clang, loaded
// with bpf2go's loader) that finds the local socket a packet is for
// (bpf_sk_lookup_tcp/udp) and returns the class the egress program
// recorded in that socket's storage (tc programs cannot ask a socket's
// cgroup; every TCP socket sends, if only ACKs, so the egress program
// sees it first; a UDP socket that only receives is not shaped). Shaping what has already arrived works by
// delaying and dropping it, so TCP senders slow down: less exact than
// egress. A cgroup ingress policer (drop above a token bucket) would
// need no IFB but could not borrow or share by weight.

// ifbPrefix names wirefs's IFB devices: wfi<IFINDEX> of the interface;
// their alias says whose they are (the mark of leftovers).
const (
	ifbPrefix = "wfi"
	ifbAlias  = "wirefs ifb"
)

func ifbName(ifindex int) string { return ifbPrefix + strconv.Itoa(ifindex) }

// setupIngress redirects l's incoming packets to a new IFB device with
// wirefs's HTB and the classifier; it returns the IFB's index. An
// interface with an ingress qdisc someone else made is refused.
func setupIngress(l netlink.Link, prog *ebpf.Program) (int, error) {
	name := l.Attrs().Name
	qs, err := qdiscList(l)
	if err != nil {
		return 0, err
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_INGRESS || q.Type() == "clsact" || q.Type() == "ingress" {
			return 0, &refusal{fmt.Sprintf("%s has an %s qdisc that wirefs did not make; its incoming traffic is not shaped", name, q.Type())}
		}
	}
	ifb := &netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Name: ifbName(l.Attrs().Index), TxQLen: 1000}}
	if err := netlink.LinkAdd(ifb); err != nil {
		return 0, fmt.Errorf("add ifb %s: %w", ifb.Name, err)
	}
	fail := func(err error) (int, error) {
		removeIngress(l.Attrs().Index)
		return 0, err
	}
	il, err := linkByName(ifb.Name)
	if err != nil {
		return fail(err)
	}
	if err := netlink.LinkSetAlias(il, ifbAlias+" for "+name); err != nil {
		return fail(err)
	}
	if err := netlink.LinkSetUp(il); err != nil {
		return fail(err)
	}
	if err := setupHTB(il); err != nil {
		return fail(err)
	}
	f := &netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{LinkIndex: il.Attrs().Index, Parent: handle(0), Handle: 1, Priority: 1, Protocol: unix.ETH_P_ALL},
		Fd: prog.FD(), Name: "wirefs_vif_in"}
	if err := netlink.FilterAdd(f); err != nil {
		return fail(fmt.Errorf("%s: add bpf filter: %w", ifb.Name, err))
	}
	ing := &netlink.Ingress{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_INGRESS}}
	if err := netlink.QdiscAdd(ing); err != nil {
		return fail(fmt.Errorf("%s: add ingress qdisc: %w", name, err))
	}
	redirect := &netlink.U32{FilterAttrs: netlink.FilterAttrs{LinkIndex: l.Attrs().Index, Parent: netlink.MakeHandle(0xffff, 0), Priority: 1, Protocol: unix.ETH_P_ALL},
		Actions: []netlink.Action{netlink.NewMirredAction(il.Attrs().Index)}}
	if err := netlink.FilterAdd(redirect); err != nil {
		return fail(fmt.Errorf("%s: add mirred filter: %w", name, err))
	}
	return il.Attrs().Index, nil
}

// removeIngress removes the IFB of the interface numbered ifindex (its
// qdiscs go with it) and the interface's ingress qdisc.
func removeIngress(ifindex int) error {
	var errs []error
	if il, err := linkByName(ifbName(ifindex)); err == nil && strings.HasPrefix(il.Attrs().Alias, ifbAlias) {
		if err := netlink.LinkDel(il); err != nil {
			errs = append(errs, err)
		}
	}
	if l, err := linkByIndex(ifindex); err == nil {
		ing := &netlink.Ingress{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: ifindex, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_INGRESS}}
		if err := netlink.QdiscDel(ing); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("%s: remove ingress qdisc: %w", l.Attrs().Name, err))
		}
	}
	return errors.Join(errs...)
}

// removeIngressLeftovers removes every IFB of wirefs's in the namespace
// (what a killed daemon left) and the ingress qdisc of its interface.
func removeIngressLeftovers() ([]string, error) {
	links, err := linkList()
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, l := range links {
		name := l.Attrs().Name
		if l.Type() != "ifb" || !strings.HasPrefix(name, ifbPrefix) || !strings.HasPrefix(l.Attrs().Alias, ifbAlias) {
			continue
		}
		ifindex, err := strconv.Atoi(strings.TrimPrefix(name, ifbPrefix))
		if err != nil {
			continue
		}
		if err := removeIngress(ifindex); err != nil {
			errs = append(errs, err)
		}
		done = append(done, name)
	}
	return done, errors.Join(errs...)
}
