package sftp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// TestStartAppendsLandInOrder: appends started back to back on one file
// opened with SSH_FXF_APPEND, all in flight before the first answer is
// waited for, land on the real OpenSSH server in the order they were
// started — what lets the cache overlap the write-backs of one file.
func TestStartAppendsLandInOrder(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	p := dir + "/log"
	os.WriteFile(p, []byte("start\n"), 0o644)
	af, err := b.OpenAppend(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := af.(remote.AppendStarter)
	if !ok {
		t.Fatal("an SFTP append file cannot start appends")
	}
	var want strings.Builder
	want.WriteString("start\n")
	var waits []func(context.Context) error
	for i := range 200 {
		rec := fmt.Sprintf("record %03d\n", i)
		want.WriteString(rec)
		waits = append(waits, st.StartAppend([]byte(rec)))
	}
	for i, wait := range waits {
		if err := wait(ctx); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if err := st.StartAppend(make([]byte, st.StartMax()+1))(ctx); ns.Errno(err) != syscall.EINVAL {
		t.Fatalf("an append of more than one packet: %v, want EINVAL", err)
	}
	if cur := current(t, b); cur.Err() != nil {
		t.Fatalf("the refused append ended the connection: %v", cur.Err())
	}
	af.Close()
	if got, _ := os.ReadFile(p); string(got) != want.String() {
		t.Fatalf("the server's file:\n%s\nwant:\n%s", got, want.String())
	}
}
