package cache

import (
	"fmt"
	"io"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// WriteStatus writes one line per file whose changes the server does not
// have yet, for .wirefs/writeback:
//
//	SERVER PATH BYTES STATE [ERRNO WHY]
//
// STATE is "pending" (waiting for T_write or the close that stores it),
// "storing", "retrying" (the last attempt failed and another is
// scheduled) or "refused" (the server refused it for good: ENOSPC,
// EACCES...; it is tried again when the file is written or synced, and
// stays in the cache until then or until it is removed). PATH is quoted
// as a Go string when it holds a space or a control character.
func (c *Cache) WriteStatus(w io.Writer) error {
	c.mu.Lock()
	trees := make([]*tree, 0, len(c.trees))
	for _, t := range c.trees {
		trees = append(trees, t)
	}
	c.mu.Unlock()
	var lines []string
	for _, t := range trees {
		for _, f := range t.dirtyFiles() {
			f.mu.Lock()
			state := "pending"
			switch {
			case f.storing != nil:
				state = "storing"
			case f.refused:
				state = "refused"
			case f.failure != nil:
				state = "retrying"
			}
			line := fmt.Sprintf("%s %s %d %s", t.key, quoteField(f.path), f.size, state)
			if f.failure != nil && f.storing == nil {
				line += fmt.Sprintf(" %s %s", unix.ErrnoName(ns.Errno(f.failure)), f.failure)
			}
			f.mu.Unlock()
			lines = append(lines, line)
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

func quoteField(s string) string {
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}
