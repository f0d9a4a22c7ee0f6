package vif

// The classifiers are C (bpf/vif.c), compiled by clang into the committed
// vifbpf_bpf{el,eb}.o and their Go loaders (bpf2go, cilium/ebpf's
// generator); scripts/setup.sh installs clang, llvm and libbpf-dev.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.20.0 -cflags "-O2 -g -Wall -I/usr/include/x86_64-linux-gnu" vifbpf bpf/vif.c
