package catch

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

const (
	pageSize = 4096
	pathMax  = 4096
)

// readRemote reads len(buf) bytes at addr of process pid with
// process_vm_readv, splitting the remote range at page boundaries so that a
// string ending just before an unmapped page still reads. It returns how
// many bytes it got.
func readRemote(pid uint32, addr uint64, buf []byte) (int, error) {
	return processVM(sysProcessVMReadv, pid, addr, buf)
}

// writeRemote writes buf at addr of process pid with process_vm_writev
// and returns how many bytes it wrote.
func writeRemote(pid uint32, addr uint64, buf []byte) (int, error) {
	return processVM(sysProcessVMWritev, pid, addr, buf)
}

// processVM is process_vm_readv or process_vm_writev (nr) of buf and the
// range at addr of process pid, split at page boundaries (up to three
// pieces: buf is at most a page).
func processVM(nr uintptr, pid uint32, addr uint64, buf []byte) (int, error) {
	// Remote addresses are not Go pointers: an iovec of plain integers.
	var remote [3]struct{ base, len uint64 }
	n := 0
	for off := 0; off < len(buf) && n < len(remote); n++ {
		a := addr + uint64(off)
		chunk := min(pageSize-int(a%pageSize), len(buf)-off)
		remote[n].base, remote[n].len = a, uint64(chunk)
		off += chunk
	}
	local := syscall.Iovec{Base: &buf[0]}
	local.SetLen(len(buf))
	r, _, e := syscall.Syscall6(nr, uintptr(pid),
		uintptr(unsafe.Pointer(&local)), 1,
		uintptr(unsafe.Pointer(&remote[0])), uintptr(n), 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// readPath reads the NUL-terminated path at addr in process pid.
func readPath(pid uint32, addr uint64) (string, error) {
	var small [smallPath]byte
	p, err := readPathInto(pid, addr, &small)
	return string(p), err
}

// smallPath is the size of the first read of a path: nearly every path
// fits, and a stack buffer of it costs no allocation on the hot path.
const smallPath = 256

// readPathInto reads the NUL-terminated path at addr in process pid into
// small, or into a new buffer when it is longer (a second read).
func readPathInto(pid uint32, addr uint64, small *[smallPath]byte) ([]byte, error) {
	if addr == 0 {
		return nil, syscall.EFAULT
	}
	n, err := readRemote(pid, addr, small[:])
	if err != nil {
		return nil, err
	}
	if i := bytes.IndexByte(small[:n], 0); i >= 0 {
		return small[:i], nil
	}
	if n < len(small) {
		return nil, syscall.EFAULT
	}
	big := make([]byte, pathMax)
	n, err = readRemote(pid, addr, big)
	if err != nil {
		return nil, err
	}
	if i := bytes.IndexByte(big[:n], 0); i >= 0 {
		return big[:i], nil
	}
	if n < len(big) {
		return nil, syscall.EFAULT
	}
	return nil, syscall.ENAMETOOLONG
}

// procPath is /proc/TID/rest; thread ids have (unlisted) /proc entries.
func procPath(tid uint32, rest string) string {
	return "/proc/" + strconv.FormatUint(uint64(tid), 10) + "/" + rest
}

// baseDir is the directory a relative path of thread tid starts from:
// its working directory, or the directory open as dirfd.
func baseDir(tid uint32, dirfd int32) (string, error) {
	if dirfd == atFDCWD {
		return os.Readlink(procPath(tid, "cwd"))
	}
	if dirfd < 0 {
		return "", syscall.EBADF
	}
	return os.Readlink(procPath(tid, "fd/"+strconv.Itoa(int(dirfd))))
}

const atFDCWD = -100

// umaskOf reads the umask of thread tid (Linux 4.7).
func umaskOf(tid uint32) (int, error) {
	var buf [1024]byte
	b, err := procStatus(tid, &buf)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(statusField(b, "Umask"))), 8, 32)
	if err != nil {
		return 0, fmt.Errorf("no umask in /proc/%d/status: %w", tid, err)
	}
	return int(v), nil
}

// procStatus reads the start of /proc/TID/status into buf.
func procStatus(tid uint32, buf *[1024]byte) ([]byte, error) {
	fd, err := syscall.Open(procPath(tid, "status"), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	n, err := syscall.Read(fd, buf[:])
	syscall.Close(fd)
	if err != nil {
		return nil, err
	}
	return buf[:max(n, 0)], nil
}

// statusField returns the value of the line "NAME:" of a status file.
func statusField(b []byte, name string) []byte {
	i := bytes.Index(b, []byte("\n"+name+":"))
	if i < 0 {
		return nil
	}
	line := b[i+len(name)+2:]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	return line
}
