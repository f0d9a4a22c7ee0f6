// Command godial times what the wirefs daemon does for a client open once
// the FUSE request has arrived: a Go net.Dialer.DialContext (30 s timeout,
// a cancellable context, as go-fuse passes one) and a Close. It prints
// "MEDIAN_US MEAN_US N" like bench/nb.c, for bench/run.sh's notes.
// (The leading "_" keeps it out of ./... builds.)
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: godial HOST:PORT N")
		os.Exit(2)
	}
	addr := os.Args[1]
	n, _ := strconv.Atoi(os.Args[2])
	d := net.Dialer{Timeout: 30 * time.Second}
	v := make([]float64, 0, n)
	for i := -50; i < n; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		t0 := time.Now()
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "godial:", err)
			os.Exit(1)
		}
		c.Close()
		el := time.Since(t0)
		cancel()
		if i >= 0 {
			v = append(v, float64(el.Nanoseconds())/1e3)
		}
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	sort.Float64s(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	fmt.Printf("%.3f %.3f %d\n", med, sum/float64(len(v)), len(v))
}
