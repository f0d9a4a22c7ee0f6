package cache

import (
	"context"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// Servers returns the directory of servers of one protocol, mounted at
// e.g. "sftp/": looking up "me@host:22" dials it once (concurrent lookups
// share the dial; a failed dial is reported with its errno and tried again
// at the next lookup) and returns Root(proto+"://"+name, ...). A slow
// server holds up only the lookups of its own name. ReadDir lists the
// sessions already open.
func (c *Cache) Servers(proto string, dial remote.Dialer, ro remote.Options, o Options) ns.Dir {
	return &servers{c: c, proto: proto, dial: dial, ro: ro, o: o, sessions: map[string]*session{}}
}

type servers struct {
	c     *Cache
	proto string
	dial  remote.Dialer
	ro    remote.Options
	o     Options

	mu       sync.Mutex
	sessions map[string]*session // dialed or being dialed
}

type session struct {
	done chan struct{}
	root ns.Dir
	err  error
}

func (s *servers) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o555, Mtime: s.c.since, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

func (s *servers) Lookup(ctx context.Context, name string) (ns.Node, error) {
	// Names starting with a dot are what file managers and shells probe
	// for (.hidden, .git); they are never hosts.
	if checkName(name) != nil || strings.HasPrefix(name, ".") {
		return nil, ns.Errorf(syscall.ENOENT, "%s/%s: not a server name", s.proto, name)
	}
	s.mu.Lock()
	se := s.sessions[name]
	if se == nil {
		se = &session{done: make(chan struct{})}
		s.sessions[name] = se
		if !s.c.spawn(func() { s.connect(name, se) }) {
			delete(s.sessions, name)
			s.mu.Unlock()
			return nil, ns.Errorf(syscall.EIO, "the cache is closed")
		}
	}
	s.mu.Unlock()
	select {
	case <-se.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if se.err != nil {
		return nil, se.err
	}
	return se.root, nil
}

// connect dials name for everyone waiting; a failure is forgotten so that
// the next lookup tries again.
func (s *servers) connect(name string, se *session) {
	ctx := s.c.ctx
	if s.ro.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.ro.ConnectTimeout)
		defer cancel()
	}
	b, err := s.dial(ctx, name, s.ro)
	if err != nil {
		s.c.log.Warn("cache: cannot connect", "server", s.proto+"://"+name, "err", err)
		se.err = err
		s.mu.Lock()
		if s.sessions[name] == se {
			delete(s.sessions, name)
		}
		s.mu.Unlock()
	} else {
		se.root = s.c.Root(s.proto+"://"+name, b, s.o.forServer(name))
	}
	close(se.done)
}

func (s *servers) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	a, _ := s.Attr(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ns.DirEntry
	for name, se := range s.sessions {
		select {
		case <-se.done:
			if se.err == nil {
				out = append(out, ns.DirEntry{Name: name, Attr: a})
			}
		default:
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CacheTTL: the directory itself never changes (its listing, which grows
// with every dial, is read afresh anyway), so a kernel may keep its entry:
// every path below it walks through it.
func (s *servers) CacheTTL() time.Duration { return time.Minute }

// spawn runs fn in a goroutine that Close waits for; false after Close.
func (c *Cache) spawn(fn func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
	return true
}

// forServer is o with the per-file keys of server name, as server paths.
func (o Options) forServer(name string) Options {
	files := map[string]FileOptions{}
	for k, fo := range o.Files {
		if p, ok := strings.CutPrefix(k, name+"/"); ok {
			files["/"+p] = fo
		}
	}
	o.Files = files
	return o
}
