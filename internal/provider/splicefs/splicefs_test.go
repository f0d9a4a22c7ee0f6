package splicefs

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
)

func TestParseCtl(t *testing.T) {
	good := map[string]Command{
		"from a to b":                 {Verb: "from", Srcs: []string{"a"}, Dsts: []string{"b"}},
		"from a to b c d rate 10mbit": {Verb: "from", Srcs: []string{"a"}, Dsts: []string{"b", "c", "d"}, Rate: 1.25e6, HasRate: true},
		"merge a b c to d":            {Verb: "merge", Srcs: []string{"a", "b", "c"}, Dsts: []string{"d"}},
		"relay tcp/8080 tcp/h:80":     {Verb: "relay", Srcs: []string{"tcp/8080"}, Dsts: []string{"tcp/h:80"}},
		"relay a b schedule 4,16ms":   {Verb: "relay", Srcs: []string{"a"}, Dsts: []string{"b"}, N: 4, D: 16 * time.Millisecond},
		"rate 1gbit":                  {Verb: "rate", Rate: 1.25e8, HasRate: true},
		"schedule 1,70ms":             {Verb: "schedule", N: 1, D: 70 * time.Millisecond},
		"  pause ":                    {Verb: "pause"},
		"resume":                      {Verb: "resume"},
		"stop":                        {Verb: "stop"},
		"keep":                        {Verb: "keep"},
	}
	for line, want := range good {
		got, err := ParseCtl(line)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseCtl(%q) = %+v, %v; want %+v", line, got, err, want)
		}
	}
	for _, bad := range []string{"", "from a", "from to b", "from a b to c", "merge a to b c", "relay a",
		"relay a b c", "rate", "rate fast", "pause now", "go", "from a to b rate", "from a to b rate 1mbit rate 2mbit",
		"schedule 4", "from a to rate 1mbit"} {
		if c, err := ParseCtl(bad); err == nil {
			t.Errorf("ParseCtl(%q) = %+v, want an error", bad, c)
		}
	}
}

// FuzzParseCtl: nothing panics, and a parsed command prints as a line
// that parses back to it.
func FuzzParseCtl(f *testing.F) {
	for _, s := range []string{"from a to b c rate 10mbit", "merge a b to c schedule 4,16ms", "relay a b", "rate 1kbit", "stop", "from to to to"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := ParseCtl(line)
		if err != nil {
			return
		}
		back, err := ParseCtl(c.String())
		if err != nil {
			t.Fatalf("%q parses, but its String %q does not: %v", line, c.String(), err)
		}
		if back.Verb != c.Verb || !reflect.DeepEqual(back.Srcs, c.Srcs) || !reflect.DeepEqual(back.Dsts, c.Dsts) ||
			back.HasRate != c.HasRate || back.N != c.N || back.D != c.D {
			t.Fatalf("%q → %+v → %q → %+v", line, c, c.String(), back)
		}
	})
}

var me = ns.Caller{Pid: uint32(os.Getpid()), Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())}

func openFile(t *testing.T, d ns.Dir, name string, c ns.Caller, flags int) (ns.Handle, error) {
	t.Helper()
	n, err := d.Lookup(context.Background(), name)
	if err != nil {
		return nil, err
	}
	return n.(ns.Opener).Open(context.Background(), c, flags)
}

func readAll(t *testing.T, h ns.Handle) string {
	t.Helper()
	b := make([]byte, 4096)
	n, _ := h.(ns.ReaderAt).ReadAt(context.Background(), b, 0)
	return string(b[:n])
}

func TestCloneCtlStatus(t *testing.T) {
	base := leakcheck.Take(t)
	p := New(ns.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	root := p.Dir()
	h, err := openFile(t, root, "clone", me, os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, h); got != "1\n" {
		t.Fatalf("clone reads %q", got)
	}
	n, err := root.Lookup(context.Background(), "1")
	if err != nil {
		t.Fatal(err)
	}
	dir := n.(ns.Dir)
	if a, _ := dir.Attr(context.Background()); a.Mode.Perm() != 0o700 || a.Uid != me.Uid {
		t.Errorf("splice/1 is %v uid %d", a.Mode, a.Uid)
	}
	ents, _ := root.ReadDir(context.Background())
	if len(ents) != 2 || ents[1].Name != "1" {
		t.Errorf("ls splice/ = %v", ents)
	}
	st, _ := openFile(t, dir, "status", me, os.O_RDONLY)
	if got := readAll(t, st); got != "idle 0 0 0.000\n" {
		t.Errorf("status %q", got)
	}

	// Another user may not touch it; nor may a local path be opened for
	// a user who is not the daemon's.
	other := ns.Caller{Uid: me.Uid + 1000, Gid: me.Gid + 1000}
	if me.Uid == 0 {
		other.Uid = 65534
	}
	if _, err := openFile(t, dir, "ctl", other, os.O_WRONLY); ns.Errno(err) != syscall.EACCES {
		t.Errorf("another user's open of ctl: %v, want EACCES", err)
	}

	data := make([]byte, 3<<20)
	rand.Read(data)
	src := filepath.Join(t.TempDir(), "src")
	dst := filepath.Join(t.TempDir(), "dst")
	os.WriteFile(src, data, 0o600)
	ctl, err := openFile(t, dir, "ctl", me, os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	w := ctl.(ns.Writer)
	if _, err := w.Write(context.Background(), []byte("from "+src+"\n")); ns.Errno(err) != syscall.EINVAL {
		t.Errorf("bad line: %v, want EINVAL", err)
	}
	otherCtl := &ctlHandle{j: p.lookup(1), caller: other}
	if _, err := otherCtl.Write(context.Background(), []byte("from "+src+" to "+dst+"\n")); ns.Errno(err) != syscall.EACCES {
		t.Errorf("a local path for another user: %v, want EACCES", err)
	}
	if _, err := w.Write(context.Background(), []byte("from "+src+" to "+dst+" rate 1gbit\n")); err != nil {
		t.Fatal(err)
	}
	j := p.lookup(1)
	<-j.done
	got, _ := os.ReadFile(dst)
	if !bytes.Equal(got, data) {
		t.Fatalf("dst has %d bytes, not the %d of src", len(got), len(data))
	}
	st, _ = openFile(t, dir, "status", me, os.O_RDONLY)
	if s := readAll(t, st); !strings.HasPrefix(s, "done 3145728 ") {
		t.Errorf("status %q", s)
	}
	if _, err := w.Write(context.Background(), []byte("from "+src+" to "+dst+"\n")); ns.Errno(err) != syscall.EINVAL {
		t.Errorf("a second start: %v, want EINVAL", err)
	}
	ctl.Close()
	h.Close() // the last clone fd: the splice goes
	if _, err := root.Lookup(context.Background(), "1"); ns.Errno(err) != syscall.ENOENT {
		t.Errorf("splice/1 after close: %v", err)
	}
	p.Close()
	base.Check(t)
}

// keep detaches a splice from its clone; rmdir stops it.
func TestKeepAndRmdir(t *testing.T) {
	p := New(ns.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	root := p.Dir()
	h, _ := openFile(t, root, "clone", me, os.O_RDWR)
	n, _ := root.Lookup(context.Background(), "1")
	ctl, _ := openFile(t, n.(ns.Dir), "ctl", me, os.O_WRONLY)
	// A FIFO nobody writes: the splice waits on it until stopped.
	fifo := filepath.Join(t.TempDir(), "fifo")
	syscall.Mkfifo(fifo, 0o600)
	keep, _ := os.OpenFile(fifo, os.O_RDWR, 0) // holds the FIFO open
	defer keep.Close()
	if _, err := ctl.(ns.Writer).Write(context.Background(), []byte("keep\nfrom "+fifo+" to "+filepath.Join(t.TempDir(), "out")+"\n")); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if _, err := root.Lookup(context.Background(), "1"); err != nil {
		t.Fatalf("a kept splice went with its clone: %v", err)
	}
	if err := root.(ns.Remover).Remove(context.Background(), "1", true); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Lookup(context.Background(), "1"); ns.Errno(err) != syscall.ENOENT {
		t.Errorf("splice/1 after rmdir: %v", err)
	}
	p.Close()
}

// Seed 002's Figures 1 and 2: an interface controlled remotely, and
// interfaces controlling each other. Splice 2 moves what a controller
// writes (a FIFO here, a socket as well) into splice 1's ctl: the line
// "pause" arriving on it pauses splice 1.
func TestSpliceControlsSplice(t *testing.T) {
	names := ns.New()
	p := New(names, slog.New(slog.NewTextHandler(io.Discard, nil)))
	names.Mount("splice", p.Dir())
	root := p.Dir()
	dir := t.TempDir()
	fifo := func(name string) (string, *os.File) {
		path := filepath.Join(dir, name)
		syscall.Mkfifo(path, 0o600)
		f, _ := os.OpenFile(path, os.O_RDWR, 0) // writer end for the test
		t.Cleanup(func() { f.Close() })
		return path, f
	}
	data, dataW := fifo("data")
	ctl, ctlW := fifo("ctl")
	start := func(line string) ns.Handle {
		h, _ := openFile(t, root, "clone", me, os.O_RDWR)
		n := strings.TrimSpace(readAll(t, h))
		d, _ := root.Lookup(context.Background(), n)
		c, _ := openFile(t, d.(ns.Dir), "ctl", me, os.O_WRONLY)
		if _, err := c.(ns.Writer).Write(context.Background(), []byte(line)); err != nil {
			t.Fatal(err)
		}
		c.Close()
		return h
	}
	h1 := start("from " + data + " to " + filepath.Join(dir, "out") + "\n")
	h2 := start("from " + ctl + " to splice/1/ctl\n")
	ctlW.Write([]byte("pause\n"))
	j1 := p.lookup(1)
	for !j1.pacer.Paused() { // splice 2 delivers the line; no sleep, a bounded spin
		select {
		case <-p.lookup(2).done:
			t.Fatalf("splice 2 ended: %s", p.lookup(2).status())
		default:
		}
		runtime.Gosched()
	}
	st, _ := openFile(t, mustDir(t, root, "1"), "status", me, os.O_RDONLY)
	if s := readAll(t, st); !strings.HasPrefix(s, "paused ") {
		t.Errorf("splice 1: %q, want paused", s)
	}
	dataW.Write([]byte("x"))
	h2.Close()
	h1.Close()
	p.Close()
}

func mustDir(t *testing.T, r ns.Dir, name string) ns.Dir {
	n, err := r.Lookup(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return n.(ns.Dir)
}
