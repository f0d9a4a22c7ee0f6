package netstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"wirefs/internal/ns"
)

type sentRecord struct {
	to      netip.AddrPort
	payload string
}

// collect returns a send function that records what it is given.
func collect(out *[]sentRecord) func(netip.AddrPort, []byte) error {
	return func(to netip.AddrPort, p []byte) error {
		*out = append(*out, sentRecord{to, string(p)})
		return nil
	}
}

func TestRecordWriterWholeAndSplit(t *testing.T) {
	stream := "127.0.0.1 7 5\nhello::1 8 0\n[::1] 9 3\na\nb"
	want := []sentRecord{
		{netip.MustParseAddrPort("127.0.0.1:7"), "hello"},
		{netip.MustParseAddrPort("[::1]:8"), ""},
		{netip.MustParseAddrPort("[::1]:9"), "a\nb"},
	}
	// In one write, byte by byte, and split at every position.
	var chunkings [][]string
	chunkings = append(chunkings, []string{stream})
	var bytewise []string
	for i := range len(stream) {
		bytewise = append(bytewise, stream[i:i+1])
	}
	chunkings = append(chunkings, bytewise)
	for i := 1; i < len(stream); i++ {
		chunkings = append(chunkings, []string{stream[:i], stream[i:]})
	}
	for _, chunks := range chunkings {
		var w recordWriter
		var got []sentRecord
		for _, c := range chunks {
			n, err := w.write([]byte(c), collect(&got))
			if err != nil || n != len(c) {
				t.Fatalf("chunks %q: write(%q) = %d, %v", chunks, c, n, err)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("chunks %q: sent %v, want %v", chunks, got, want)
		}
		if len(w.buf) != 0 {
			t.Fatalf("chunks %q: %q left in buffer", chunks, w.buf)
		}
	}
}

func TestRecordWriterPartialPayloadWaits(t *testing.T) {
	var w recordWriter
	var got []sentRecord
	if n, err := w.write([]byte("127.0.0.1 7 10\n01234"), collect(&got)); n != 20 || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	if len(got) != 0 {
		t.Fatalf("sent %v before the payload was complete", got)
	}
	if n, err := w.write([]byte("56789127.0.0.1 7 1\n"), collect(&got)); n != 19 || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	if len(got) != 1 || got[0].payload != "0123456789" {
		t.Fatalf("sent %v", got)
	}
	if n, err := w.write([]byte("z"), collect(&got)); n != 1 || err != nil || len(got) != 2 || got[1].payload != "z" {
		t.Fatalf("write = %d, %v; sent %v", n, err, got)
	}
}

func TestRecordWriterErrors(t *testing.T) {
	send := func(netip.AddrPort, []byte) error { return nil }
	tests := []struct {
		name  string
		input string
	}{
		{"bad header", "hello world\n"},
		{"symbolic host", "localhost 80 1\nx"},
		{"too long", "127.0.0.1 7 65536\n"},
		{"port 0", "127.0.0.1 0 1\nx"},
		{"no newline", strings.Repeat("x", maxHeaderLine+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w recordWriter
			n, err := w.write([]byte(tt.input), send)
			if err == nil || ns.Errno(err) != syscall.EINVAL || n != 0 {
				t.Fatalf("write(%q) = %d, %v; want 0, EINVAL", tt.input, n, err)
			}
			if w.buf != nil {
				t.Fatalf("buffer not reset after error: %q", w.buf)
			}
			// The writer is usable again.
			var got []sentRecord
			if n, err := w.write([]byte("127.0.0.1 7 2\nok"), collect(&got)); n != 16 || err != nil || len(got) != 1 || got[0].payload != "ok" {
				t.Fatalf("after error: write = %d, %v; sent %v", n, err, got)
			}
		})
	}
	// A header line without newline is accepted up to maxHeaderLine.
	var w recordWriter
	if n, err := w.write(bytes.Repeat([]byte(" "), maxHeaderLine), send); err != nil || n != maxHeaderLine {
		t.Fatalf("write of %d header bytes = %d, %v", maxHeaderLine, n, err)
	}
}

func TestRecordWriterSendError(t *testing.T) {
	var w recordWriter
	boom := ns.Errorf(syscall.EHOSTUNREACH, "boom")
	n, err := w.write([]byte("127.0.0.1 7 1\nx127.0.0.1 7 1\ny"), func(netip.AddrPort, []byte) error { return boom })
	if n != 0 || !errors.Is(err, syscall.EHOSTUNREACH) {
		t.Fatalf("write = %d, %v; want 0, EHOSTUNREACH", n, err)
	}
	if w.buf != nil {
		t.Fatalf("buffer not reset: %q", w.buf)
	}
}

// refParse is the reference reading of a whole explicit-addressing stream:
// the complete records and what is left after them.
func refParse(stream []byte) (recs []sentRecord, rest []byte, err error) {
	for {
		i := bytes.IndexByte(stream, '\n')
		if i < 0 {
			return recs, stream, nil
		}
		to, n, err := ParseHeader(string(stream[:i]))
		if err != nil {
			return recs, nil, err
		}
		if len(stream)-i-1 < n {
			return recs, stream, nil
		}
		recs = append(recs, sentRecord{to, string(stream[i+1 : i+1+n])})
		stream = stream[i+1+n:]
	}
}

// splitBy cuts b into chunks whose lengths come from cuts (0 means 1, and
// the last chunk takes the rest).
func splitBy(b, cuts []byte) [][]byte {
	var out [][]byte
	for _, c := range cuts {
		if len(b) == 0 {
			break
		}
		n := int(c)
		if n == 0 {
			n = 1
		}
		n = min(n, len(b))
		out = append(out, b[:n])
		b = b[n:]
	}
	if len(b) > 0 || len(out) == 0 {
		out = append(out, b)
	}
	return out
}

var fuzzHosts = []string{"127.0.0.1", "::1", "[::1]", "fe80::1%lo", "10.1.2.3", "::ffff:127.0.0.1", "0.0.0.0"}

// buildStream turns spec into a valid stream of records and returns it with
// the records a writer must send. Each record takes 4 bytes of spec: host,
// port (2 bytes), payload length; payload bytes come from spec too.
func buildStream(spec []byte) ([]byte, []sentRecord) {
	var stream []byte
	var recs []sentRecord
	for len(spec) >= 4 {
		host := fuzzHosts[int(spec[0])%len(fuzzHosts)]
		port := int(spec[1])<<8 | int(spec[2])
		if port == 0 {
			port = 1
		}
		n := int(spec[3])
		if spec[0]&0x80 != 0 {
			n *= 200 // large datagrams now and then
		}
		spec = spec[4:]
		payload := make([]byte, n)
		for i := range payload {
			if len(spec) > 0 {
				payload[i] = spec[i%len(spec)]
			} else {
				payload[i] = byte(i)
			}
		}
		sep := " "
		if spec := len(recs) % 3; spec == 1 {
			sep = "\t "
		}
		hdr := fmt.Sprintf("%s%s%d%s%d\n", host, sep, port, sep, n)
		stream = append(stream, hdr...)
		stream = append(stream, payload...)
		ap := netip.AddrPortFrom(netip.MustParseAddr(strings.Trim(host, "[]")), uint16(port))
		recs = append(recs, sentRecord{ap, string(payload)})
	}
	return stream, recs
}

func FuzzRecordWriter(f *testing.F) {
	f.Add(true, []byte("\x00\x00\x07\x05hello\x01\x01\x00\x00\x02\x00\x50\x03abc"), []byte{1, 2, 3, 50})
	f.Add(true, []byte("\x81\x12\x34\xff"), []byte{0, 255, 255, 7})
	f.Add(false, []byte("127.0.0.1 7 5\nhello::1 8 0\n[::1] 9 3\na\nb"), []byte{5, 5, 5})
	f.Add(false, []byte("127.0.0.1 7 5\nhel"), []byte{})
	f.Add(false, []byte("garbage\n127.0.0.1 7 1\nx"), []byte{3})
	f.Add(false, bytes.Repeat([]byte("x"), 300), []byte{200, 200})
	f.Add(false, []byte("127.0.0.1 7 70000\nx"), []byte{})
	f.Add(false, []byte("127.0.0.1 7 1\nx127.0.0.1 0 1\ny"), []byte{16})
	f.Fuzz(func(t *testing.T, valid bool, data, cuts []byte) {
		var w recordWriter
		var got []sentRecord
		send := func(to netip.AddrPort, p []byte) error {
			if len(p) > maxDatagram {
				t.Fatalf("sent a %d-byte datagram", len(p))
			}
			got = append(got, sentRecord{to, string(p)})
			return nil
		}
		if valid {
			stream, want := buildStream(data)
			for _, c := range splitBy(stream, cuts) {
				n, err := w.write(c, send)
				if err != nil || n != len(c) {
					t.Fatalf("valid stream %q: write(%q) = %d, %v", stream, c, n, err)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("sent %d records, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("record %d: sent %v, want %v", i, got[i], want[i])
				}
			}
			if len(w.buf) != 0 {
				t.Fatalf("%d bytes left after a valid stream", len(w.buf))
			}
			return
		}
		failed := false
		for _, c := range splitBy(data, cuts) {
			n, err := w.write(c, send)
			if err != nil {
				if n != 0 || ns.Errno(err) != syscall.EINVAL {
					t.Fatalf("write(%q) = %d, %v (errno %v); want 0, EINVAL", c, n, err, ns.Errno(err))
				}
				if w.buf != nil {
					t.Fatalf("buffer not reset after error")
				}
				failed = true
				continue
			}
			if n != len(c) {
				t.Fatalf("write(%q) = %d, want %d", c, n, len(c))
			}
			if len(w.buf) > maxHeaderLine+1+maxDatagram {
				t.Fatalf("buffer grew to %d bytes", len(w.buf))
			}
		}
		if failed {
			return
		}
		// No write failed: exactly the complete records of the whole stream
		// were sent, and the rest is waiting.
		want, rest, err := refParse(data)
		if err != nil {
			t.Fatalf("writes of %q succeeded but the stream is invalid: %v", data, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("stream %q: sent %v, want %v", data, got, want)
		}
		if !bytes.Equal(w.buf, rest) {
			t.Fatalf("stream %q: buffer %q, want %q", data, w.buf, rest)
		}
	})
}

// TestRecordReaderShortReads drives recordReader with a fake source.
func TestRecordReaderShortReads(t *testing.T) {
	r := newRecordReader()
	src := []string{"hello", "world!", "x"}
	next := func(ctx context.Context, buf []byte) ([]byte, error) {
		if len(src) == 0 {
			return nil, ns.Errorf(syscall.EAGAIN, "empty")
		}
		n := copy(buf, src[0])
		src = src[1:]
		return buf[:n], nil
	}
	var reads []string
	p := make([]byte, 3)
	for {
		n, err := r.read(context.Background(), p, next)
		if err != nil {
			break
		}
		reads = append(reads, string(p[:n]))
	}
	want := []string{"hel", "lo", "wor", "ld!", "x"}
	if fmt.Sprint(reads) != fmt.Sprint(want) {
		t.Fatalf("reads %q, want %q", reads, want)
	}
}

func TestRecordReaderCancelledWhileBusy(t *testing.T) {
	r := newRecordReader()
	r.g <- struct{}{} // another read holds the gate
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.read(ctx, make([]byte, 1), func(context.Context, []byte) ([]byte, error) {
		t.Fatal("next called without the gate")
		return nil, nil
	})
	if ns.Errno(err) != syscall.EINTR {
		t.Fatalf("err %v, want EINTR", err)
	}
}
