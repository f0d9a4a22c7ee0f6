// Command ttfb times open-to-first-byte: of an exec portal (open a path,
// read one byte) and of the same program run from a shell (fork/exec
// sh -c ..., read one byte of its stdout). It prints the median, 10th and
// 90th percentile in microseconds of N samples, or, for the parallel
// modes, the wall time until K opens or spawns started at once have all
// read their first byte.
//
//	ttfb open N PATH            N sequential opens of PATH
//	ttfb spawn N CMD ARG...     N sequential spawns of CMD
//	ttfb open-par K PATH        K opens at once
//	ttfb spawn-par K CMD ARG... K spawns at once
package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"time"
)

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: ttfb open|spawn|open-par|spawn-par N PATH|CMD...")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "ttfb: N must be a positive number")
		os.Exit(2)
	}
	args := os.Args[3:]
	one := map[string]func([]string) time.Duration{
		"open": openOnce, "spawn": spawnOnce, "open-par": openOnce, "spawn-par": spawnOnce,
	}[os.Args[1]]
	if one == nil {
		fmt.Fprintln(os.Stderr, "ttfb: unknown mode", os.Args[1])
		os.Exit(2)
	}
	switch os.Args[1] {
	case "open", "spawn":
		var d []time.Duration
		for range n {
			d = append(d, one(args))
		}
		slices.Sort(d)
		fmt.Printf("%d %d %d\n", d[len(d)/2].Microseconds(), d[len(d)/10].Microseconds(), d[len(d)*9/10].Microseconds())
	default:
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Go(func() { <-start; one(args) })
		}
		t0 := time.Now()
		close(start)
		wg.Wait()
		fmt.Printf("%d\n", time.Since(t0).Microseconds())
	}
}

// openOnce opens path, reads its first byte and closes it.
func openOnce(args []string) time.Duration {
	buf := make([]byte, 1)
	t0 := time.Now()
	f, err := os.Open(args[0])
	if err != nil {
		fail(err)
	}
	if _, err := f.Read(buf); err != nil {
		fail(err)
	}
	d := time.Since(t0)
	f.Close()
	return d
}

// spawnOnce runs the command, reads the first byte of its stdout, and
// waits for it.
func spawnOnce(args []string) time.Duration {
	buf := make([]byte, 1)
	cmd := exec.Command(args[0], args[1:]...)
	t0 := time.Now()
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	if _, err := out.Read(buf); err != nil {
		fail(err)
	}
	d := time.Since(t0)
	cmd.Wait()
	return d
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ttfb:", err)
	os.Exit(1)
}
