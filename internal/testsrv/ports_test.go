package testsrv

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestFreePortOutsideEphemeralRange: the ports handed out are never
// ones the kernel gives outgoing connections, and never twice.
func TestFreePortOutsideEphemeralRange(t *testing.T) {
	low, high, err := ephemeralRange()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 200 {
		port := FreePort(t)
		if port < 10000 || port > 65535 || (low <= port && port <= high) {
			t.Fatalf("FreePort gave %d; the ephemeral range is %d-%d", port, low, high)
		}
		if seen[port] {
			t.Fatalf("FreePort gave %d twice", port)
		}
		seen[port] = true
	}
}

// TestServeOnTakenPort: a real server whose port another process's socket
// holds is a start that failed because of it (errPortTaken), even though
// connections to the port are accepted — by the other socket.
func TestServeOnTakenPort(t *testing.T) {
	python := Need(t, "python3")
	port := FreePort(t)
	thief, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Close()
	if !listensOn(os.Getpid(), port) {
		t.Fatalf("listensOn does not see this process's listener on %d", port)
	}
	logFile := filepath.Join(t.TempDir(), "log")
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(python, "-m", "http.server", "--bind", "127.0.0.1", "--directory", t.TempDir(), strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = f, f
	if err := serve(t, cmd, port, logFile); !errors.Is(err, errPortTaken) {
		t.Fatalf("serve on a taken port: %v, want %v", err, errPortTaken)
	}
}

// TestStartOnFreePortRetries: a start that lost its port is tried again
// on another port.
func TestStartOnFreePortRetries(t *testing.T) {
	var tried []int
	got := startOnFreePort(t, func(port int) error {
		tried = append(tried, port)
		if len(tried) < 3 {
			return errPortTaken
		}
		return nil
	})
	if len(tried) != 3 || got != tried[2] || tried[0] == tried[1] || tried[1] == tried[2] {
		t.Errorf("tried ports %v, returned %d: want three different ports, the last returned", tried, got)
	}
}
