package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"
)

// span is the byte range [off, end).
type span struct{ off, end int64 }

// ranges is a set of byte ranges: sorted, non-empty, neither overlapping
// nor touching (touching spans are merged).
type ranges []span

// add includes [off, end).
func (r ranges) add(off, end int64) ranges {
	if off >= end {
		return r
	}
	out := make(ranges, 0, len(r)+1)
	i := 0
	for ; i < len(r) && r[i].end < off; i++ {
		out = append(out, r[i])
	}
	for ; i < len(r) && r[i].off <= end; i++ {
		off, end = min(off, r[i].off), max(end, r[i].end)
	}
	out = append(out, span{off, end})
	return append(out, r[i:]...)
}

// cut removes everything at or beyond n (a truncation to n bytes).
func (r ranges) cut(n int64) ranges {
	out := ranges{}
	for _, s := range r {
		if s.off >= n {
			break
		}
		out = append(out, span{s.off, min(s.end, n)})
	}
	return out
}

// gap returns the first part of [off, end) not in the set.
func (r ranges) gap(off, end int64) (span, bool) {
	for _, s := range r {
		if s.end <= off {
			continue
		}
		if s.off > off {
			return span{off, min(end, s.off)}, off < end
		}
		off = s.end
	}
	return span{off, end}, off < end
}

// nextStart is the start of the first span beginning after off, or max
// int64: where a fetch from off should stop so as not to fetch again.
func (r ranges) nextStart(off int64) int64 {
	for _, s := range r {
		if s.off > off {
			return s.off
		}
	}
	return 1<<63 - 1
}

func (r ranges) bytes() int64 {
	var n int64
	for _, s := range r {
		n += s.end - s.off
	}
	return n
}

// record is the metadata of each data file: a clean record is the
// extended attribute recordXattr of ID.data (replaced atomically by the
// kernel, no fsync needed); a dirty one is the file ID.meta, replaced
// atomically (temporary file + rename) and durably. It is JSON so that a
// person can read it when something went wrong.
type record struct {
	Path string `json:"path"` // remote path
	Mode uint32 `json:"mode"` // os.FileMode
	// Dirty: the data file holds changes the server does not have yet;
	// its length is the file's size, and it is complete unless Base is
	// set.
	Dirty bool `json:"dirty,omitempty"`
	// Base, when set, is the length of the server's file that the
	// changes of a dirty file append to: only bytes from Base on are
	// changes, and what Ranges lacks below it is the server's.
	Base int64 `json:"base,omitempty"`
	// Size, Mtime and ETag identify the server's version the clean data
	// came from.
	Size   int64      `json:"size"`
	Mtime  time.Time  `json:"mtime"`
	ETag   string     `json:"etag,omitempty"`
	Ranges [][2]int64 `json:"ranges"` // bytes present in the data file
	// Boot is the kernel's boot id when the record was written. Clean
	// data is written without fsync, so after a reboot its bytes may be
	// missing even though the record lists them: such records are
	// discarded. Dirty records are always fsynced.
	Boot string `json:"boot"`
}

func (r *record) encode() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // a record always marshals
	}
	return b
}

// decodeRecord parses and checks a metadata record.
func decodeRecord(b []byte) (record, ranges, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return r, nil, err
	}
	if r.Path == "" || r.Path[0] != '/' || path.Clean(r.Path) != r.Path {
		return r, nil, fmt.Errorf("bad path %q", r.Path)
	}
	if r.Size < -1 {
		return r, nil, fmt.Errorf("bad size %d", r.Size)
	}
	var rs ranges
	last := int64(-1)
	for _, s := range r.Ranges {
		if s[0] < 0 || s[0] >= s[1] || s[0] <= last {
			return r, nil, errors.New("ranges are not sorted and disjoint")
		}
		rs = append(rs, span{s[0], s[1]})
		last = s[1]
	}
	return r, rs, nil
}

func encodeRanges(rs ranges) [][2]int64 {
	out := make([][2]int64, len(rs))
	for i, s := range rs {
		out[i] = [2]int64{s.off, s.end}
	}
	return out
}

// writeAtomic replaces name with data so that a crash leaves either the old
// or the new contents. durable also waits until both the file and its
// directory entry are on disk.
func writeAtomic(name string, data []byte, durable bool) error {
	f, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	if durable {
		return syncDir(filepath.Dir(name))
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// bootID identifies the running kernel; "" when it cannot be read (then
// clean records are trusted across reboots).
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return string(b)
}

// recordXattr is the attribute of a data file holding its clean record.
const recordXattr = "user.wirefs.record"

func setXattr(name string, data []byte) error {
	if err := syscall.Setxattr(name, recordXattr, data, 0); err != nil {
		return &os.PathError{Op: "setxattr", Path: name, Err: err}
	}
	return nil
}

func readXattr(name string) ([]byte, error) {
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Getxattr(name, recordXattr, buf)
		if errors.Is(err, syscall.ERANGE) && len(buf) < 1<<20 {
			buf = make([]byte, 4*len(buf))
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "getxattr", Path: name, Err: err}
		}
		return buf[:n], nil
	}
}
