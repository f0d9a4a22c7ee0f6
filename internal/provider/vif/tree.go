package vif

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"wirefs/internal/ns"
)

// Modes of a VIF, seed 003 §III: a shaper is non-work-conserving (it
// sends at its rate and never more: ceil = rate); fair and priority are
// work-conserving (they borrow their parent's spare bandwidth up to
// ceil), shared among siblings by weight (fair) or first to the lowest
// priority number (priority).
const (
	ModeShape    = "shape"
	ModeFair     = "fair"
	ModePriority = "priority"
)

// fairPrio is the HTB priority of fair and shaping VIFs: the middle, so
// that priority VIFs can be put before or after them.
const fairPrio = 3

// HTB has 8 levels (TC_HTB_MAXDEPTH): the root VIF's class, one inner
// class per VIF below it, and the leaves.
const (
	htbLevels  = 8
	maxNesting = htbLevels - 2
)

// maxWeight bounds weight (HTB's quantum is weight × 64 KiB).
const maxWeight = 100

// VIF is one virtual network interface: an HTB class of its interface.
type VIF struct {
	ifc      *iface
	parent   *VIF
	name     string
	id       uint16
	children map[string]*VIF

	rate, ceil uint64 // bits/s, as written; ceil 0: the parent's
	weight     uint32
	prio       uint32
	mode       string

	uid, gid uint32
	perm     os.FileMode
	files    map[string]*fileState
	// mtime changes with what is done to the directory itself (a child
	// made or removed, chmod, chown), as each file's with what is done
	// to it (a write, chmod): a door keeps each one's attributes until
	// an operation on that node (dirTTL)
	mtime time.Time

	// the last stats sample, for the current rate
	lastBytes uint64
	lastIn    uint64
	lastAt    time.Time
}

// fileState is one parameter file's own attributes.
type fileState struct {
	mode  os.FileMode
	mtime time.Time
}

// the parameter files and their default modes
var paramFiles = map[string]os.FileMode{
	"rate": 0o644, "ceil": 0o644, "weight": 0o644, "priority": 0o644, "mode": 0o644,
	"stats": 0o444, "procs": 0o444,
}

func newVIF(ifc *iface, parent *VIF, name string, id uint16, uid, gid uint32) *VIF {
	v := &VIF{ifc: ifc, parent: parent, name: name, id: id, children: map[string]*VIF{},
		weight: 1, prio: fairPrio, mode: ModeFair, uid: uid, gid: gid, perm: 0o755,
		files: map[string]*fileState{}, mtime: time.Now(), lastAt: time.Now()}
	for f, m := range paramFiles {
		v.files[f] = &fileState{mode: m, mtime: v.mtime}
	}
	if parent != nil {
		v.rate = leafRate // ceil 0: the parent's, following it
	}
	return v
}

// path is the VIF's name under vif/: eth0/web/api.
func (v *VIF) path() string {
	if v.parent == nil {
		return v.name
	}
	return v.parent.path() + "/" + v.name
}

// effCeil is the limit the kernel enforces: a shaper's is its rate, an
// unset ceil is the parent's.
func (v *VIF) effCeil() uint64 { return v.params().effCeil(v.parent) }

func (v *VIF) htbPrio() uint32 {
	if v.mode == ModePriority {
		return v.prio
	}
	return fairPrio
}

// params is the part of a VIF a write changes.
type params struct {
	rate, ceil   uint64
	weight, prio uint32
	mode         string
}

func (v *VIF) params() params {
	return params{rate: v.rate, ceil: v.ceil, weight: v.weight, prio: v.prio, mode: v.mode}
}

func (q params) effCeil(parent *VIF) uint64 {
	switch {
	case q.mode == ModeShape:
		return q.rate
	case q.ceil == 0 && parent != nil:
		return parent.effCeil()
	}
	return q.ceil
}

// check says why v cannot take the parameters q: a VIF cannot ask more
// than its parent gives (seed 003's protection with inheritance), and
// cannot take from its children what they were given.
func (v *VIF) check(q params) error {
	if q.rate > q.effCeil(v.parent) {
		return fmt.Errorf("rate %s is above ceil %s", FormatRate(q.rate), FormatRate(q.effCeil(v.parent)))
	}
	if q.weight < 1 || q.weight > maxWeight {
		return fmt.Errorf("weight %d is not within 1..%d", q.weight, maxWeight)
	}
	if q.prio > 7 {
		return fmt.Errorf("priority %d is not within 0..7", q.prio)
	}
	if p := v.parent; p != nil {
		if q.effCeil(p) > p.effCeil() {
			return fmt.Errorf("ceil %s is above the ceil of %s, %s: a VIF cannot ask more than its parent", FormatRate(q.effCeil(p)), p.path(), FormatRate(p.effCeil()))
		}
		sum := guaranteed(q.rate)
		for _, s := range p.children {
			if s != v {
				sum += guaranteed(s.rate)
			}
		}
		if sum > p.rate {
			return fmt.Errorf("the rates of %s's children would add up to %s, above its rate %s", p.path(), FormatRate(sum), FormatRate(p.rate))
		}
	}
	var sum uint64
	for _, c := range v.children {
		sum += guaranteed(c.rate)
		if follows(c) {
			continue // its ceil is v's
		}
		if c.effCeil() > q.effCeil(v.parent) {
			return fmt.Errorf("%s's ceil %s would be above %s's %s: lower the child first", c.path(), FormatRate(c.effCeil()), v.path(), FormatRate(q.effCeil(v.parent)))
		}
	}
	if sum > q.rate {
		return fmt.Errorf("%s's children have rates adding up to %s, above %s", v.path(), FormatRate(sum), FormatRate(q.rate))
	}
	return nil
}

// guaranteed is what a rate takes from its parent's: the default rate
// (leafRate, HTB's token minimum) guarantees nothing and takes nothing,
// so that any number of VIFs can be made under a parent of any rate.
func guaranteed(rate uint64) uint64 {
	if rate <= leafRate {
		return 0
	}
	return rate
}

// set parses the value written to the parameter file name and returns
// the parameters it makes, or EINVAL with the reason.
func (v *VIF) set(name, value string) (params, error) {
	q := v.params()
	value = strings.TrimSpace(value)
	var err error
	switch name {
	case "rate":
		q.rate, err = ParseRate(value)
	case "ceil":
		q.ceil, err = ParseRate(value)
	case "weight", "priority":
		var n uint64
		n, err = strconv.ParseUint(value, 10, 32)
		if err != nil {
			err = fmt.Errorf("%q is not a whole number", value)
		} else if name == "weight" {
			q.weight = uint32(n)
		} else if n > 7 {
			err = fmt.Errorf("priority %d is not within 0..7", n)
		} else {
			q.prio = uint32(n)
		}
	case "mode":
		switch value {
		case ModeShape, ModeFair, ModePriority:
			q.mode = value
		default:
			err = fmt.Errorf("%q is not a mode (shape, fair, priority)", value)
		}
	default:
		return q, ns.Errorf(syscall.EACCES, "%s is read-only", name)
	}
	if err == nil {
		err = v.check(q)
	}
	if err != nil {
		return q, ns.Errorf(syscall.EINVAL, "%s/%s: %v", v.path(), name, err)
	}
	return q, nil
}

// value is what reading the parameter file name shows.
func (p *Provider) value(v *VIF, name string) (string, error) {
	switch name {
	case "rate":
		return FormatRate(v.rate) + "\n", nil
	case "ceil":
		return FormatRate(v.effCeil()) + "\n", nil
	case "weight":
		return strconv.FormatUint(uint64(v.weight), 10) + "\n", nil
	case "priority":
		return strconv.FormatUint(uint64(v.prio), 10) + "\n", nil
	case "mode":
		return v.mode + "\n", nil
	case "stats":
		return p.stats(v)
	case "procs":
		var b strings.Builder
		for _, pid := range p.procsOf(v) {
			fmt.Fprintf(&b, "%d\n", pid)
		}
		return b.String(), nil
	}
	return "", nil
}

// stats is one line: out_bytes out_packets out_drops out_backlog
// out_rate, and the same for in_ (what came in, shaped on the IFB; zero
// when incoming traffic is not shaped), as key=value pairs; the rates
// are bits/s since the previous read of stats, or since the VIF was made.
func (p *Provider) stats(v *VIF) (string, error) {
	var out, in classStats
	if v.ifc.up {
		st, err := p.tc.classStats(v.id, v.ifc.devs()...)
		if err != nil {
			return "", ns.Errorf(syscall.EIO, "vif: %s/stats: %v", v.path(), err)
		}
		out = st[0]
		if len(st) > 1 {
			in = st[1]
		}
	}
	now := time.Now()
	rate := func(bytes, last uint64) uint64 {
		if dt := now.Sub(v.lastAt).Seconds(); dt > 0 && bytes >= last {
			return uint64(float64(bytes-last) * 8 / dt)
		}
		return 0
	}
	line := fmt.Sprintf("out_bytes=%d out_packets=%d out_drops=%d out_backlog=%d out_rate=%d in_bytes=%d in_packets=%d in_drops=%d in_backlog=%d in_rate=%d\n",
		out.bytes, out.packets, out.drops, out.backlog, rate(out.bytes, v.lastBytes),
		in.bytes, in.packets, in.drops, in.backlog, rate(in.bytes, v.lastIn))
	v.lastBytes, v.lastIn, v.lastAt = out.bytes, in.bytes, now
	return line, nil
}

// classes are the VIF's two HTB classes: the VIF (rate and ceil), and
// its own leaf, where its processes' packets queue. HTB applies quantum
// (the weight) and prio at leaves only, so weight and priority are the
// leaf's: they order the processes attached to the VIF itself against
// its siblings' (and their children's) leaves.
func (v *VIF) classes(q params) (vifClass, leaf class) {
	var parent uint16
	if v.parent != nil {
		parent = v.parent.id
	}
	ceil := q.effCeil(v.parent)
	vifClass = class{ifindex: v.ifc.index, id: v.id, parent: parent, rate: q.rate, ceil: ceil}
	leaf = class{ifindex: v.ifc.index, id: v.id | selfBit, parent: v.id, rate: min(leafRate, q.rate), ceil: ceil,
		quantum: q.weight * quantumUnit, prio: htbPrioOf(q)}
	return
}

func htbPrioOf(q params) uint32 {
	if q.mode == ModePriority {
		return q.prio
	}
	return fairPrio
}

// applyNew makes v's classes in the kernel, on every device of its
// interface.
func (p *Provider) applyNew(v *VIF) error {
	c, l := v.classes(v.params())
	for _, dev := range v.ifc.devs() {
		c.ifindex, l.ifindex = dev, dev
		if err := p.tc.add(c); err != nil {
			return ns.Errorf(syscall.EIO, "vif %s: add class %x:%x: %v", v.path(), Major, c.id, err)
		}
		if err := p.tc.add(l); err != nil {
			p.tc.del(dev, c.id)
			return ns.Errorf(syscall.EIO, "vif %s: add class %x:%x: %v", v.path(), Major, l.id, err)
		}
	}
	return nil
}

// apply changes v to q, in the kernel first. Each class request costs
// 10-20 µs, so the leaf is changed only when its parameters change (a
// new rate of a VIF that is not a shaper leaves it as it was), and the
// children that follow v's ceil only when that changes.
func (p *Provider) apply(v *VIF, q params) error {
	if v.ifc.up {
		c, l := v.classes(q)
		_, was := v.classes(v.params())
		for _, dev := range v.ifc.devs() {
			c.ifindex, l.ifindex = dev, dev
			if err := p.tc.change(c); err != nil {
				return ns.Errorf(syscall.EIO, "vif %s: change class: %v", v.path(), err)
			}
			if was.ifindex = dev; l == was {
				continue
			}
			if err := p.tc.change(l); err != nil {
				return ns.Errorf(syscall.EIO, "vif %s: change class: %v", v.path(), err)
			}
		}
	}
	ceilChanged := q.effCeil(v.parent) != v.effCeil()
	v.rate, v.ceil, v.weight, v.prio, v.mode = q.rate, q.ceil, q.weight, q.prio, q.mode
	if !ceilChanged {
		return nil
	}
	return p.refollow(v)
}

// follows reports whether c's ceil is its parent's.
func follows(c *VIF) bool { return c.ceil == 0 && c.mode != ModeShape }

// refollow gives the descendants of v whose ceil is their parent's the
// ceil v now has.
func (p *Provider) refollow(v *VIF) error {
	for _, c := range v.children {
		if !follows(c) {
			continue
		}
		if v.ifc.up {
			cc, l := c.classes(c.params())
			for _, dev := range c.ifc.devs() {
				cc.ifindex, l.ifindex = dev, dev
				if err := p.tc.change(cc); err != nil {
					return ns.Errorf(syscall.EIO, "vif %s: change class: %v", c.path(), err)
				}
				if err := p.tc.change(l); err != nil {
					return ns.Errorf(syscall.EIO, "vif %s: change class: %v", c.path(), err)
				}
			}
		}
		if err := p.refollow(c); err != nil {
			return err
		}
	}
	return nil
}

// mkdir makes the VIF name under parent, owned by uid.
func (p *Provider) mkdir(parent *VIF, name string, uid, gid uint32, perm os.FileMode) (*VIF, error) {
	if name == "" || strings.ContainsAny(name, "/") || name == "." || name == ".." {
		return nil, ns.Errorf(syscall.EINVAL, "bad VIF name %q", name)
	}
	if _, ok := parent.children[name]; ok {
		return nil, ns.Errorf(syscall.EEXIST, "%s/%s exists", parent.path(), name)
	}
	if _, ok := paramFiles[name]; ok {
		return nil, ns.Errorf(syscall.EEXIST, "%s/%s is a parameter file", parent.path(), name)
	}
	depth := 0
	for a := parent; a.parent != nil; a = a.parent {
		depth++
	}
	if depth >= maxNesting {
		return nil, ns.Errorf(syscall.EINVAL, "mkdir %s/%s: VIFs nest at most %d deep under the interface (HTB has %d levels: one per VIF, the interface's and a leaf)", parent.path(), name, maxNesting, htbLevels)
	}
	ifc := parent.ifc
	if err := p.ensureUp(ifc); err != nil {
		return nil, err
	}
	id, err := p.newID()
	if err != nil {
		return nil, err
	}
	v := newVIF(ifc, parent, name, id, uid, gid)
	v.perm = perm
	if err := v.check(v.params()); err != nil {
		return nil, ns.Errorf(syscall.EINVAL, "mkdir %s/%s: %v", parent.path(), name, err)
	}
	if err := p.applyNew(v); err != nil {
		return nil, err
	}
	parent.children[name] = v
	ifc.byID[id] = v
	parent.mtime = time.Now()
	return v, nil
}

// newID numbers a new VIF. Numbers are unique across interfaces, so a
// socket's priority (per-socket attach) names one VIF on one interface
// and no class elsewhere.
func (p *Provider) newID() (uint16, error) {
	used := func(id uint16) bool {
		for _, ifc := range p.ifaces {
			if _, ok := ifc.byID[id]; ok {
				return true
			}
		}
		return false
	}
	for i := 0; i < selfBit; i++ {
		id := p.nextID
		p.nextID++
		if p.nextID >= selfBit {
			p.nextID = rootID + 1
		}
		if id > rootID && !used(id) {
			return id, nil
		}
	}
	return 0, ns.Errorf(syscall.ENOSPC, "%d VIFs, the most HTB can number", selfBit-2)
}

// rmdir removes v: it must have no children and no processes.
func (p *Provider) rmdir(v *VIF) error {
	if len(v.children) > 0 {
		return ns.Errorf(syscall.ENOTEMPTY, "%s has child VIFs", v.path())
	}
	if pids := p.procsOf(v); len(pids) > 0 {
		return ns.Errorf(syscall.EBUSY, "%s has processes attached (%v): detach them first (rm proc/PID/%s)", v.path(), pids, v.ifc.name)
	}
	p.dropGroupsOf(v)
	for _, dev := range v.ifc.devs() {
		if err := p.tc.del(dev, v.id|selfBit); err != nil {
			return ns.Errorf(syscall.EIO, "vif %s: delete class: %v", v.path(), err)
		}
		if err := p.tc.del(dev, v.id); err != nil {
			return ns.Errorf(syscall.EIO, "vif %s: delete class: %v", v.path(), err)
		}
	}
	delete(v.parent.children, v.name)
	delete(v.ifc.byID, v.id)
	v.parent.mtime = time.Now()
	return nil
}

// find walks rel (a/b/c) down from the interface's root VIF.
func (ifc *iface) find(rel []string) *VIF {
	v := ifc.root
	for _, c := range rel {
		if c == "" || c == "." {
			continue
		}
		if v = v.children[c]; v == nil {
			return nil
		}
	}
	return v
}

func (v *VIF) childNames() []string {
	names := make([]string, 0, len(v.children))
	for n := range v.children {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
