package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestChatServer runs the chat server of seed 000, Figure 3 (only the
// mount point and port made configurable) with three concurrent socat
// clients; each sees everyone's join and messages.
func TestChatServer(t *testing.T) {
	t.Parallel()
	m := mount(t)
	port := freePort(t)
	work, err := os.MkdirTemp(baseDir, "chat-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	srv := start(t, 60*time.Second, work,
		[]string{"WIREFS_MOUNT=" + m.Dir, "CHAT_PORT=" + strconv.Itoa(port)},
		"bash", filepath.Join(testdata, "chat-server.sh"))
	chat(t, srv, port, work)
	m.waitLive(t, 0)
}

// TestChatServerCatcher runs the same script unchanged under `wirefs run`,
// with the namespace at /net and no mount.
func TestChatServerCatcher(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	work, err := os.MkdirTemp(baseDir, "chat-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	srv := start(t, 60*time.Second, work,
		[]string{"WIREFS_MOUNT=/net", "CHAT_PORT=" + strconv.Itoa(port)},
		wirefsBin, "run", "--cache-dir", filepath.Join(work, "cache"), "--", "bash", filepath.Join(testdata, "chat-server.sh"))
	chat(t, srv, port, work)
}

// chat drives a running chat server on port with three concurrent socat
// clients, then stops it and checks the port is released.
func chat(t *testing.T, srv *Proc, port int, work string) {
	t.Helper()
	waitListening(t, "tcp", port, srv)

	names := []string{"alice", "bob", "carol"}
	clients := make([]*Proc, len(names))
	for i, name := range names {
		c := start(t, 30*time.Second, "", nil, "socat", "-T20", "-", fmt.Sprintf("TCP:127.0.0.1:%d", port))
		c.waitOutput(t, 10*time.Second, "Username: ")
		fmt.Fprintf(c.stdin, "%s\n", name)
		clients[i] = c
	}
	for _, c := range clients {
		for _, name := range names {
			c.waitOutput(t, 10*time.Second, name+" joined")
		}
	}
	for i, c := range clients {
		fmt.Fprintf(c.stdin, "message number %d from %s\n", i, names[i])
	}
	for _, c := range clients {
		for i, name := range names {
			// PROG echoes `$username ": " $nextline`.
			c.waitOutput(t, 10*time.Second, fmt.Sprintf("%s :  message number %d from %s\n", name, i, name))
		}
	}
	// carol leaves; the others see it.
	clients[2].stdin.Close()
	for _, c := range clients[:2] {
		c.waitOutput(t, 10*time.Second, "carol left")
	}
	log, _ := os.ReadFile(filepath.Join(work, "chatlog.txt"))
	for _, want := range []string{"alice joined", "bob joined", "carol joined", "carol left"} {
		contains(t, "chatlog.txt", string(log), want)
	}
	if t.Failed() {
		for i, c := range clients {
			t.Logf("client %s saw:\n%s", names[i], c.out.String())
		}
	}
	// Stop the server (and its tail -f children): the port is released.
	for _, c := range clients {
		c.kill()
	}
	srv.terminate()
	waitNotListening(t, "tcp", port)
}
