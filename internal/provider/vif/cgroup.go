package vif

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroup2Mount is where the unified hierarchy is mounted: /sys/fs/cgroup
// on a cgroup-v2 system, /sys/fs/cgroup/unified on a hybrid one.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER
		fields := strings.Fields(s.Text())
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 && fields[3] == "/" {
				return fields[4], nil
			}
		}
	}
	return "", errors.New("no cgroup2 (unified) hierarchy is mounted")
}

// readFile reads a small file of /proc or cgroupfs with plain system
// calls: os.ReadFile would register the descriptor with Go's poller
// (cgroupfs files are pollable) and stat it first, which costs more than
// the read itself here, and these reads are on every attach and detach.
func readFile(name string) ([]byte, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// writeFile writes b to an existing file of cgroupfs in one write(2), as
// readFile reads.
func writeFile(name string, b []byte) error {
	fd, err := unix.Open(name, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	for {
		_, err = unix.Write(fd, b)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: name, Err: err}
	}
	return nil
}

// processCgroup is pid's cgroup in the unified hierarchy ("/a/b").
func processCgroup(pid int) (string, error) {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return rest, nil
		}
	}
	return "", fmt.Errorf("process %d is in no unified cgroup", pid)
}

// cgroupProcs lists the pids in the cgroup directory dir.
func cgroupProcs(dir string) []int {
	b, err := readFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// moveProcess puts pid (its whole thread group) into the cgroup dir.
func moveProcess(dir string, pid int) error {
	err := writeFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)))
	if errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("no process %d", pid)
	}
	return err
}

// cgroupID is the id bpf_skb_cgroup_id reports: the directory's inode.
func cgroupID(dir string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// removeTree empties the cgroup tree at dir — its processes go to the
// cgroup `to` — and removes it, deepest first.
func removeTree(dir, to string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name()), to); err != nil {
				return err
			}
		}
	}
	return removeCgroup(dir, to)
}

// removeCgroup moves dir's processes to `to` and removes dir. A dying
// process may hold it for a moment after it has left cgroup.procs.
func removeCgroup(dir, to string) error {
	var err error
	for try := 0; try < 50; try++ {
		for _, pid := range cgroupProcs(dir) {
			_ = moveProcess(to, pid)
		}
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

// netnsID names the daemon's network namespace (the inode of
// /proc/self/ns/net): wirefs's state on a machine is per namespace.
func netnsID() (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}
