package vif

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// The classifier: one cgroup-skb egress program, attached to wirefs's
// cgroup subtree (descendants inherit it), that sets skb->priority to
// the HTB class of the packet's socket's cgroup on the device it leaves
// by. HTB takes a priority naming one of its leaf classes as that class
// (htb_classify), so no tc filter is needed, and this kernel has no
// cls_cgroup. A priority already naming a wirefs class (a socket
// attached on its own, SO_PRIORITY) is left alone: the socket's VIF
// wins over its process's.
//
// Sixteen instructions, so written with cilium/ebpf's assembler rather
// than C, clang and bpf2go: nothing to generate, nothing to install.

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

// offsets in struct __sk_buff (include/uapi/linux/bpf.h)
const (
	skbPriority = 32
	skbIfindex  = 40
)

// classifier is the loaded program, its map and its attachment.
type classifier struct {
	m    *ebpf.Map
	prog *ebpf.Program
	l    link.Link
}

func loadClassifier(cgroupDir string) (*classifier, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "wirefs_vif", Type: ebpf.Hash, KeySize: 16, ValueSize: 4, MaxEntries: 65536})
	if err != nil {
		return nil, fmt.Errorf("bpf map: %w", err)
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnSkbCgroupId.Call(), // r1 = skb
		asm.StoreMem(asm.RFP, -16, asm.R0, asm.DWord),
		asm.LoadMem(asm.R1, asm.R6, skbIfindex, asm.Word),
		asm.StoreMem(asm.RFP, -8, asm.R1, asm.Word),
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -16),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R6, skbPriority, asm.Word),
		asm.RSh.Imm(asm.R1, 16),
		asm.JEq.Imm(asm.R1, Major, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.StoreMem(asm.R6, skbPriority, asm.R1, asm.Word),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("out"), // 1: let the packet pass
		asm.Return(),
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "wirefs_vif", Type: ebpf.CGroupSKB,
		AttachType: ebpf.AttachCGroupInetEgress, Instructions: insns, License: "GPL"})
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("bpf program: %w", err)
	}
	// A bpf_link: the kernel detaches the program when the daemon's
	// descriptor closes, even after kill -9.
	l, err := link.AttachCgroup(link.CgroupOptions{Path: cgroupDir, Attach: ebpf.AttachCGroupInetEgress, Program: prog})
	if err != nil {
		prog.Close()
		m.Close()
		return nil, fmt.Errorf("attach bpf program to %s: %w", cgroupDir, err)
	}
	return &classifier{m: m, prog: prog, l: l}, nil
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
	c.l.Close()
	c.prog.Close()
	c.m.Close()
}
