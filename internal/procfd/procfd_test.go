package procfd

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestFind(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	me := uint32(os.Getpid())
	fd := strconv.Itoa(int(f.Fd()))
	if got, ok := Find(me, dir+"/", st.Ino, ""); !ok || got != fd {
		t.Fatalf("Find without a hint: %q %v, want %s", got, ok, fd)
	}
	if got, ok := Find(me, dir+"/", st.Ino, "0"); !ok || got != fd {
		t.Fatalf("Find with a wrong hint: %q %v, want %s", got, ok, fd)
	}
	if _, ok := Find(me, dir+"/", st.Ino+1, fd); ok {
		t.Fatal("found a descriptor on another inode")
	}
	if _, ok := Find(me, "/elsewhere/", st.Ino, fd); ok {
		t.Fatal("found a descriptor outside the prefix")
	}
	if _, ok := Find(0, dir+"/", st.Ino, ""); ok {
		t.Fatal("pid 0 holds nothing")
	}
}
