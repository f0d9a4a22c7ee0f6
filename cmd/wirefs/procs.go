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
// machines; measured only on 2 vCPUs. While the cache works in the
// background, every CPU (backgroundProcs).
func daemonProcs() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	daemonP = max(1, runtime.NumCPU()/4)
	runtime.GOMAXPROCS(daemonP)
}

// daemonP is the number of Ps daemonProcs chose; 0 when it left
// GOMAXPROCS alone.
var daemonP int

// backgroundProcs is the cache's OnBackground: while it fetches ahead,
// the daemon's Go code runs on every CPU, then on daemonP again. A
// prefetch keeps up to 32 fetches in flight whose answers the daemon
// reads, writes to the cache and records; on one P a program's request
// waited behind that work for the P (a trace of a stat during a cold
// grep -r: its goroutines runnable 2-6 ms per stat), and a stat took 1
// to 6 ms more at 10 ms RTT than with every CPU (bench/RESULTS.md, "A
// program's stat pauses prefetch, and prefetch gets every CPU").
func backgroundProcs(working bool) {
	if daemonP == 0 || daemonP >= runtime.NumCPU() {
		return
	}
	if working {
		runtime.GOMAXPROCS(runtime.NumCPU())
	} else {
		runtime.GOMAXPROCS(daemonP)
	}
}
