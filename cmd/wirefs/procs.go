package main

import (
	"os"
	"runtime"
)

// daemonProcs sets how many threads run the mount daemon's Go code at once
// (GOMAXPROCS), unless the environment names a number (GOMAXPROCS=N).
//
// The daemon's work is small requests handed from goroutine to goroutine:
// a FUSE request, the SFTP call it makes, the SSH reader that brings the
// answer. Each hand-off while a P is idle wakes another thread to look
// for work, which then finds none and sleeps again: on the append cycle
// of issue 16 (open, a 50-byte write, close, over SFTP at 0 ms on 2
// vCPUs) that cost the daemon 300 µs of CPU per cycle with two Ps and
// 226 µs with one, and a cold 256 MiB read and a cold grep -r were no
// slower with one (bench/RESULTS.md). One P per four CPUs, at least
// one, leaves bulk transfers (SSH's cipher, checksums) room on larger
// machines; measured only on 2 vCPUs.
func daemonProcs() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(max(1, runtime.NumCPU()/4))
}
