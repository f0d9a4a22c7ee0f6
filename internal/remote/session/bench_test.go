package session

import (
	"io"
	"net"
	"testing"
	"time"
)

// BenchmarkRead compares a watched TCP connection with a bare one and
// with the per-call deadline the providers used before the watchdog.
func BenchmarkRead(b *testing.B) {
	for _, c := range []struct {
		name string
		wrap func(net.Conn) io.Reader
	}{
		{"bare", func(c net.Conn) io.Reader { return c }},
		{"deadline-per-read", func(c net.Conn) io.Reader { return deadlineConn{c} }},
		{"watched", func(c net.Conn) io.Reader { return Watch(c, time.Minute, nil) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			go func() {
				s, err := l.Accept()
				if err != nil {
					return
				}
				defer s.Close()
				buf := make([]byte, 32<<10)
				for {
					if _, err := s.Write(buf); err != nil {
						return
					}
				}
			}()
			conn, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			r := c.wrap(conn)
			buf := make([]byte, 32<<10)
			b.SetBytes(int64(len(buf)))
			b.ResetTimer()
			for range b.N {
				if _, err := io.ReadFull(r, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type deadlineConn struct{ net.Conn }

func (c deadlineConn) Read(p []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(time.Minute))
	return c.Conn.Read(p)
}
