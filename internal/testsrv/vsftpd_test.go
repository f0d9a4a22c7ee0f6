package testsrv

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// TestVsftpdStartsWithNoSession: a server that allows one session per
// address greets the test's first client, rather than refusing it for a
// readiness probe's session it has not reaped yet.
func TestVsftpdStartsWithNoSession(t *testing.T) {
	addr, _, _ := Vsftpd(t, t.TempDir(), VsftpdMaxPerIP(1))
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	greeting, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(greeting, "220") {
		t.Errorf("the first client is greeted with %q: a readiness probe's session still counts", strings.TrimSpace(greeting))
	}
}
