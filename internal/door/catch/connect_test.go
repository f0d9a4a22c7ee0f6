package catch_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"wirefs/internal/testsrv"
)

var (
	connectOnce sync.Once
	connectBins map[string]string // "dynamic", "static": testdata/connect.c built
	connectErr  string
)

// connectPrograms builds testdata/connect.c dynamic and static.
func connectPrograms(t *testing.T) map[string]string {
	need(t, "gcc")
	connectOnce.Do(func() {
		src, _ := filepath.Abs("testdata/connect.c")
		connectBins = map[string]string{}
		for kind, flags := range map[string][]string{"dynamic": nil, "static": {"-static"}} {
			bin := filepath.Join(sharedDir(t), "connect-"+kind)
			args := append(append([]string{}, flags...), "-O2", "-pthread", "-o", bin, src)
			if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
				connectErr = fmt.Sprintf("gcc %v failed (apt-get install libc6-dev): %v %s", flags, err, out)
				return
			}
			connectBins[kind] = bin
		}
	})
	if connectErr != "" {
		t.Skip(connectErr)
	}
	return connectBins
}

// TestConnectThroughOpen: open of a TCP client name ends as connect(2)
// would, with the same errno from open itself, whether the fast-path
// library connects in the program's thread (a dynamic program), the
// supervisor connects (the fast path off) or the program is static: a
// refused connect is ECONNREFUSED, a server that never answers
// ETIMEDOUT after the connect timeout, a signal whose handler has no
// SA_RESTART EINTR, one with SA_RESTART lets the open go on (and time
// out); an O_NONBLOCK open gets a connected, non-blocking socket. Under
// the fast path the program's thread waits in connect(2), elsewhere in
// openat(2).
func TestConnectThroughOpen(t *testing.T) {
	bins := connectPrograms(t)
	variants := []struct {
		name, bin, waits string
		opts             []string
	}{
		{"fast path", bins["dynamic"], "connect", nil},
		{"fast path off", bins["dynamic"], "openat", []string{"-nofast"}},
		{"static", bins["static"], "openat", nil},
	}
	e := newEnv(t, identity{name: "self"})
	accepting := echoServer(t)
	refused := "127.0.0.1:" + strconv.Itoa(freePort(t))
	silentPort, _ := testsrv.FullBacklog(t) // connects to it wait
	silent := "127.0.0.1:" + strconv.Itoa(silentPort)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			e.t = t
			run := func(timeout, name string, args ...string) result {
				a := append(append([]string{"-timeout", timeout}, v.opts...), v.bin, "/net/tcp/"+name)
				return e.run("", append(a, args...)...)
			}
			e.want(run("10s", accepting), 0, "open ok\n")
			if r := run("10s", accepting); r.stdout != "open ok\n" {
				t.Errorf("a blocking open: %q, want a blocking socket", r.stdout)
			}
			e.want(run("10s", accepting, "nonblock"), 0, "open ok\nnonblocking\n")
			e.want(run("10s", refused), 0, "open ECONNREFUSED\n")
			e.want(run("2s", silent, "watch"), 0, "waits in "+v.waits+"\n", "open ETIMEDOUT\n")
			e.want(run("10s", silent, "intr"), 0, "alarm\nopen EINTR\n")
			e.want(run("1s", silent, "restart"), 0, "alarm\nopen ETIMEDOUT\n")
		})
	}
}
