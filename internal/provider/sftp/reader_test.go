package sftp

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
)

// TestPacketSize: against OpenSSH (which announces limits@openssh.com
// since 8.6) a connection reads and writes 255 KiB per request, its
// SFTP_MAX_READ_LENGTH, not 32 KiB; reads across many packets, whole and
// in ranges that start and end inside packets, come back intact, large
// ones through sessions of their own.
func TestPacketSize(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	c := current(t, b)
	if _, ok := c.sftp.HasExtension("limits@openssh.com"); !ok {
		t.Skip("this OpenSSH is older than 8.6: 32 KiB packets are right")
	}
	if c.packet != openSSHPacket {
		t.Fatalf("packet size %d, want %d", c.packet, openSSHPacket)
	}
	measured(t, c) // after the dial: the streams of a distant server start then
	c.streamsMu.Lock()
	early := c.asked || len(c.streams) > 0
	c.streamsMu.Unlock()
	if early && time.Duration(c.rtt.Load()) < spreadRTT {
		t.Error("extra SFTP sessions started before any large read")
	}
	dir := t.TempDir()
	data := make([]byte, 5*openSSHPacket+12345)
	for i := range data {
		data[i] = byte(i*31 + i/4093)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rg := range [][2]int64{{0, -1}, {0, int64(len(data))}, {1000, 3 * openSSHPacket}, {openSSHPacket - 1, 2}, {int64(len(data)) - 10, -1}} {
		r, err := b.ReadRange(context.Background(), filepath.Join(dir, "f"), rg[0], rg[1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		end := int64(len(data))
		if rg[1] >= 0 {
			end = rg[0] + rg[1]
		}
		if err != nil || !bytes.Equal(got, data[rg[0]:end]) {
			t.Fatalf("range %v: %d bytes, %v", rg, len(got), err)
		}
	}
	// The first large read started the extra sessions, each with a
	// channel window of its own, for the reads after it.
	c.starting.Wait()
	c.streamsMu.Lock()
	streams := len(c.streams)
	c.streamsMu.Unlock()
	if streams != streamCount {
		t.Errorf("%d extra SFTP sessions for large reads, want %d", streams, streamCount)
	}
	// A write of several packets arrives whole.
	if err := b.Store(context.Background(), filepath.Join(dir, "g"), bytes.NewReader(data), int64(len(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "g")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("stored %d bytes, %v", len(got), err)
	}
}

// TestCancelledReadsLeakNoRemoteHandle: reads cancelled at every moment —
// before the remote open, while it is in flight, during the transfer —
// leave no file open on the server once their readers are closed, while
// the connection stays up (a handle left open lives as long as the
// connection: a long-lived mount would pile them up to the server's
// limit).
func TestCancelledReadsLeakNoRemoteHandle(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	base := leakcheck.Take(t)
	b := e.dial(t, alias)
	c := current(t, b)
	for i := range 300 {
		ctx, cancel := context.WithCancel(context.Background())
		// From at once to well into the transfer (an open takes about
		// 0.1-0.5 ms on loopback).
		stop := time.AfterFunc(time.Duration(i%60)*25*time.Microsecond, cancel)
		r, err := b.ReadRange(ctx, f, int64(i%7)<<10, -1)
		if err == nil {
			io.Copy(io.Discard, r)
			r.Close()
		}
		stop.Stop()
		cancel()
	}
	if c.Err() != nil || current(t, b) != c {
		t.Fatal("the connection was replaced: its handles went with it, and the test proves nothing")
	}
	// Readers close their handles in the background.
	deadline := time.Now().Add(10 * time.Second)
	for n := openOnServer(t, dir); n > 0; n = openOnServer(t, dir) {
		if time.Now().After(deadline) {
			t.Fatalf("%d handles of %s still open on the server", n, f)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Close()
	base.Check(t)
}

// openOnServer counts the descriptors of any process that refer to files
// in dir: the server's open handles (this process never opens them).
func openOnServer(t *testing.T, dir string) int {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range procs {
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue // not a process, gone, or not ours to see
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
				n++
			}
		}
	}
	return n
}
