package cache

import "time"

// Clean records written late. Around every open/append/close cycle a
// file is made dirty and, by its write-back, clean again; recording both
// cost two extended-attribute writes, ~120 µs together on ext4 here, the
// largest local cost of a cycle. With T_write = 0 a file made dirty has
// no record (recordDirtyLocked); made clean again, it gets its record
// recordDelay after that unless it changes first, and at the latest when
// its tree closes. A daemon killed meanwhile leaves the data file without
// a record, which the next start removes: the file is fetched again, a
// cache miss, never stale data.

const recordDelay = time.Second

// recordLaterLocked (f.mu held) writes f's record recordDelay from now.
func (f *file) recordLaterLocked() {
	t := f.t
	t.recMu.Lock()
	defer t.recMu.Unlock()
	if tm := t.records[f]; tm != nil {
		tm.Reset(recordDelay)
		return
	}
	if t.records == nil {
		t.records = map[*file]*time.Timer{}
	}
	t.records[f] = time.AfterFunc(recordDelay, func() {
		if t.enter() {
			defer t.wg.Done()
			f.recordNow()
		}
	})
}

// recordNow writes f's record if it still has none and is clean.
func (f *file) recordNow() {
	t := f.t
	t.recMu.Lock()
	if tm := t.records[f]; tm != nil {
		tm.Stop()
		delete(t.records, f)
	}
	t.recMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirty || !f.unrecorded || f.removed {
		return
	}
	f.unrecorded = false
	if err := f.saveRecordLocked(); err != nil {
		f.unrecorded = true
		t.c.log.Warn("cache: cannot save a record", "path", f.path, "err", err)
	}
}

// recordAll writes the records still to be written (the tree closes).
func (t *tree) recordAll() {
	t.recMu.Lock()
	files := make([]*file, 0, len(t.records))
	for f := range t.records {
		files = append(files, f)
	}
	t.recMu.Unlock()
	for _, f := range files {
		f.recordNow()
	}
}
