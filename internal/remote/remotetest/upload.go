package remotetest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wirefs/internal/remote"
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
	for _, name := range Temporaries(filepath.Dir(file)) {
		t.Errorf("a temporary is left on the server: %s", name)
	}
}

// Temporaries lists the upload temporaries (remote.TempName) in the local
// directory dir that hold data: an empty spare (remote.SpareName, opened
// ahead for the next store and removed when none comes) is not a failed
// upload's.
func Temporaries(dir string) []string {
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.Contains(e.Name(), ".wirefs-") {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() == 0 && remote.IsSpare(e.Name()) {
			continue
		}
		left = append(left, e.Name())
	}
	return left
}
