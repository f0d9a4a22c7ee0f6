// Package testsrv starts real servers (OpenSSH, vsftpd, nginx, diod) on
// loopback for tests, each with a throwaway configuration in a temporary
// directory, stopped when the test ends. One file per server.
package testsrv

import (
	"os"
	"os/exec"
	"testing"
)

// Need returns the path of program, or skips the test (fails it when
// WIREFS_REQUIRE_PRIV=1, as in CI) when it is not installed.
func Need(t testing.TB, program string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		for _, dir := range []string{"/usr/sbin/", "/sbin/"} {
			if _, e := os.Stat(dir + program); e == nil {
				return dir + program
			}
		}
		Unavailable(t, program+" is not installed (scripts/setup.sh installs it)")
	}
	return p
}

// Unavailable skips the test with why, or fails it when
// WIREFS_REQUIRE_PRIV=1.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("WIREFS_REQUIRE_PRIV") == "1" {
		t.Fatalf("%s (WIREFS_REQUIRE_PRIV=1)", why)
	}
	t.Skipf("%s (set WIREFS_REQUIRE_PRIV=1 to fail instead)", why)
}
