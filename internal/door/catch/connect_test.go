package catch_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
// library makes and connects the socket in the program's thread (a
// dynamic program), the supervisor connects (the fast path off) or the
// program is static: the socket carries bytes both ways, is close-on-exec
// if and only if the open asked for it, a refused connect is ECONNREFUSED, a server that never answers
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
			e.want(run("10s", accepting, "echo"), 0, "open ok\necho ok\n")
			e.want(run("10s", accepting, "cloexec", "echo"), 0, "open ok\ncloexec\necho ok\n")
			e.want(run("10s", refused), 0, "open ECONNREFUSED\n")
			e.want(run("2s", silent, "watch"), 0, "waits in "+v.waits+"\n", "open ETIMEDOUT\n")
			e.want(run("10s", silent, "intr"), 0, "alarm\nopen EINTR\n")
			e.want(run("1s", silent, "restart"), 0, "alarm\nopen ETIMEDOUT\n")
		})
	}
}

// TestConnectSocketIsTheProgramsOwn: under the fast path the program
// makes its socket, so the socket is the program's own — its owner the
// program's user, as for a program that connects by itself (and its
// cgroup the program's, which the VIF shaping classifies by) — where the
// supervisor makes it for a static program or without the fast path. A
// root supervisor, a program that runs as nobody.
func TestConnectSocketIsTheProgramsOwn(t *testing.T) {
	if os.Geteuid() != 0 {
		testsrv.Unavailable(t, "the program runs as another user than the supervisor: needs root")
	}
	need(t, "setpriv")
	bins := connectPrograms(t)
	e := newEnv(t, identity{name: "self"})
	accepting := echoServer(t)
	for _, v := range []struct {
		name, bin, owner string
		opts             []string
	}{
		{"fast path", bins["dynamic"], "65534", nil},
		{"fast path off", bins["dynamic"], "0", []string{"-nofast"}},
		{"static", bins["static"], "0", nil},
	} {
		t.Run(v.name, func(t *testing.T) {
			e.t = t
			args := append(append([]string{}, v.opts...), "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
				v.bin, "/net/tcp/"+accepting, "echo", "owner")
			e.want(e.run("", args...), 0, "open ok\necho ok\nowner "+v.owner+"\n")
		})
	}
}

// TestConnectOtherNetworkNamespace: a program in another network
// namespace than the supervisor's (here one of its own, whose loopback is
// down) connects in the supervisor's, as before the library made sockets:
// the library finds its socket in another namespace and asks for the
// supervisor's instead.
func TestConnectOtherNetworkNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		testsrv.Unavailable(t, "network namespaces need root")
	}
	need(t, "ip", "nsenter")
	bins := connectPrograms(t)
	name := fmt.Sprintf("wfc%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		testsrv.Unavailable(t, fmt.Sprintf("ip netns add: %v %s", err, out))
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	enter := "--net=/run/netns/" + name
	e := newEnv(t, identity{name: "self"})
	accepting := echoServer(t)
	// The control: there, a socket of the program's own reaches nothing.
	probe := exec.Command("nsenter", enter, python, "-c",
		"import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 5)", accepting[len("127.0.0.1:"):])
	if err := probe.Run(); err == nil {
		t.Fatalf("a connect from namespace %s reached the server: the test proves nothing", name)
	}
	for _, v := range []struct {
		name string
		opts []string
	}{{"fast path", nil}, {"fast path off", []string{"-nofast"}}} {
		t.Run(v.name, func(t *testing.T) {
			e.t = t
			args := append(append([]string{}, v.opts...), "nsenter", enter, bins["dynamic"], "/net/tcp/"+accepting, "echo")
			e.want(e.run("", args...), 0, "open ok\necho ok\n")
		})
	}
}

// TestConnectRecipeKept: a dynamic program that opens a literal address's
// name again makes its socket from the recipe the supervisor gave it the
// first time, without trapping (ns.SocketRecipe.Reusable); a host name's
// recipe is asked for at every open (its addresses may change), as is
// every open without the fast path, of a static program, or with other
// flags (O_NONBLOCK: the supervisor's socket).
func TestConnectRecipeKept(t *testing.T) {
	bins := connectPrograms(t)
	e := newEnv(t, identity{name: "self"})
	accepting := echoServer(t)
	byHost := "localhost:" + accepting[len("127.0.0.1:"):]
	for _, v := range []struct {
		name, bin, to string
		opts, args    []string
		opens         int // that reach the provider, of 4
	}{
		{"literal address", bins["dynamic"], accepting, nil, []string{"echo"}, 1},
		{"host name", bins["dynamic"], byHost, nil, []string{"echo"}, 4},
		{"fast path off", bins["dynamic"], accepting, []string{"-nofast"}, []string{"echo"}, 4},
		{"static", bins["static"], accepting, nil, []string{"echo"}, 4},
		{"O_NONBLOCK", bins["dynamic"], accepting, nil, []string{"nonblock"}, 4},
	} {
		t.Run(v.name, func(t *testing.T) {
			e.t = t
			args := append(append(append([]string{"-timing"}, v.opts...), v.bin, "/net/tcp/"+v.to), v.args...)
			r := e.run("", append(args, "again")...)
			e.want(r, 0, "open ok\n", "again ok\n")
			if v.args[0] == "echo" && strings.Count(r.stdout, "echo ok\n") != 4 {
				t.Errorf("stdout %q: want 4 echoes", r.stdout)
			}
			if got := timed(t, r, "provider open"); got != v.opens {
				t.Errorf("%d of 4 opens reached the provider, want %d", got, v.opens)
			}
		})
	}
}
