// Command delayproxy is a user-space TCP proxy that adds a fixed one-way
// delay in each direction, standing in for netem (not available here).
//
//	delayproxy [-delay 5ms] [-ready FILE] LISTEN=TARGET ...
//
// Every byte read from one side is delivered to the other at its arrival
// time plus the delay: a reader goroutine stamps each chunk as it arrives
// and a writer goroutine waits until that chunk is due. Chunks queue in
// between, so the delay does not add up per chunk: order and throughput
// are kept and only latency is added (like a long pipe). A bounded queue
// (queueChunks) gives back-pressure through TCP flow control.
//
// With several LISTEN=TARGET pairs one process proxies many ports (the
// benchmark proxies an FTP server's control port and its passive data
// ports). It writes FILE (if given) once every listener is bound.
//
// With -stats FILE, every SIGUSR1 rewrites FILE with one line per
// listener: "LISTEN CONNECTIONS DOWN UP", the connections accepted and
// the bytes carried from the target to the client (down) and back since
// the start (the benchmark's cost of each operation on the wire).
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// counters are one listener's totals.
type counters struct {
	listen          string
	conns, down, up atomic.Int64
}

const (
	chunkSize   = 256 << 10
	queueChunks = 512
)

type chunk struct {
	due  time.Time
	data []byte
}

var bufs = sync.Pool{New: func() any { return make([]byte, chunkSize) }}

func main() {
	delay := flag.Duration("delay", 5*time.Millisecond, "one-way delay added in each direction")
	ready := flag.String("ready", "", "file to create once all listeners are bound")
	stats := flag.String("stats", "", "file to write the byte counts to at every SIGUSR1")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: delayproxy [-delay D] [-ready FILE] LISTEN=TARGET ...")
		os.Exit(2)
	}
	var lns []net.Listener
	var targets []string
	var counts []*counters
	for _, pair := range flag.Args() {
		listen, target, ok := strings.Cut(pair, "=")
		if !ok {
			log.Fatalf("delayproxy: %q is not LISTEN=TARGET", pair)
		}
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			log.Fatalf("delayproxy: %v", err)
		}
		lns = append(lns, ln)
		targets = append(targets, target)
		counts = append(counts, &counters{listen: listen})
	}
	if *stats != "" {
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		go func() {
			for range usr1 {
				var b strings.Builder
				for _, c := range counts {
					fmt.Fprintf(&b, "%s %d %d %d\n", c.listen, c.conns.Load(), c.down.Load(), c.up.Load())
				}
				tmp := *stats + ".tmp"
				if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err == nil {
					os.Rename(tmp, *stats)
				}
			}
		}()
	}
	if *ready != "" {
		if err := os.WriteFile(*ready, []byte("ok\n"), 0o644); err != nil {
			log.Fatalf("delayproxy: %v", err)
		}
	}
	var wg sync.WaitGroup
	for i := range lns {
		wg.Add(1)
		go func(ln net.Listener, target string, n *counters) {
			defer wg.Done()
			serve(ln, target, *delay, n)
		}(lns[i], targets[i], counts[i])
	}
	wg.Wait()
}

func serve(ln net.Listener, target string, delay time.Duration, n *counters) {
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Printf("delayproxy: accept on %s: %v", ln.Addr(), err)
			return
		}
		go func() {
			// The client's handshake with this proxy was instant;
			// a real path of this delay costs one round trip before
			// the first byte can flow either way.
			time.Sleep(2 * delay)
			s, err := net.Dial("tcp", target)
			if err != nil {
				log.Printf("delayproxy: dial %s: %v", target, err)
				c.Close()
				return
			}
			n.conns.Add(1)
			var both sync.WaitGroup
			both.Add(2)
			go func() { defer both.Done(); pipe(s, c.(*net.TCPConn), delay, &n.up) }()
			go func() { defer both.Done(); pipe(c, s.(*net.TCPConn), delay, &n.down) }()
			both.Wait()
			c.Close()
			s.Close()
		}()
	}
}

// pipe copies src to dst, delivering each chunk delay after it arrived
// and counting its bytes in total. At EOF it half-closes dst; on an error
// it closes both.
func pipe(dst net.Conn, src *net.TCPConn, delay time.Duration, total *atomic.Int64) {
	q := make(chan chunk, queueChunks)
	go func() {
		defer close(q)
		for {
			b := bufs.Get().([]byte)
			n, err := src.Read(b)
			if n > 0 {
				total.Add(int64(n))
				q <- chunk{due: time.Now().Add(delay), data: b[:n]}
			} else {
				bufs.Put(b)
			}
			if err != nil {
				if err != io.EOF {
					dst.Close()
				}
				return
			}
		}
	}()
	failed := false
	for ch := range q {
		if !failed {
			if d := time.Until(ch.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(ch.data); err != nil {
				failed = true
				src.Close() // unblocks the reader
			}
		}
		bufs.Put(ch.data[:chunkSize])
	}
	if tc, ok := dst.(*net.TCPConn); ok && !failed {
		tc.CloseWrite()
	}
}
