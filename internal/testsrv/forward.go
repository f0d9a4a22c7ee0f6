package testsrv

import (
	"net"
	"sync"
	"testing"
)

// Forwarder relays TCP connections from a port of 127.0.0.1 to a target,
// as a port forward (ssh -L, a container's published port) or a TCP proxy
// does: the server sees the forwarder's connections and names its own
// address in what it says. CutAfter breaks the connections part-way.
type Forwarder struct {
	Addr string // where clients connect

	target string
	l      net.Listener
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool
	cut   int64 // bytes clients may still send before every connection is cut; < 0: never
	cuts  int   // cuts so far
}

// Forward starts a forwarder to target, stopped when the test ends.
func Forward(t testing.TB, target string) *Forwarder {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &Forwarder{Addr: l.Addr().String(), target: target, l: l, conns: map[net.Conn]bool{}, cut: -1}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(func() {
		l.Close()
		f.mu.Lock()
		for c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

// CutAfter arms the forwarder: once clients have sent n more bytes
// towards the target, every open connection is closed at both ends, as a
// link that goes down would leave them. Later connections are relayed
// again.
func (f *Forwarder) CutAfter(n int64) {
	f.mu.Lock()
	f.cut = n
	f.mu.Unlock()
}

// Cuts returns how many times the forwarder has cut its connections.
func (f *Forwarder) Cuts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cuts
}

func (f *Forwarder) accept() {
	defer f.wg.Done()
	for {
		in, err := f.l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", f.target)
		if err != nil {
			in.Close()
			continue
		}
		f.mu.Lock()
		f.conns[in], f.conns[out] = true, true
		f.mu.Unlock()
		f.wg.Add(2)
		go f.relay(out, in, true)
		go f.relay(in, out, false)
	}
}

// relay copies src to dst; upstream counts what clients send.
func (f *Forwarder) relay(dst, src net.Conn, upstream bool) {
	defer f.wg.Done()
	defer func() {
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && upstream && f.spend(int64(n)) {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// spend counts n bytes towards an armed cut and reports whether it
// happened (every connection is then closed).
func (f *Forwarder) spend(n int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut < 0 {
		return false
	}
	if f.cut -= n; f.cut > 0 {
		return false
	}
	f.cut = -1
	for c := range f.conns {
		c.Close()
	}
	f.cuts++
	f.conns = map[net.Conn]bool{}
	return true
}
