package catch

import (
	"errors"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The pure parts of the catcher: what it decides, given what it decoded
// and what the namespace answered. The end-to-end tests (catch_test.go)
// run the same decisions through real programs.

func TestDecideOpen(t *testing.T) {
	const (
		rdonly  = syscall.O_RDONLY
		wronly  = syscall.O_WRONLY
		rdwr    = syscall.O_RDWR
		cloexec = syscall.O_CLOEXEC
		creat   = syscall.O_CREAT
		excl    = syscall.O_EXCL
		trunc   = syscall.O_TRUNC
		nonblk  = syscall.O_NONBLOCK
		dir     = syscall.O_DIRECTORY
	)
	var (
		missing  = &nodeFacts{failed: true, errno: syscall.ENOENT}
		timedOut = &nodeFacts{failed: true, errno: syscall.ETIMEDOUT}
		endpoint = &nodeFacts{opener: true}               // tcp/host:port
		stored   = &nodeFacts{opener: true, stored: true} // a cached file
		dirNode  = &nodeFacts{}                           // a directory
		kernel   = &handleFacts{kernel: true}             // a connected socket, a clean cached file
		fileH    = &handleFacts{file: true}               // dns/NAME
		stream   = &handleFacts{}                         // a server's first read accepts
		toMake   = &handleFacts{toMake: true}             // a client socket the fast-path library makes
	)
	call := func(flags int) openCall { return openCall{flags: flags, mode: 0o640} }
	tests := []struct {
		name string
		in   openFacts
		want openPlan
	}{
		{"O_TMPFILE is refused before the lookup", openFacts{call: call(openTmpfile | rdwr), door: true},
			openPlan{action: openFail, errno: syscall.EOPNOTSUPP}},
		{"first the lookup", openFacts{call: call(rdonly), door: true},
			openPlan{action: openLookup}},
		{"O_CREAT of a missing name: the door creates it", openFacts{call: call(creat | wronly), door: true, node: missing},
			openPlan{action: openPrivate, flags: creat | wronly | cloexec, mode: 0o640}},
		{"O_CREAT of a missing name without a door", openFacts{call: call(creat | wronly), node: missing},
			openPlan{action: openFailLookup}},
		{"a missing name", openFacts{call: call(rdonly), door: true, node: missing},
			openPlan{action: openFailLookup}},
		{"O_CREAT and another lookup error", openFacts{call: call(creat | wronly), door: true, node: timedOut},
			openPlan{action: openFailLookup}},
		{"O_CREAT|O_EXCL of an existing name", openFacts{call: call(creat | excl | wronly), door: true, node: stored},
			openPlan{action: openFail, errno: syscall.EEXIST}},
		{"O_PATH of an endpoint would connect", openFacts{call: call(oPath), door: true, node: endpoint},
			openPlan{action: openFail, errno: syscall.EOPNOTSUPP}},
		{"O_PATH of a directory: read-only on the door", openFacts{call: call(oPath | cloexec | dir), door: true, node: dirNode},
			openPlan{action: openPrivate, flags: rdonly | dir | cloexec, fdFlags: cloexec}},
		{"O_PATH of a stored file: opened read-only", openFacts{call: call(oPath | wronly), door: true, node: stored},
			openPlan{action: openNode, flags: rdonly}},
		{"a directory: the door decides", openFacts{call: call(rdonly | creat | trunc | dir), door: true, node: dirNode},
			openPlan{action: openPrivate, flags: rdonly | dir | cloexec}},
		{"a directory without a door: the door's absence answers", openFacts{call: call(rdonly), node: dirNode},
			openPlan{action: openPrivate, flags: rdonly | cloexec}},
		{"O_DIRECTORY of a file", openFacts{call: call(rdonly | dir), door: true, node: endpoint},
			openPlan{action: openFail, errno: syscall.ENOTDIR}},
		{"a trailing slash on a file", openFacts{call: openCall{flags: rdonly, slash: true}, door: true, node: stored},
			openPlan{action: openFail, errno: syscall.ENOTDIR}},
		{"a stored file for writing: by name on the door", openFacts{call: call(wronly | cloexec), door: true, node: stored},
			openPlan{action: openPrivate, flags: wronly | cloexec, mode: 0o640, fdFlags: cloexec}},
		{"a stored file with O_TRUNC: by name on the door", openFacts{call: call(rdonly | trunc), door: true, node: stored},
			openPlan{action: openPrivate, flags: rdonly | trunc | cloexec, mode: 0o640}},
		{"a stored file for writing without a door: opened here", openFacts{call: call(rdwr | trunc), node: stored},
			openPlan{action: openNode, flags: rdwr}},
		{"an endpoint: opened, without open-only flags", openFacts{call: call(rdwr | cloexec | creat | trunc | nonblk), door: true, node: endpoint},
			openPlan{action: openNode, flags: rdwr | nonblk}},
		{"a stored file for reading: opened", openFacts{call: call(rdonly), door: true, node: stored},
			openPlan{action: openNode, flags: rdonly}},
		{"a kernel object is injected", openFacts{call: call(rdwr | nonblk | cloexec), door: true, node: endpoint, handle: kernel},
			openPlan{action: openKernel, flags: rdwr | nonblk | cloexec, fdFlags: cloexec}},
		{"a socket the library makes: its recipe, with or without a door", openFacts{call: call(rdwr | cloexec), node: endpoint, handle: toMake},
			openPlan{action: openMake}},
		{"a kernel object without a door is injected", openFacts{call: call(rdwr), node: endpoint, handle: kernel},
			openPlan{action: openKernel, flags: rdwr}},
		{"a clean stored file's kernel file is injected", openFacts{call: call(rdonly), door: true, node: stored, handle: kernel},
			openPlan{action: openKernel, flags: rdonly}},
		{"a stored file without a kernel file: by name", openFacts{call: call(rdonly | cloexec), door: true, node: stored, handle: stream},
			openPlan{action: openPrivate, flags: rdonly | cloexec, mode: 0o640, fdFlags: cloexec}},
		{"a file made at open: by name", openFacts{call: call(rdonly), door: true, node: endpoint, handle: fileH},
			openPlan{action: openPrivate, flags: rdonly | cloexec, mode: 0o640}},
		{"a stream: served through the pending directory", openFacts{call: call(rdwr | trunc), door: true, node: endpoint, handle: stream},
			openPlan{action: openServe, flags: rdwr | cloexec}},
		{"a file without a door: served (and refused by injectPath)", openFacts{call: call(rdonly | cloexec), node: endpoint, handle: fileH},
			openPlan{action: openServe, flags: rdonly | cloexec, fdFlags: cloexec}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideOpen(tt.in); got != tt.want {
				t.Errorf("decideOpen = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRoute(t *testing.T) {
	tests := []struct {
		k           kind
		in, in2     bool
		door        bool
		want        routing
		description string
	}{
		{kOpen, false, false, true, routing{action: routeContinue}, "a local open"},
		{kOpen, true, false, true, routing{action: routeServe, counted: true}, "a namespace open"},
		{kOpen, true, false, false, routing{action: routeServe, counted: true}, "a namespace open without a door (sockets)"},
		{kStat, true, false, false, routing{action: routeServe, counted: true}, "stat without a door (serve answers)"},
		{kExec, true, false, true, routing{action: routeRefuse, errno: syscall.EACCES, counted: true}, "exec"},
		{kExec, false, false, true, routing{action: routeContinue}, "a local exec"},
		{kXattr, true, false, true, routing{action: routeRefuse, errno: syscall.ENOTSUP, counted: true}, "xattrs"},
		{kTwo, false, false, true, routing{action: routeContinue}, "a local rename"},
		{kTwo, true, true, true, routing{action: routeTwo, counted: true}, "a rename inside the namespace"},
		{kTwo, true, true, false, routing{action: routeRefuse, errno: syscall.EXDEV}, "a rename inside the namespace without a door"},
		{kTwo, true, false, true, routing{action: routeRefuse, errno: syscall.EXDEV}, "a rename out of the namespace"},
		{kTwo, false, true, true, routing{action: routeRefuse, errno: syscall.EXDEV}, "a rename into the namespace"},
	}
	for _, tt := range tests {
		if got := route(tt.k, tt.in, tt.in2, tt.door); got != tt.want {
			t.Errorf("%s: route = %+v, want %+v", tt.description, got, tt.want)
		}
	}
	// Every trapped call on a local name runs untouched.
	for nr, c := range calls {
		if got := route(c.kind, false, false, true); got.action != routeContinue {
			t.Errorf("%s (%d) on a local name: %+v", c.name, nr, got)
		}
	}
}

func TestDecodeOpen(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x86-64 system call numbers")
	}
	how := [3]uint64{syscall.O_RDWR | syscall.O_CREAT, 0o600, 0} // struct open_how
	addr := uint64(uintptr(unsafe.Pointer(&how[0])))
	self := uint32(os.Getpid())
	tests := []struct {
		name  string
		n     notif
		want  openCall
		errno syscall.Errno
	}{
		{"open", notif{Nr: syscall.SYS_OPEN, Args: [6]uint64{0, syscall.O_WRONLY, 0o644}},
			openCall{flags: syscall.O_WRONLY, mode: 0o644}, 0},
		{"openat", notif{Nr: syscall.SYS_OPENAT, Args: [6]uint64{0, 0, syscall.O_RDONLY | syscall.O_CLOEXEC, 0o755}},
			openCall{flags: syscall.O_RDONLY | syscall.O_CLOEXEC, mode: 0o755}, 0},
		{"creat", notif{Nr: syscall.SYS_CREAT, Args: [6]uint64{0, 0o600}},
			openCall{flags: syscall.O_CREAT | syscall.O_WRONLY | syscall.O_TRUNC, mode: 0o600}, 0},
		{"openat2", notif{Pid: self, Nr: sysOpenat2, Args: [6]uint64{0, 0, addr, 24}},
			openCall{flags: syscall.O_RDWR | syscall.O_CREAT, mode: 0o600}, 0},
		{"openat2 with a short struct", notif{Pid: self, Nr: sysOpenat2, Args: [6]uint64{0, 0, addr, 16}},
			openCall{}, syscall.EFAULT},
		{"openat2 with a bad pointer", notif{Pid: self, Nr: sysOpenat2, Args: [6]uint64{0, 0, 0, 24}},
			openCall{}, syscall.EFAULT},
	}
	for _, tt := range tests {
		got, errno := decodeOpen(&tt.n, false)
		if got != tt.want || errno != tt.errno {
			t.Errorf("%s: decodeOpen = %+v, %v; want %+v, %v", tt.name, got, errno, tt.want, tt.errno)
		}
	}
	runtime.KeepAlive(&how)
	if got, _ := decodeOpen(&notif{Nr: syscall.SYS_OPEN}, true); !got.slash {
		t.Error("decodeOpen lost the trailing slash")
	}
}

func TestDecodeStat(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x86-64 system call numbers")
	}
	stat, statfs := int(unsafe.Sizeof(syscall.Stat_t{})), int(unsafe.Sizeof(syscall.Statfs_t{}))
	args := [6]uint64{10, 11, 12, 13, 14, 15}
	tests := []struct {
		nr   int32
		want statCall
	}{
		{syscall.SYS_STAT, statCall{nr: syscall.SYS_NEWFSTATAT, addr: 11, size: stat}},
		{syscall.SYS_LSTAT, statCall{nr: syscall.SYS_NEWFSTATAT, flags: atSymlinkNofollow, addr: 11, size: stat}},
		{syscall.SYS_NEWFSTATAT, statCall{nr: syscall.SYS_NEWFSTATAT, flags: 13, addr: 12, size: stat}},
		{sysStatx, statCall{nr: sysStatx, flags: 12, mask: 13, addr: 14, size: 256}},
		{syscall.SYS_STATFS, statCall{nr: syscall.SYS_STATFS, addr: 11, size: statfs}},
		{syscall.SYS_READLINK, statCall{nr: syscall.SYS_READLINKAT, addr: 11, limit: 12}},
		{syscall.SYS_READLINKAT, statCall{nr: syscall.SYS_READLINKAT, addr: 12, limit: 13}},
		{syscall.SYS_GETPID, statCall{}}, // not a stat: nothing to run
	}
	for _, tt := range tests {
		if got := decodeStat(&notif{Nr: tt.nr, Args: args}); got != tt.want {
			t.Errorf("decodeStat(%d) = %+v, want %+v", tt.nr, got, tt.want)
		}
	}
	// Every call the server sends to statLike decodes.
	for nr, c := range calls {
		switch c.kind {
		case kStat, kStatx, kStatfs, kReadlink:
			if decodeStat(&notif{Nr: int32(nr)}).nr == 0 {
				t.Errorf("%s is not decoded", c.name)
			}
		}
	}
}

func TestHelperFailed(t *testing.T) {
	broken := errors.New("connection reset")
	tests := []struct {
		err      error
		msg      string
		status   int
		want     int
		note     string
		wantErr  string
		isUnavNA bool
	}{
		{broken, "", 5, 0, "", "the helper failed: connection reset", false},
		{nil, msgUnavailable + "seccomp: EINVAL", 1, 0, "", "seccomp user notification is unavailable here (seccomp: EINVAL)", true},
		{nil, msgNotFound + "frob: command not found", 127, 127, "frob: command not found", "", false},
		{nil, "", 2, 2, "", "", false},
	}
	for _, tt := range tests {
		got, note, err := helperFailed(tt.err, tt.msg, tt.status)
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		if got != tt.want || note != tt.note || errText != tt.wantErr || errors.Is(err, ErrUnavailable) != tt.isUnavNA {
			t.Errorf("helperFailed(%v, %q, %d) = %d, %q, %v", tt.err, tt.msg, tt.status, got, note, err)
		}
	}
}

func TestUnavailable(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{syscall.EBUSY, "already runs under a seccomp supervisor"},
		{syscall.EINVAL, "on this system (invalid argument); wirefs run needs Linux 5.14"},
	} {
		err := unavailable(tt.err)
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("unavailable(%v) = %v, want ErrUnavailable saying %q", tt.err, err, tt.want)
		}
	}
}

func TestRunOptions(t *testing.T) {
	o, names, err := runOptions(Options{Args: []string{"true"}})
	if err != nil || names == nil {
		t.Fatalf("runOptions: %v", err)
	}
	if o.Prefix != "/net" || o.Receivers != 1 || o.Log != slog.Default() {
		t.Errorf("defaults: prefix %q, receivers %d, log %v", o.Prefix, o.Receivers, o.Log)
	}
	if o, _, _ := runOptions(Options{Args: []string{"true"}, Prefix: "/x", Receivers: 3}); o.Prefix != "/x" || o.Receivers != 3 {
		t.Errorf("set options changed: %+v", o)
	}
	if _, _, err := runOptions(Options{}); err == nil || err.Error() != "no command to run" {
		t.Errorf("no command: %v", err)
	}
	if _, _, err := runOptions(Options{Prefix: "relative", Args: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative prefix: %v", err)
	}
}

// TestTimingBuckets: every duration falls in the bucket that starts at or
// below it and ends above it, so the reported median is within a quarter
// octave.
func TestTimingBuckets(t *testing.T) {
	for _, d := range []uint64{0, 1, 3, 4, 5, 7, 8, 9, 1000, 1023, 1024, 1280, 2500, 9_000, 1 << 39} {
		b := bucket(d)
		if bucketStart(b) > d || (b+1 < nBuckets && bucketStart(b+1) <= d) {
			t.Errorf("%d ns in bucket %d [%d, %d)", d, b, bucketStart(b), bucketStart(b+1))
		}
	}
	// Counted durations, not measured ones: a measurement on a loaded
	// machine may take any time (a median of 98 µs failed a full run).
	var tm timing
	for _, d := range []time.Duration{time.Microsecond, 2 * time.Microsecond, 100 * time.Microsecond} {
		tm.count(phDecide, d)
	}
	if m, b := tm.median(phDecide), bucket(2000); m != bucketStart(b) {
		t.Errorf("median of 1, 2 and 100 µs: %d ns, want the start of 2 µs's bucket, %d ns", m, bucketStart(b))
	}
}
