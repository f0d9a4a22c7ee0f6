package vif

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// The classifiers (bpf/vif.c). Egress: one cgroup-skb program, attached
// to wirefs's cgroup subtree (descendants inherit it), sets
// skb->priority to the HTB class of the packet's socket's cgroup on the
// device it leaves by. HTB takes a priority naming one of its leaf
// classes as that class (htb_classify), so no tc filter is needed, and
// this kernel has no cls_cgroup. A priority already naming a wirefs
// class (a socket given one with SO_PRIORITY) is left alone. The egress
// program also records the class in the socket's storage, where the
// ingress program (ingress.go) finds it.

// key is the map's key: a cgroup id and the device's index.
type key struct {
	cgroup  uint64
	ifindex uint32
}

func (k key) bytes() []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint64(b, k.cgroup)
	binary.NativeEndian.PutUint32(b[8:], k.ifindex)
	return b
}

// classifier is the loaded programs, their maps and the attachment.
type classifier struct {
	m   *ebpf.Map
	sk  *ebpf.Map
	out *ebpf.Program
	in  *ebpf.Program // nil: incoming traffic is not shaped
	l   link.Link
	// inErr says why there is no ingress program
	inErr error
}

func loadClassifier(cgroupDir string) (*classifier, error) {
	spec, err := loadVifbpf()
	if err != nil {
		return nil, fmt.Errorf("bpf: %w", err)
	}
	var objs vifbpfObjects
	c := &classifier{}
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		// egress alone, if the ingress program is what the kernel refuses
		c.inErr = err
		delete(spec.Programs, "wirefs_vif_in")
		var out struct {
			Out *ebpf.Program `ebpf:"wirefs_vif_out"`
			M   *ebpf.Map     `ebpf:"wirefs_vif"`
			Sk  *ebpf.Map     `ebpf:"wirefs_sk"`
		}
		if err2 := spec.LoadAndAssign(&out, nil); err2 != nil {
			return nil, fmt.Errorf("bpf programs: %w", errors.Join(err, err2))
		}
		c.m, c.sk, c.out = out.M, out.Sk, out.Out
	} else {
		c.m, c.sk, c.out, c.in = objs.WirefsVif, objs.WirefsSk, objs.WirefsVifOut, objs.WirefsVifIn
	}
	// A bpf_link: the kernel detaches the program when the daemon's
	// descriptor closes, even after kill -9.
	c.l, err = link.AttachCgroup(link.CgroupOptions{Path: cgroupDir, Attach: ebpf.AttachCGroupInetEgress, Program: c.out})
	if err != nil {
		c.close()
		return nil, fmt.Errorf("attach bpf program to %s: %w", cgroupDir, err)
	}
	return c, nil
}

func (c *classifier) set(k key, classid uint32) error {
	v := make([]byte, 4)
	binary.NativeEndian.PutUint32(v, classid)
	return c.m.Put(k.bytes(), v)
}

func (c *classifier) del(k key) {
	_ = c.m.Delete(k.bytes())
}

func (c *classifier) close() {
	if c.l != nil {
		c.l.Close()
	}
	for _, p := range []*ebpf.Program{c.out, c.in} {
		if p != nil {
			p.Close()
		}
	}
	for _, m := range []*ebpf.Map{c.m, c.sk} {
		if m != nil {
			m.Close()
		}
	}
}
