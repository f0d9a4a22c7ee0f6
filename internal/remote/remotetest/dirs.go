package remotetest

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
)

// Subdirs returns a Dir for a server that serves root: each call makes a
// fresh directory below it.
func Subdirs(root string) func(*testing.T) string {
	var n atomic.Int64
	return func(t *testing.T) string {
		t.Helper()
		dir := filepath.Join(root, "d"+strconv.FormatInt(n.Add(1), 10))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
}

// Below returns a Path for a server whose names start at root (its "/").
func Below(root string) func(string) string {
	return func(local string) string {
		rel, _ := filepath.Rel(root, local)
		return "/" + filepath.ToSlash(rel)
	}
}
