package splice

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
)

// tcpPair is a connected pair of loopback TCP sockets.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		done <- c
	}()
	a, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-done
	if b == nil {
		t.Fatal("accept failed")
	}
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func tempFile(t *testing.T, data []byte) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func end(t *testing.T, name string, obj deadliner) *End {
	t.Helper()
	e, err := Kernel(name, obj)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func sameSum(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if sha256.Sum256(got) != sha256.Sum256(want) {
		t.Fatalf("%s: %d bytes differ from the %d sent", what, len(got), len(want))
	}
}

// readAllConn reads c to its end in a goroutine.
func readAllConn(c net.Conn) <-chan []byte {
	ch := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(c)
		ch <- b
	}()
	return ch
}

func TestFileToSocket(t *testing.T) {
	base := leakcheck.Take(t)
	data := randomBytes(t, 5<<20+123)
	f := tempFile(t, data)
	a, b := tcpPair(t)
	got := readAllConn(b)
	st := NewStats()
	n, err := Copy(context.Background(), end(t, "file", f), end(t, "sock", a), Options{Stats: st})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	// Nagle, on for the sendfile, is off again as Go left it.
	rc, _ := a.SyscallConn()
	var nodelay int
	rc.Control(func(fd uintptr) { nodelay, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY) })
	if err != nil || nodelay == 0 {
		t.Errorf("TCP_NODELAY after the transfer: %d, %v; want it restored", nodelay, err)
	}
	a.Close()
	sameSum(t, "file→socket", <-got, data)
	if !slices.Contains(st.Methods(), "sendfile") || st.UserCopy() {
		t.Errorf("methods %v, want sendfile and no user-space copy", st.Methods())
	}
	f.Close()
	b.Close()
	base.Check(t)
}

// TestProviderSocketInKernel: a socket a provider connected itself and
// keeps in blocking mode for the catcher (ns.SocketFile) is still a
// kernel end: sendfile, no user-space copy (a blocking descriptor alone
// would be copied in user space, at five times the CPU).
func TestProviderSocketInKernel(t *testing.T) {
	base := leakcheck.Take(t)
	data := randomBytes(t, 1<<20+7)
	f := tempFile(t, data)
	a, b := tcpPair(t)
	af, err := a.File() // a duplicate: a is closed at once
	a.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetNonblock(int(af.Fd()), false); err != nil {
		t.Fatal(err)
	}
	h := ns.SocketFile(af, nil)
	dst, err := Handle("sock", h)
	if err != nil {
		t.Fatal(err)
	}
	if dst.UserSpace() {
		t.Fatal("a blocking provider socket became a user-space end")
	}
	got := readAllConn(b)
	st := NewStats()
	n, err := Copy(context.Background(), end(t, "file", f), dst, Options{Stats: st})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	h.Close()
	sameSum(t, "file→provider socket", <-got, data)
	if !slices.Contains(st.Methods(), "sendfile") || st.UserCopy() {
		t.Errorf("methods %v, want sendfile and no user-space copy", st.Methods())
	}
	f.Close()
	b.Close()
	base.Check(t)
}

func TestSocketToFile(t *testing.T) {
	base := leakcheck.Take(t)
	data := randomBytes(t, 3<<20+7)
	a, b := tcpPair(t)
	go func() { a.Write(data); a.Close() }()
	p := filepath.Join(t.TempDir(), "dst")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	st := NewStats()
	n, err := Copy(context.Background(), end(t, "sock", b), end(t, "file", f), Options{Stats: st})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	f.Close()
	b.Close()
	got, _ := os.ReadFile(p)
	sameSum(t, "socket→file", got, data)
	if !slices.Contains(st.Methods(), "splice") || st.UserCopy() {
		t.Errorf("methods %v", st.Methods())
	}
	base.Check(t)
}

func TestSocketToSocket(t *testing.T) {
	base := leakcheck.Take(t)
	data := randomBytes(t, 4<<20)
	a1, b1 := tcpPair(t)
	a2, b2 := tcpPair(t)
	go func() { a1.Write(data); a1.Close() }()
	got := readAllConn(b2)
	n, err := Copy(context.Background(), end(t, "in", b1), end(t, "out", a2), Options{Block: 256 << 10})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	a2.Close()
	sameSum(t, "socket→socket", <-got, data)
	b1.Close()
	b2.Close()
	base.Check(t)
}

func TestFileToFile(t *testing.T) {
	data := randomBytes(t, 2<<20+1)
	f := tempFile(t, data)
	defer f.Close()
	p := filepath.Join(t.TempDir(), "dst")
	g, _ := os.Create(p)
	st := NewStats()
	n, err := Copy(context.Background(), end(t, "a", f), end(t, "b", g), Options{Stats: st})
	g.Close()
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	got, _ := os.ReadFile(p)
	sameSum(t, "file→file", got, data)
	if !slices.Contains(st.Methods(), "copy_file_range") {
		t.Errorf("methods %v", st.Methods())
	}
}

// An O_APPEND sink refuses splice and copy_file_range: the bytes go
// through user space instead, and the transfer says so.
func TestAppendFallsBack(t *testing.T) {
	data := randomBytes(t, 300<<10)
	f := tempFile(t, data)
	defer f.Close()
	p := filepath.Join(t.TempDir(), "dst")
	os.WriteFile(p, []byte("head"), 0o600)
	g, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	st := NewStats()
	_, err := Copy(context.Background(), end(t, "a", f), end(t, "b", g), Options{Stats: st})
	g.Close()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	sameSum(t, "append", got, append([]byte("head"), data...))
	if !st.UserCopy() {
		t.Errorf("methods %v, want a user-space copy", st.Methods())
	}
}

// memReader is a daemon-served source: no fd.
type memReader struct{ r io.Reader }

func (m memReader) Read(_ context.Context, p []byte) (int, error) {
	n, err := m.r.Read(p)
	if err == io.EOF {
		err = nil
	}
	return n, err
}

type memWriter struct{ b *bytes.Buffer }

func (m memWriter) Write(_ context.Context, p []byte) (int, error) { return m.b.Write(p) }

func TestUserSpaceEnds(t *testing.T) {
	data := randomBytes(t, 1<<20+5)
	a, b := tcpPair(t)
	defer b.Close()
	got := readAllConn(b)
	st := NewStats()
	_, err := Copy(context.Background(), Stream("served", memReader{bytes.NewReader(data)}, nil, nil), end(t, "sock", a), Options{Stats: st})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	sameSum(t, "served→socket", <-got, data)
	if !st.UserCopy() {
		t.Errorf("methods %v: the copy must say it went through user space", st.Methods())
	}
	f := tempFile(t, data)
	defer f.Close()
	var out bytes.Buffer
	if _, err := Copy(context.Background(), end(t, "file", f), Stream("served", nil, memWriter{&out}, nil), Options{}); err != nil {
		t.Fatal(err)
	}
	sameSum(t, "file→served", out.Bytes(), data)
}

func TestSplitToThree(t *testing.T) {
	base := leakcheck.Take(t)
	data := randomBytes(t, 3<<20+99)
	src1, src2 := tcpPair(t)
	go func() { src1.Write(data); src1.Close() }()
	var sinks []*End
	var outs []<-chan []byte
	var conns []net.Conn
	for i := 0; i < 2; i++ {
		a, b := tcpPair(t)
		sinks = append(sinks, end(t, "sock", a))
		outs = append(outs, readAllConn(b))
		conns = append(conns, a, b)
	}
	p := filepath.Join(t.TempDir(), "dst")
	f, _ := os.Create(p)
	sinks = append(sinks, end(t, "file", f))
	st := NewStats()
	n, err := Split(context.Background(), end(t, "src", src2), sinks, Options{Stats: st})
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Split = %d, %v", n, err)
	}
	for i, c := range conns {
		if i%2 == 0 {
			c.Close()
		}
	}
	for _, o := range outs {
		sameSum(t, "split sink", <-o, data)
	}
	f.Close()
	got, _ := os.ReadFile(p)
	sameSum(t, "split file", got, data)
	if !slices.Contains(st.Methods(), "tee") || st.UserCopy() {
		t.Errorf("methods %v", st.Methods())
	}
	src2.Close()
	for i, c := range conns {
		if i%2 == 1 {
			c.Close()
		}
	}
	base.Check(t)
}

// One sink's peer goes away: without KeepGoing the split fails naming it;
// with it, the others get everything and the failure is reported.
func TestSplitFailingSink(t *testing.T) {
	for _, keep := range []bool{false, true} {
		base := leakcheck.Take(t)
		data := randomBytes(t, 8<<20)
		f := tempFile(t, data)
		good, goodPeer := tcpPair(t)
		bad, badPeer := tcpPair(t)
		badPeer.SetLinger(0)
		badPeer.Close() // an RST answers the first bytes sent to it
		got := readAllConn(goodPeer)
		var reported []error
		n, err := Split(context.Background(), end(t, "file", f),
			[]*End{end(t, "good", good), end(t, "bad", bad)},
			Options{KeepGoing: keep, SinkFailed: func(err error) { reported = append(reported, err) }})
		var se *Error
		if !errors.As(err, &se) || se.End != "bad" || se.Op != "write" {
			t.Fatalf("keep=%v: err %v, want a write error of bad", keep, err)
		}
		good.Close()
		b := <-got
		if keep {
			if n != int64(len(data)) || len(reported) != 1 {
				t.Fatalf("keep-going: moved %d, reported %v", n, reported)
			}
			sameSum(t, "keep-going sink", b, data)
		}
		f.Close()
		bad.Close()
		goodPeer.Close()
		base.Check(t)
	}
}

// Merge of three files of 4 KiB records: every record arrives whole and
// in its source's order.
func TestMergeThree(t *testing.T) {
	base := leakcheck.Take(t)
	const rec, count = 4096, 300
	var srcs []*End
	var files []*os.File
	for s := range 3 {
		var buf bytes.Buffer
		for i := range count {
			r := bytes.Repeat([]byte{byte('a' + s)}, rec)
			r[1], r[2] = byte(i>>8), byte(i)
			buf.Write(r)
		}
		f := tempFile(t, buf.Bytes())
		files = append(files, f)
		srcs = append(srcs, end(t, "src", f))
	}
	a, b := tcpPair(t)
	got := readAllConn(b)
	n, err := Merge(context.Background(), srcs, end(t, "dst", a), Options{Block: rec})
	if err != nil || n != 3*rec*count {
		t.Fatalf("Merge = %d, %v", n, err)
	}
	a.Close()
	out := <-got
	if len(out) != 3*rec*count {
		t.Fatalf("merged %d bytes", len(out))
	}
	next := [3]int{}
	for off := 0; off < len(out); off += rec {
		r := out[off : off+rec]
		s := int(r[0] - 'a')
		if s < 0 || s > 2 || r[rec-1] != r[0] {
			t.Fatalf("record at %d is not whole", off)
		}
		if i := int(r[1])<<8 | int(r[2]); i != next[s] {
			t.Fatalf("source %d: record %d, want %d", s, i, next[s])
		}
		next[s]++
	}
	for _, f := range files {
		f.Close()
	}
	b.Close()
	base.Check(t)
}

// Relay both ways with half-close: each side sends, shuts its write side,
// and still receives everything the other sends afterwards.
func TestRelayHalfClose(t *testing.T) {
	base := leakcheck.Take(t)
	up, down := randomBytes(t, 2<<20), randomBytes(t, 3<<20)
	client, relayA := tcpPair(t)
	relayB, server := tcpPair(t)
	var wg sync.WaitGroup
	var atServer, atClient []byte
	wg.Go(func() {
		atServer, _ = io.ReadAll(server) // until the relay half-closes
		server.Write(down)
		server.CloseWrite()
	})
	wg.Go(func() {
		client.Write(up)
		client.CloseWrite()
		atClient, _ = io.ReadAll(client)
	})
	ab, ba, err := Relay(context.Background(), end(t, "a", relayA), end(t, "b", relayB), Options{})
	if err != nil || ab != int64(len(up)) || ba != int64(len(down)) {
		t.Fatalf("Relay = %d, %d, %v", ab, ba, err)
	}
	wg.Wait()
	sameSum(t, "upstream", atServer, up)
	sameSum(t, "downstream", atClient, down)
	for _, c := range []net.Conn{client, relayA, relayB, server} {
		c.Close()
	}
	base.Check(t)
}

// The rate is honoured within loose bounds (the benchmark measures it).
func TestRate(t *testing.T) {
	data := randomBytes(t, 256<<10)
	f := tempFile(t, data)
	defer f.Close()
	a, b := tcpPair(t)
	defer b.Close()
	got := readAllConn(b)
	bps, _ := ParseRate("2mbit") // 250 kB/s: about a second
	start := time.Now()
	_, err := Copy(context.Background(), end(t, "f", f), end(t, "s", a), Options{Pacer: NewPacer(bps, 0, 0)})
	a.Close()
	if err != nil {
		t.Fatal(err)
	}
	<-got
	want := time.Duration(float64(len(data)) / bps * float64(time.Second))
	if el := time.Since(start); el < want*7/10 || el > want*4 {
		t.Errorf("took %v at 2mbit, want about %v", el, want)
	}
}

func TestSchedule(t *testing.T) {
	data := randomBytes(t, 64<<10)
	f := tempFile(t, data)
	defer f.Close()
	var out bytes.Buffer
	start := time.Now()
	// 16 blocks of 4 KiB, a pause of 20ms after every 2: 8 pauses.
	_, err := Copy(context.Background(), end(t, "f", f), Stream("m", nil, memWriter{&out}, nil),
		Options{Block: 4096, Pacer: NewPacer(0, 2, 20*time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	sameSum(t, "scheduled", out.Bytes(), data)
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("took %v, want at least 8 pauses of 20ms", el)
	}
}

// A peer that resets mid-transfer: a clear error naming the end, and no
// goroutine or fd left.
func TestPeerReset(t *testing.T) {
	base := leakcheck.Take(t)
	in, inPeer := tcpPair(t)
	out, outPeer := tcpPair(t)
	// The source keeps sending; the sink's peer reads a little, then resets.
	stop := make(chan struct{})
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := in.Write(buf); err != nil {
				return
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	go func() {
		io.ReadFull(outPeer, make([]byte, 1<<20))
		outPeer.SetLinger(0)
		outPeer.Close()
	}()
	_, err := Copy(context.Background(), end(t, "in", inPeer), end(t, "tcp/out", out), Options{})
	var se *Error
	if !errors.As(err, &se) || se.End != "tcp/out" || !(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		t.Fatalf("err = %v, want a reset or broken pipe writing tcp/out", err)
	}
	t.Logf("error: %v", err)
	close(stop)
	in.Close()
	inPeer.Close()
	out.Close()
	base.Check(t)
}

// Cancellation wakes a transfer blocked on a silent source.
func TestCancel(t *testing.T) {
	base := leakcheck.Take(t)
	a, b := tcpPair(t)
	c, d := tcpPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := Relay(ctx, end(t, "b", b), end(t, "c", c), Options{})
		done <- err
	}()
	a.Write([]byte("x")) // something moves, then nothing more
	io.ReadFull(d, make([]byte, 1))
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	for _, x := range []net.Conn{a, b, c, d} {
		x.Close()
	}
	base.Check(t)
}

func TestPauseResume(t *testing.T) {
	data := randomBytes(t, 1<<20)
	a, b := tcpPair(t)
	p := NewPacer(0, 0, 0)
	p.Pause()
	st := NewStats()
	done := make(chan error, 1)
	out, outPeer := tcpPair(t)
	got := readAllConn(outPeer)
	go func() {
		_, err := Copy(context.Background(), end(t, "b", b), end(t, "out", out), Options{Pacer: p, Stats: st})
		out.Close()
		done <- err
	}()
	go func() { a.Write(data); a.Close() }()
	if !p.Paused() {
		t.Fatal("not paused")
	}
	p.Resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sameSum(t, "resumed", <-got, data)
	b.Close()
	outPeer.Close()
}

// The same through sendfile (file → socket): the error ends the copy.
func TestPeerResetSendfile(t *testing.T) {
	base := leakcheck.Take(t)
	f := tempFile(t, make([]byte, 32<<20))
	out, outPeer := tcpPair(t)
	go func() {
		io.ReadFull(outPeer, make([]byte, 1<<20))
		outPeer.SetLinger(0)
		outPeer.Close()
	}()
	n, err := Copy(context.Background(), end(t, "file", f), end(t, "tcp/out", out), Options{})
	var se *Error
	if !errors.As(err, &se) || se.End != "tcp/out" || n >= 32<<20 {
		t.Fatalf("Copy = %d, %v; want a write error of tcp/out", n, err)
	}
	f.Close()
	out.Close()
	base.Check(t)
}

// Cancellation stops an unpaced sendfile blocked on a receiver that
// reads nothing (it waits inside the call, which a signal interrupts),
// and the socket is left as it was: non-blocking.
func TestCancelSendfile(t *testing.T) {
	base := leakcheck.Take(t)
	f := tempFile(t, make([]byte, 64<<20))
	out, outPeer := tcpPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	st := NewStats()
	done := make(chan error, 1)
	go func() {
		_, err := Copy(ctx, end(t, "file", f), end(t, "tcp/out", out), Options{Stats: st})
		done <- err
	}()
	// 64 MiB never fit in the socket buffers: whenever this lands, the
	// transfer is (or will be) waiting in sendfile.
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if st.Bytes() >= 64<<20 {
		t.Fatal("everything was sent to a receiver that reads nothing")
	}
	out.SetReadDeadline(time.Now())
	if _, err := out.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the transfer: %v; want the deadline to work (socket non-blocking again)", err)
	}
	f.Close()
	out.Close()
	outPeer.Close()
	base.Check(t)
}

// TestCancelSendfileWhileMoving: on a slow link that keeps moving, a
// cancellation interrupts an unpaced sendfile in the middle of its call,
// not at the end of it (a 16 MiB call took 13 s at 10 Mbit/s). Calls
// last about Options.Progress, a second here, or ask for 1 GiB (0). The
// receiver keeps reading, slowly, after the cancellation; the bytes it
// reads before the transfer returns are bounded by the socket buffers,
// whatever its pace and the call's size.
func TestCancelSendfileWhileMoving(t *testing.T) {
	for _, progress := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprint("progress=", progress), func(t *testing.T) { cancelSendfileWhileMoving(t, progress) })
	}
}

func cancelSendfileWhileMoving(t *testing.T, progress time.Duration) {
	base := leakcheck.Take(t)
	f := tempFile(t, make([]byte, 64<<20))
	out, outPeer := tcpPair(t)
	// Fixed, small socket buffers (no autotuning): what they hold does
	// not blur the call's size.
	if err := errors.Join(out.SetWriteBuffer(256<<10), outPeer.SetReadBuffer(256<<10)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Copy(ctx, end(t, "file", f), end(t, "tcp/out", out), Options{Progress: progress})
		done <- err
	}()
	var afterCancel int64
	var canceled bool
	buf := make([]byte, 32<<10)
	tick := time.NewTicker(2 * time.Millisecond) // a slow reader: its pace, not a synchronisation
	defer tick.Stop()
	var read int64
	for finished := false; !finished; {
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			finished = true
			continue
		case <-tick.C:
		}
		n, err := outPeer.Read(buf)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		read += int64(n)
		if canceled {
			afterCancel += int64(n)
		} else if read >= 8<<20 {
			// Calls have grown to megabytes (twice the last while
			// the buffers take them at once, then about a second
			// of the reader's pace), or there is one: the call
			// running now has most of its bytes still to send.
			cancel()
			canceled = true
		}
	}
	// What the two socket buffers hold (256 KiB each, doubled by the
	// kernel for its bookkeeping) is at most 1 MiB; a call that ran to
	// its end would let the receiver read several more.
	if afterCancel >= 2<<20 {
		t.Errorf("the receiver read %d bytes after the cancellation before the transfer ended", afterCancel)
	}
	t.Logf("read %d bytes after the cancellation", afterCancel)
	f.Close()
	out.Close()
	outPeer.Close()
	base.Check(t)
}
