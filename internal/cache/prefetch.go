package cache

import (
	"context"
	"errors"
	"os"
	"path"
	"sort"
	"sync"
	"time"

	"wirefs/internal/remote"
)

// Prefetch: latency hiding that is bounded and fair. At 10-100 ms from
// the server a cold `grep -r` or `ls -lR` costs round trips one after
// another; the cache makes them in parallel ahead of the program:
//
//   - siblings: once a program that listed a directory reads one of its
//     files (a miss), the directory's other small files are fetched
//     ahead, in listing order from the one being read: files of at most
//     PrefetchFile bytes, at most PrefetchDir bytes per listing. A
//     listing alone fetches no contents.
//   - readdir-ahead: when a program lists a directory, its
//     subdirectories (at most ReaddirAhead) are listed ahead.
//
// Both are background work under one per-server gate: at most
// PrefetchRequests background requests in flight, and none starts while
// the program's own requests fill the gate or while a program waits for
// the answer to a question about names (ask: a stat, a listing of its
// own); a program's requests never wait for it (they never queue behind
// prefetch in the cache; a protocol that queues requests itself sees
// remote.Background). Prefetch stops when the cache's clean data is near
// its limit, so it never evicts what was read before it (dirty data is
// never evicted anyway).

// askLinger is how long after a program's stat was answered the gate
// stays shut to background requests. A program that asks again at once
// (a path walked name by name, a loop of stats) then finds the server,
// the link and the daemon quiet for its next question too; without it,
// each answer let through a burst of up to PrefetchRequests background
// requests whose answers came back during the next question's round
// trip (a stat during a cold grep -r at 10 ms took +0.9 ms more than on
// an idle mount, +0.6 with it; tcpdump of the SSH streams put the time
// in the link and the server, not in the daemon). It is short beside a
// round trip, so a program that asks now and then costs prefetch little.
// Not after a program's own listing: its next question is most likely
// the listing of a subdirectory, which the listings ahead are there to
// answer (held after each listing, they never started before ls -lR
// asked for the next one: ls -lR cold took a fifth longer).
const askLinger = 2 * time.Millisecond

// gate is a server's request limiter with two priorities.
type gate struct {
	mu     sync.Mutex
	cap    int           // background requests start only while busy < cap
	busy   int           // requests in flight: foreground and background
	asking int           // a program's questions in flight (ask): no background request starts
	until  time.Time     // nor before then: a program's stat was answered just now (askLinger)
	held   bool          // no question is in flight, and it is not yet until
	heldBy int           // which timer ends held (a question asked meanwhile starts another)
	wake   chan struct{} // closed and replaced when busy, asking or held drops
	work   *working      // told when background requests start and end
}

func newGate(n int, work *working) *gate {
	return &gate{cap: n, wake: make(chan struct{}), work: work}
}

// foreground counts a request a program waits for; it never waits.
func (g *gate) foreground() (done func()) {
	g.mu.Lock()
	g.busy++
	g.mu.Unlock()
	return g.done
}

// ask counts a program's question about names in flight (a stat, a
// listing it started): it never waits, and no background request starts
// until every question is answered and linger has passed since each
// answer (askLinger after a stat, 0 after a listing). Why: a prefetching daemon handles
// the answers of up to PrefetchRequests fetches (reads them, writes the
// data files, records them) in the same process as the program's
// answer, on one P (cmd/wirefs/procs.go): a trace of a stat during a
// cold grep -r at 10 ms found its goroutines runnable 2-6 ms per stat
// behind that work, and its answers read late; FTP and 9P stats take
// three round trips each (LIST over a data connection; walk, getattr,
// clunk), stats during prefetch took +6 to +15 ms. Paused, the fetches
// in flight drain in the stat's first round trip and the later ones find
// the daemon idle. A program's reads do not pause prefetch: they are
// what it serves (a cold grep -r reads the files fetched ahead, and
// pausing at its reads slowed it by a sixth over 9P).
func (g *gate) ask(linger time.Duration) (done func()) {
	g.mu.Lock()
	g.busy++
	g.asking++
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.asking--
		now := time.Now()
		if end := now.Add(linger); linger > 0 && end.After(g.until) {
			g.until = end
		}
		if g.asking == 0 {
			if g.held = now.Before(g.until); g.held {
				g.heldBy++
				by := g.heldBy
				time.AfterFunc(g.until.Sub(now), func() { g.release(by) })
			}
		}
		g.mu.Unlock()
		g.done()
	}
}

// release ends the hold by, unless a later answer started another.
func (g *gate) release(by int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.heldBy == by {
		g.held = false
		g.wakeLocked()
	}
}

// quietLocked: no program's question is in flight or just answered.
func (g *gate) quietLocked() bool { return g.asking == 0 && !g.held }

// background waits for room for a background request, or ctx's end.
func (g *gate) background(ctx context.Context) (done func(), err error) {
	err = g.wait(ctx, func() bool {
		if g.busy < g.cap && g.quietLocked() {
			g.busy++
			return true
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	g.work.note(1)
	return func() {
		g.done()
		g.work.note(-1)
	}, nil
}

// quiet waits until no program's question is in flight or just
// answered, or ctx's end: the work for prefetch outside the gate
// (spares.go) waits there.
func (g *gate) quiet(ctx context.Context) error {
	return g.wait(ctx, g.quietLocked)
}

// wait waits until ok (called with g.mu held) is true, or ctx's end.
func (g *gate) wait(ctx context.Context, ok func() bool) error {
	for {
		g.mu.Lock()
		if ok() {
			g.mu.Unlock()
			return nil
		}
		wake := g.wake
		g.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (g *gate) done() {
	g.mu.Lock()
	g.busy--
	g.wakeLocked()
	g.mu.Unlock()
}

func (g *gate) wakeLocked() {
	close(g.wake)
	g.wake = make(chan struct{})
}

// errTreeClosed ends a prefetch whose tree closed meanwhile.
var errTreeClosed = errors.New("the session is closed")

// ahead is one entry of a listing to prefetch, learnt at at in epoch.
type ahead struct {
	path  string
	info  remote.Info
	at    time.Time
	epoch int64
}

// shownToProgram notes that a program listed d (ReadDir) and lists its
// subdirectories ahead.
func (d *dir) shownToProgram(names map[string]remote.Info) {
	t := d.t
	d.mu.Lock()
	d.shown = d.listed
	p, at, epoch := d.path, d.listed, d.listEpoch
	walked := d.aheadFor == d.listed // its files came ahead of the program (nextAhead)
	d.mu.Unlock()
	if walked && t.prefetchesFiles() {
		if todo := t.nextAhead(d); len(todo) > 0 {
			t.spawn(func() { t.fetchAhead(todo) })
		}
	}
	if t.o.PrefetchRequests == 0 || t.o.ReaddirAhead == 0 {
		return
	}
	var subs []*dir
	for _, e := range sortedEntries(names) {
		if len(subs) == t.o.ReaddirAhead {
			break
		}
		if !e.info.Mode.IsDir() || e.info.Mode&os.ModeSymlink != 0 {
			continue
		}
		sd, ok := t.node(path.Join(p, e.info.Name), e.info, at, epoch).(*dir)
		if ok && sd.queueAhead() {
			subs = append(subs, sd)
		}
	}
	if len(subs) == 0 {
		return
	}
	if !t.spawn(func() { t.listAhead(subs) }) {
		for _, sd := range subs {
			sd.unqueue()
		}
	}
}

// queueAhead marks d to be listed ahead; false when its listing is
// fresh, being fetched or queued already.
func (d *dir) queueAhead() bool {
	t := d.t
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.queued || d.listing != nil || t.fresh(d.listed, d.listEpoch, t.o.DirTTL) {
		return false
	}
	d.queued = true
	return true
}

func (d *dir) unqueue() {
	d.mu.Lock()
	d.queued = false
	d.mu.Unlock()
}

// listAhead lists dirs in the background, each when the gate has room.
func (t *tree) listAhead(dirs []*dir) {
	ctx := remote.Background(t.ctx)
	for i, sd := range dirs {
		done, err := t.gate.background(ctx)
		if err == nil && !t.spawn(func() {
			defer done()
			defer sd.unqueue()
			sd.list(ctx)
		}) {
			done()
			err = errTreeClosed
		}
		if err != nil {
			for _, rest := range dirs[i:] {
				rest.unqueue()
			}
			return
		}
	}
}

// siblingsAhead is called when a program misses in f: if a program
// listed f's directory, the directory's other small files are fetched
// ahead, once per listing, and then those of the next directory
// (nextAhead).
func (t *tree) siblingsAhead(f *file) {
	if !t.prefetchesFiles() {
		return
	}
	p := f.remotePath()
	d := t.parentOf(p)
	if d == nil {
		return
	}
	d.mu.Lock()
	shown := !d.shown.IsZero() && d.shown == d.listed
	d.mu.Unlock()
	if !shown {
		return
	}
	todo := d.filesAhead(path.Base(p))
	if len(todo) == 0 {
		return
	}
	todo = append(todo, t.nextAhead(d)...)
	t.spawn(func() { t.fetchAhead(todo) })
}

func (t *tree) prefetchesFiles() bool {
	return t.o.PrefetchRequests > 0 && t.o.PrefetchDir > 0 && t.o.PrefetchFile > 0
}

// filesAhead returns the small files of d's fresh listing to fetch ahead,
// in listing order after the file named after (where the program goes
// next; "": from the first), up to PrefetchDir bytes; none when they were
// taken for this listing already.
func (d *dir) filesAhead(after string) []ahead {
	t := d.t
	d.mu.Lock()
	if d.names == nil || d.aheadFor == d.listed || !t.fresh(d.listed, d.listEpoch, t.o.DirTTL) {
		d.mu.Unlock()
		return nil
	}
	d.aheadFor = d.listed
	dp, at, epoch := d.path, d.listed, d.listEpoch
	entries := sortedEntries(d.names)
	d.mu.Unlock()

	first := sort.Search(len(entries), func(i int) bool { return entries[i].info.Name > after })
	entries = append(entries[first:], entries[:first]...)
	var todo []ahead
	budget := t.o.PrefetchDir
	for _, e := range entries {
		size := e.info.Size
		if !e.info.Mode.IsRegular() || size <= 0 || size > t.o.PrefetchFile || e.info.Name == after {
			continue
		}
		if size > budget {
			break
		}
		budget -= size
		todo = append(todo, ahead{path.Join(dp, e.info.Name), e.info, at, epoch})
	}
	return todo
}

// nextAhead returns the small files to fetch of the directory after d in
// the listing of d's parent, when a program listed that parent: a program
// that listed a directory and reads in its subdirectory d walks it (grep
// -r, cp -r, tar), and finds the next subdirectory's files there when it
// gets to it, instead of waiting at each for the first file and then for
// the prefetch to catch up. Only one directory ahead: when the program
// lists it, the one after it follows (shownToProgram). Its listing must be
// there already (listed ahead); none is asked for here.
func (t *tree) nextAhead(d *dir) []ahead {
	dp := d.remotePath()
	if dp == "/" {
		return nil
	}
	pd := t.parentOf(dp)
	if pd == nil {
		return nil
	}
	pd.mu.Lock()
	if pd.shown.IsZero() || pd.shown != pd.listed || !t.fresh(pd.listed, pd.listEpoch, t.o.DirTTL) {
		pd.mu.Unlock()
		return nil
	}
	pp, entries := pd.path, sortedEntries(pd.names)
	pd.mu.Unlock()
	me := path.Base(dp)
	for _, e := range entries {
		if e.info.Name <= me || !e.info.Mode.IsDir() || e.info.Mode&os.ModeSymlink != 0 {
			continue
		}
		t.mu.Lock()
		next := t.dirs[path.Join(pp, e.info.Name)]
		t.mu.Unlock()
		if next == nil {
			return nil
		}
		return next.filesAhead("")
	}
	return nil
}

// fetchAhead fetches the files of todo whole in the background, each
// when the gate has room, until the cache is near its limit.
func (t *tree) fetchAhead(todo []ahead) {
	ctx := remote.Background(t.ctx)
	for _, a := range todo {
		f, ok := t.node(a.path, a.info, a.at, a.epoch).(*file)
		if !ok || !f.wantsAhead() {
			continue
		}
		done, err := t.gate.background(ctx)
		if err != nil {
			return
		}
		size := a.info.Size
		if !t.c.reserve(size) {
			done()
			t.c.log.Debug("cache: near its size limit; no more prefetch", "server", t.key)
			return
		}
		// Only a spare, made with the CPU nothing else wants (spares.go).
		id, err := t.spareFor(ctx)
		if err != nil {
			t.c.reserve(-size)
			done()
			return
		}
		if !f.useSpare(id) {
			t.putSpare(id)
		}
		f.holdReservation(size)
		if !t.spawn(func() {
			defer done()
			defer f.dropReservation()
			f.fetchWhole(ctx)
		}) {
			f.dropReservation()
			done()
			return
		}
	}
}

// holdReservation gives f the n bytes reserved for its prefetch: they go
// from the reservation to used as f's bytes are counted (settleLocked).
func (f *file) holdReservation(n int64) {
	f.mu.Lock()
	f.reserved += n
	f.mu.Unlock()
}

// dropReservation gives back what is left of f's reservation once its
// prefetch ended (the bytes that did not come).
func (f *file) dropReservation() {
	f.mu.Lock()
	n := f.reserved
	f.reserved = 0
	f.mu.Unlock()
	f.c.reserve(-n)
}

// useSpare makes the spare id f's data file, unless f has one.
func (f *file) useSpare(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.data != nil || f.id != "" || f.dir != f.t.dir {
		return false
	}
	f.id = id
	return true
}

// wantsAhead reports whether f is worth fetching ahead: clean, of a
// known size, not present, nobody fetching it.
func (f *file) wantsAhead() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.dirty && !f.removed && f.info.Size > 0 && len(f.fetches) == 0 && !f.completeLocked()
}

// fetchWhole fetches what is missing of f (a background fetch: its
// failure is for a program's read to find and report).
func (f *file) fetchWhole(ctx context.Context) {
	f.mu.Lock()
	size := f.lengthLocked()
	f.mu.Unlock()
	if size > 0 {
		if err := f.await(ctx, 0, size, nil, true); err != nil && ctx.Err() == nil {
			f.t.c.log.Debug("cache: prefetch failed", "server", f.t.key, "path", f.remotePath(), "err", err)
		}
	}
	f.settle() // count the bytes in used before their reservation goes
}

// reserve sets n bytes aside for a prefetch, unless the clean data and
// the prefetches in flight would then pass nine tenths of the cache's
// limit: prefetch stops there. A negative n gives back what a prefetch
// did not move into used (dropReservation).
func (c *Cache) reserve(n int64) bool {
	c.lruMu.Lock()
	defer c.lruMu.Unlock()
	if n > 0 && c.used+c.reserved+n > c.limit-c.limit/10 {
		return false
	}
	c.reserved += n
	return true
}

func sortedEntries(names map[string]remote.Info) []ahead {
	out := make([]ahead, 0, len(names))
	for name, info := range names {
		info.Name = name
		out = append(out, ahead{info: info})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].info.Name < out[j].info.Name })
	return out
}
