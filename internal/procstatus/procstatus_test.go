package procstatus

import (
	"os"
	"slices"
	"testing"
)

func TestSelf(t *testing.T) {
	s, err := Read(uint32(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	if uid, ok := s.ID("Uid", 0); !ok || uid != uint32(os.Getuid()) {
		t.Errorf("Uid = %d, %v; want %d", uid, ok, os.Getuid())
	}
	if gid, ok := s.ID("Gid", 3); !ok || gid != uint32(os.Getgid()) {
		t.Errorf("filesystem Gid = %d, %v; want %d", gid, ok, os.Getgid())
	}
	groups, _ := os.Getgroups()
	for _, g := range groups {
		if !slices.Contains(s.Groups(), uint32(g)) {
			t.Errorf("group %d missing from %v", g, s.Groups())
		}
	}
	if self, _ := Read(0); string(self.Line("Name")) != string(s.Line("Name")) {
		t.Errorf("Read(0) is not this process")
	}
}

func TestLines(t *testing.T) {
	s := Status("Name:\tx\nUid:\t1\t2\t3\t4\nGroups:\t10 20 \nCapEff:\t0000000000001000\n")
	if got := s.Field("Uid", 3); got != "4" {
		t.Errorf("Uid field 3 = %q", got)
	}
	if got := s.Field("Uid", 4); got != "" {
		t.Errorf("Uid field 4 = %q", got)
	}
	if got := s.Line("Gid"); got != nil {
		t.Errorf("missing line = %q", got)
	}
	if got := s.Groups(); !slices.Equal(got, []uint32{10, 20}) {
		t.Errorf("Groups = %v", got)
	}
	if !s.HasCap(12) || s.HasCap(10) {
		t.Errorf("HasCap: CapEff 0x1000 has 12 only")
	}
	if got := s.Line("Name"); string(got) != "x" {
		t.Errorf("first line = %q", got)
	}
}
