package remotetest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CheckIntact fails unless the server's disk holds exactly want at file
// (a local path) and no temporary of an upload (remote.TempName) in its
// directory: what a failed Store must leave.
func CheckIntact(t *testing.T, file string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s on the server: %d bytes (%v), want the %d bytes it had", file, len(got), err, len(want))
	}
	ents, _ := os.ReadDir(filepath.Dir(file))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".wirefs-") {
			t.Errorf("a temporary is left on the server: %s", e.Name())
		}
	}
}
