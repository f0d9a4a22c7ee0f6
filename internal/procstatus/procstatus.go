// Package procstatus reads the lines of /proc/PID/status that wirefs's
// providers decide by: who a process is (Uid, Gid, Groups) and what it
// may do (CapEff).
package procstatus

import (
	"bytes"
	"os"
	"strconv"
)

// Status is the text of one /proc/PID/status.
type Status []byte

// Read reads the status of process pid (0: this process).
func Read(pid uint32) (Status, error) {
	p := "/proc/self/status"
	if pid != 0 {
		p = "/proc/" + strconv.FormatUint(uint64(pid), 10) + "/status"
	}
	return os.ReadFile(p)
}

// Line is the value of the "Name:\t..." line, nil if there is none.
func (s Status) Line(name string) []byte {
	i := bytes.Index(append([]byte{'\n'}, s...), []byte("\n"+name+":"))
	if i < 0 {
		return nil
	}
	line := s[i+len(name)+1:]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	return bytes.TrimSpace(line)
}

// Field is the i-th word of a line ("Uid" and "Gid": real, effective,
// saved, filesystem), "" if there is none.
func (s Status) Field(name string, i int) string {
	f := bytes.Fields(s.Line(name))
	if i >= len(f) {
		return ""
	}
	return string(f[i])
}

// ID is the i-th word of a line as a number (a uid, a gid).
func (s Status) ID(name string, i int) (uint32, bool) {
	v, err := strconv.ParseUint(s.Field(name, i), 10, 32)
	return uint32(v), err == nil
}

// Groups are the supplementary groups.
func (s Status) Groups() []uint32 {
	var gs []uint32
	for _, g := range bytes.Fields(s.Line("Groups")) {
		if v, err := strconv.ParseUint(string(g), 10, 32); err == nil {
			gs = append(gs, uint32(v))
		}
	}
	return gs
}

// HasCap reports whether capability number bit (unix.CAP_*) is in the
// effective set.
func (s Status) HasCap(bit uint) bool {
	caps, err := strconv.ParseUint(string(s.Line("CapEff")), 16, 64)
	return err == nil && caps&(1<<bit) != 0
}
