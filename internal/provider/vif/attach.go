package vif

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"wirefs/internal/ns"
)

// A group is one cgroup of wirefs's subtree: the processes attached to
// one combination of VIFs, at most one per interface (a process is in
// one cgroup). The classifier's map sends the group's packets on each
// of those interfaces to its VIF's leaf class. Children forked by an
// attached process are born in its cgroup: they inherit its VIFs.
type group struct {
	key  string
	dir  string
	id   uint64
	vifs map[string]*VIF // by interface name
}

func groupKey(vifs map[string]*VIF) string {
	parts := make([]string, 0, len(vifs))
	for name, v := range vifs {
		parts = append(parts, fmt.Sprintf("%s=%d", name, v.id))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// groupFor returns the group of the combination vifs, made if needed.
func (p *Provider) groupFor(vifs map[string]*VIF) (*group, error) {
	key := groupKey(vifs)
	if g, ok := p.groups[key]; ok {
		if maps.Equal(g.vifs, vifs) {
			return g, nil
		}
		// VIFs of an interface that went away and came back: their
		// numbers make the key, not the VIFs
		p.removeGroup(g)
	}
	p.nextGroup++
	g := &group{key: key, dir: filepath.Join(p.dir, fmt.Sprintf("g%d", p.nextGroup)), vifs: vifs}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil, ns.Errorf(syscall.EIO, "vif: cgroup %s: %v", g.dir, err)
	}
	id, err := cgroupID(g.dir)
	if err != nil {
		syscall.Rmdir(g.dir)
		return nil, ns.Errorf(syscall.EIO, "vif: cgroup %s: %v", g.dir, err)
	}
	g.id = id
	for _, v := range vifs {
		if err := p.cls.set(key2(g, v), handle(v.id|selfBit)); err != nil {
			p.removeGroup(g)
			return nil, ns.Errorf(syscall.EIO, "vif: classifier map: %v", err)
		}
	}
	p.groups[key] = g
	return g, nil
}

func key2(g *group, v *VIF) key { return key{cgroup: g.id, ifindex: uint32(v.ifc.index)} }

func (p *Provider) removeGroup(g *group) {
	for _, v := range g.vifs {
		p.cls.del(key2(g, v))
	}
	if err := removeCgroup(g.dir, p.base); err != nil {
		p.log.Warn("vif: remove cgroup", "err", err)
	}
	delete(p.groups, g.key)
}

// groupOfPid is the group pid is in, or nil (the root VIF everywhere).
func (p *Provider) groupOfPid(pid int) *group {
	info, err := p.infoOf(pid)
	if err != nil {
		return nil
	}
	for _, g := range p.groups {
		if g.id == info.cgroup {
			return g
		}
	}
	return nil
}

// vifOf is the VIF pid is attached to on ifc; nil: the root VIF.
func (p *Provider) vifOf(pid int, ifc *iface) *VIF {
	if g := p.groupOfPid(pid); g != nil {
		return g.vifs[ifc.name]
	}
	return nil
}

// procsOf lists the processes attached to v itself.
func (p *Provider) procsOf(v *VIF) []int {
	var pids []int
	for _, g := range p.groups {
		if g.vifs[v.ifc.name] == v {
			pids = append(pids, cgroupProcs(g.dir)...)
		}
	}
	sort.Ints(pids)
	return pids
}

// attachedPids lists every process attached anywhere.
func (p *Provider) attachedPids() []int {
	var pids []int
	for _, g := range p.groups {
		pids = append(pids, cgroupProcs(g.dir)...)
	}
	sort.Ints(pids)
	return pids
}

// dropGroupsOf removes the (empty) groups that name v.
func (p *Provider) dropGroupsOf(v *VIF) {
	for _, g := range p.groups {
		if g.vifs[v.ifc.name] == v {
			p.removeGroup(g)
		}
	}
}

// attach moves pid to v on v's interface (v nil or the root VIF:
// detach there), keeping its VIFs on other interfaces.
func (p *Provider) attach(pid int, ifc *iface, v *VIF) error {
	if err := p.ensureUp(ifc); err != nil {
		return err
	}
	old := p.groupOfPid(pid)
	var from *VIF
	if old != nil {
		from = old.vifs[ifc.name]
	}
	vifs := map[string]*VIF{}
	if old != nil {
		for n, w := range old.vifs {
			vifs[n] = w
		}
	}
	if v == nil || v == ifc.root {
		delete(vifs, ifc.name)
	} else {
		vifs[ifc.name] = v
	}
	if len(vifs) == 0 {
		to := p.base
		if from, ok := p.origin[pid]; ok {
			if _, err := os.Stat(from); err == nil {
				to = from
			}
		}
		if err := moveProcess(to, pid); err != nil {
			return ns.Errorf(syscall.ESRCH, "vif: detach %d: %v", pid, err)
		}
		delete(p.origin, pid)
	} else {
		g, err := p.groupFor(vifs)
		if err != nil {
			return err
		}
		origin := ""
		if old == nil {
			if cg, err := processCgroup(pid); err == nil {
				origin = filepath.Join(p.base, cg)
			}
		}
		if err := moveProcess(g.dir, pid); err != nil {
			p.dropIfEmpty(g)
			return ns.Errorf(syscall.ESRCH, "vif: attach %d: %v", pid, err)
		}
		if origin != "" {
			p.origin[pid] = origin
		}
	}
	if old != nil {
		p.dropIfEmpty(old)
	}
	p.moveSockets(pid, from, v)
	return nil
}

// dropIfEmpty removes g if no process is in it and it joins VIFs of
// several interfaces. The group of one VIF stays until that VIF is
// removed (dropGroupsOf): attaching and detaching processes again and
// again then moves them between cgroups that exist, and a VIF has at
// most one such group, where the combinations of VIFs across
// interfaces are many.
func (p *Provider) dropIfEmpty(g *group) {
	if len(g.vifs) > 1 && len(cgroupProcs(g.dir)) == 0 {
		p.removeGroup(g)
	}
}

// may says whether c has the access want (4 read, 2 write, 1 search)
// to a file of owner uid:gid with permissions perm.
func may(c ns.Caller, uid, gid uint32, perm os.FileMode, want os.FileMode) bool {
	if c.Uid == 0 {
		return true
	}
	switch {
	case c.Uid == uid:
		return perm>>6&want == want
	case c.Gid == gid:
		return perm>>3&want == want
	}
	return perm&want == want
}
