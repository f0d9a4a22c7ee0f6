package ftp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/remote"
	"wirefs/internal/remote/remotetest"
)

// TestRead runs the read suite of every protocol against vsftpd.
func TestRead(t *testing.T) {
	f := newFixture(t, nil)
	remotetest.Read(t, remotetest.Reader{
		Dial: func(t *testing.T, timeout time.Duration) remote.Backend {
			b, err := dial(context.Background(), f.server, remote.Options{Home: f.home, Timeout: timeout}, defaultPoolTimes)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Dir:     remotetest.Subdirs(f.root),
		Path:    remotetest.Below(f.root),
		Pause:   f.srv.Stall,
		Resume:  f.srv.Resume,
		Restart: func() { f.srv.Kill(); f.srv.Start() },
		// The FTP user is not root and owns none of the test's files.
		Stranger: func(t *testing.T) remote.Backend {
			b, err := dial(context.Background(), f.server, remote.Options{Home: f.home}, defaultPoolTimes)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	})
}

// dialPark is f.dial with the given parking time of read streams.
func (f *fixture) dialPark(t *testing.T, park time.Duration) *Backend {
	t.Helper()
	times := farPoolTimes
	times.park, times.gapGrace = park, park
	b, err := dial(context.Background(), f.server, remote.Options{Home: f.home, Timeout: 10 * time.Second}, times)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// readRange reads all of ReadRange(p, off, n) and closes it.
func readRange(b *Backend, ctx context.Context, p string, off, n int64) ([]byte, error) {
	r, err := b.ReadRange(ctx, p, off, n)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	r.Close()
	return data, err
}

// readLater reads p whole in a goroutine; the channel says whether it
// read want.
func readLater(b *Backend, ctx context.Context, p, want string) <-chan error {
	done := make(chan error, 1)
	go func() {
		got, err := readRange(b, ctx, p, 0, -1)
		if err == nil && string(got) != want {
			err = fmt.Errorf("%s: read back differs", p)
		}
		done <- err
	}()
	return done
}

// TestConsecutiveRangesShareATransfer: the ranges a sequential reader's
// read-ahead asks for, one after the other, come from one RETR: a range
// that waits in line takes the transfer when the one before is done, and
// a range asked for right after the one before closed takes it parked.
func TestConsecutiveRangesShareATransfer(t *testing.T) {
	data := randomBytes(4 << 20)
	f := newFixture(t, map[string]string{"big": string(data)})
	b := f.dialPark(t, time.Minute)
	ctx := context.Background()

	r1, err := b.ReadRange(ctx, "/big", 0, 1<<20)
	mustDo(t, err)
	second := make(chan []byte, 1)
	go func() {
		got, err := readRange(b, ctx, "/big", 1<<20, 1<<20)
		if err != nil {
			t.Error(err)
		}
		second <- got
	}()
	waitFor(t, "the second range to wait in line", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.streams["/big"]) == 1 && len(b.streams["/big"][0].next) == 1
	})
	first, err := io.ReadAll(r1)
	mustDo(t, err)
	mustDo(t, r1.Close())
	if !bytes.Equal(first, data[:1<<20]) || !bytes.Equal(<-second, data[1<<20:2<<20]) {
		t.Fatal("the first two ranges differ from the file")
	}
	// Parked after the second range: the third takes it.
	rest, err := readRange(b, ctx, "/big", 2<<20, -1)
	mustDo(t, err)
	if !bytes.Equal(rest, data[2<<20:]) {
		t.Fatal("the rest differs from the file")
	}
	if n := f.srv.Commands("RETR"); n != 1 {
		t.Errorf("%d RETR for three consecutive ranges, want 1", n)
	}
	// A range elsewhere is a transfer of its own.
	if got, err := readRange(b, ctx, "/big", 100, 10); err != nil || !bytes.Equal(got, data[100:110]) {
		t.Errorf("a range before the stream: %v", err)
	}
	if n := f.srv.Commands("RETR"); n != 2 {
		t.Errorf("%d RETR after a range elsewhere, want 2", n)
	}
}

// TestParkedTransferEnds: a transfer nobody continues is aborted after the
// parking time and its connection reused; a range asked for later gets a
// transfer of its own.
func TestParkedTransferEnds(t *testing.T) {
	data := randomBytes(2 << 20)
	f := newFixture(t, map[string]string{"big": string(data)})
	b := f.dialPark(t, 20*time.Millisecond)
	ctx := context.Background()
	got, err := readRange(b, ctx, "/big", 0, 1<<20)
	mustDo(t, err)
	waitFor(t, "the parked transfer to end", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.streams) == 0 && len(b.idle) == 1
	})
	more, err := readRange(b, ctx, "/big", 1<<20, -1)
	mustDo(t, err)
	if !bytes.Equal(append(got, more...), data) {
		t.Error("read back differs")
	}
	if n := f.srv.Commands("RETR"); n != 2 {
		t.Errorf("%d RETR, want 2", n)
	}
}

// TestChangeEndsParkedTransfer: after a store, the parked transfer of the
// old file is not continued: the next range has the new data.
func TestChangeEndsParkedTransfer(t *testing.T) {
	old, now := randomBytes(2<<20), randomBytes(2<<20)
	f := newFixture(t, map[string]string{"d/big": string(old)})
	b := f.dialPark(t, time.Minute)
	ctx := context.Background()
	_, err := readRange(b, ctx, "/d/big", 0, 1<<20)
	mustDo(t, err)
	mustDo(t, b.Store(ctx, "/d/big", bytes.NewReader(now), int64(len(now)), 0o644))
	got, err := readRange(b, ctx, "/d/big", 1<<20, 100)
	mustDo(t, err)
	if !bytes.Equal(got, now[1<<20:1<<20+100]) {
		t.Error("a range after a store has the old file's data")
	}
}

// TestWaitingRangeCancelled: a range waiting in line gives up with EINTR
// when its caller does, and the transfer goes on for the others.
func TestWaitingRangeCancelled(t *testing.T) {
	data := randomBytes(2 << 20)
	f := newFixture(t, map[string]string{"big": string(data)})
	b := f.dialPark(t, time.Minute)
	r1, err := b.ReadRange(context.Background(), "/big", 0, 1<<20)
	mustDo(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { _, err := b.ReadRange(ctx, "/big", 1<<20, 10); gaveUp <- err }()
	waitFor(t, "the second range to wait in line", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.streams["/big"]) == 1 && len(b.streams["/big"][0].next) == 1
	})
	third := make(chan []byte, 1)
	go func() {
		got, err := readRange(b, context.Background(), "/big", 1<<20+10, 100)
		if err != nil {
			t.Error(err)
		}
		third <- got
	}()
	waitFor(t, "the third range to wait in line", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.streams["/big"][0].next) == 2
	})
	cancel()
	wantErrno(t, "a cancelled range in line", <-gaveUp, syscall.EINTR)
	// The range behind the cancelled one does not wait for data nobody
	// reads: it gets a transfer of its own while the first is held.
	select {
	case got := <-third:
		if !bytes.Equal(got, data[1<<20+10:1<<20+110]) {
			t.Error("the range behind a cancelled one differs")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the range behind a cancelled one still waits")
	}
	first, err := io.ReadAll(r1)
	mustDo(t, err)
	mustDo(t, r1.Close())
	got, err := readRange(b, context.Background(), "/big", 1<<20, -1)
	mustDo(t, err)
	if !bytes.Equal(append(first, got...), data) {
		t.Error("read back differs")
	}
}

// TestRangeAskedBeforeTheOneInFront: read-ahead's windows come from
// several goroutines, so the one after the next may ask first: it waits
// in line beyond the gap, the next fills it, and one RETR serves all.
// A gap nobody fills by the time the transfer reaches it sends the range
// waiting beyond it to a transfer of its own.
func TestRangeAskedBeforeTheOneInFront(t *testing.T) {
	data := randomBytes(4 << 20)
	f := newFixture(t, map[string]string{"big": string(data)})
	b := f.dialPark(t, time.Minute)
	ctx := context.Background()
	inLine := func(n int) func() bool {
		return func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return len(b.streams["/big"]) == 1 && len(b.streams["/big"][0].next) == n
		}
	}
	r1, err := b.ReadRange(ctx, "/big", 0, 1<<20)
	mustDo(t, err)
	later := make(chan []byte, 2)
	read := func(off int64) {
		got, err := readRange(b, ctx, "/big", off, 1<<20)
		if err != nil {
			t.Error(err)
		}
		later <- got
	}
	go read(2 << 20)
	waitFor(t, "the third range to wait beyond the gap", inLine(1))
	go read(1 << 20)
	waitFor(t, "the second range to fill the gap", inLine(2))
	first, err := io.ReadAll(r1)
	mustDo(t, err)
	mustDo(t, r1.Close())
	a, c := <-later, <-later
	if !bytes.Equal(first, data[:1<<20]) || !bytes.Equal(a, data[1<<20:2<<20]) || !bytes.Equal(c, data[2<<20:3<<20]) {
		t.Fatal("the ranges differ from the file")
	}
	if n := f.srv.Commands("RETR"); n != 1 {
		t.Errorf("%d RETR for three ranges asked out of order, want 1", n)
	}

	// A gap nobody fills by the time the transfer reaches it, nor
	// within gapGrace after: the range waiting beyond it gets a transfer
	// of its own. (On a new session: the first transfer is parked at
	// 3 MiB.)
	b = f.dialPark(t, 50*time.Millisecond)
	r1, err = b.ReadRange(ctx, "/big", 0, 1<<20)
	mustDo(t, err)
	go read(3<<20 + 1<<19)
	waitFor(t, "the last range to wait beyond the gap", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, s := range b.streams["/big"] {
			if len(s.next) == 1 {
				return true
			}
		}
		return false
	})
	_, err = io.ReadAll(r1)
	mustDo(t, err)
	mustDo(t, r1.Close())
	if got := <-later; !bytes.Equal(got, data[3<<20+1<<19:]) {
		t.Error("the range beyond an unfilled gap differs")
	}
	if n := f.srv.Commands("RETR"); n != 3 {
		t.Errorf("%d RETR, want 3 (one more for the range, one for the one beyond the gap)", n)
	}

	// A transfer parked before a gap: the range beyond waits, the one
	// that fills the gap takes the transfer, and hands it on.
	b = f.dialPark(t, time.Minute)
	got, err := readRange(b, ctx, "/big", 0, 1<<20)
	mustDo(t, err)
	go read(2 << 20)
	waitFor(t, "the range beyond the gap to wait", inLine(1))
	gapData, err := readRange(b, ctx, "/big", 1<<20, 1<<20)
	mustDo(t, err)
	if beyond := <-later; !bytes.Equal(append(append(got, gapData...), beyond...), data[:3<<20]) {
		t.Error("the ranges around a parked transfer differ")
	}
	if n := f.srv.Commands("RETR"); n != 4 {
		t.Errorf("%d RETR, want 4 (one more for three ranges)", n)
	}

	// The transfer reaches a gap while a range waits beyond it, before
	// the range that fills it is asked for (its data came first): the
	// transfer waits at the gap (gapGrace) with the range beyond in
	// line, and the range that fills the gap takes it and hands it on.
	b = f.dialPark(t, time.Minute)
	r1, err = b.ReadRange(ctx, "/big", 0, 1<<20)
	mustDo(t, err)
	go read(2 << 20)
	waitFor(t, "the range beyond the gap to wait", inLine(1))
	first, err = io.ReadAll(r1)
	mustDo(t, err)
	mustDo(t, r1.Close())
	waitFor(t, "the transfer to wait at the gap", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		ss := b.streams["/big"]
		return len(ss) == 1 && ss[0].parked != nil && len(ss[0].next) == 1
	})
	gapData, err = readRange(b, ctx, "/big", 1<<20, 1<<20)
	mustDo(t, err)
	if beyond := <-later; !bytes.Equal(append(append(first, gapData...), beyond...), data[:3<<20]) {
		t.Error("the ranges around a transfer that waited at a gap differ")
	}
	if n := f.srv.Commands("RETR"); n != 5 {
		t.Errorf("%d RETR, want 5 (one more for three ranges)", n)
	}
}
