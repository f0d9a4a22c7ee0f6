// Package ftp is the FTP and explicit-FTPS backend of remote files
// (remote.Backend and remote.Writer) over github.com/jlaffaye/ftp.
//
// A session keeps a pool of logged-in control connections (pool.go):
// FTP carries one transfer per connection, so parallel reads need several,
// and logging in costs several round trips, so they are kept between
// operations (with NOOPs) as Ufo does.
//
// Paths are from the login directory: "/" is where the server puts the
// user after login (its PWD), "/pub/x" is PWD/pub/x.
//
// Which commands, and why:
//   - Data connections: EPSV, then PASV (jlaffaye falls back per
//     connection when EPSV is refused; when an EPSV port cannot be
//     reached, new connections use PASV only).
//   - Listings: MLSD when the server lists MLST in FEAT, else "STAT -a"
//     (LIST's lines in the reply, on the control connection: one round
//     trip, no data connection), else "LIST -a" (without -a, vsftpd and
//     others hide dot files). Permission bits come from the raw lines
//     (listing.go).
//   - Stat: the parent's listing, for every server. vsftpd has no MLST;
//     SIZE+MDTM would be cheaper but give no permission bits and a
//     different mtime precision than the listing, and a cache that
//     compares a listed mtime with a stat'ed one would then see every file
//     change. The cost is one listing per Stat; List answers whole
//     directories at once.
//   - Reads: RETR with REST for the offset (pconn.retr); an early Close
//     closes the data connection and waits at most abortWait for the
//     server's reply.
//   - Store: STOR to a temporary name, then RNFR/RNTO over the name (see
//     Store for the servers that need otherwise), the old file's mode from
//     STAT PATH (its ls line on the control connection) meanwhile; APPE for appends; SITE
//     CHMOD for modes; MKD, RMD, DELE, RNFR/RNTO.
//   - Round trips: a store sends EPSV with STOR, and its data without
//     waiting for the 150, then SITE CHMOD, RNFR and RNTO in one write
//     (pconn.send): a small file costs about three and a half round trips
//     instead of six and a half. A read sends EPSV, REST (only for an
//     offset) and RETR in one write: two and a half round trips to the
//     data instead of three and a half, and a reader that took the whole
//     file ends without ABOR or NOOP. TYPE I is set once per connection,
//     at login, whose commands go in one write after the session's first
//     (login.go): two round trips instead of six.
//   - Parallelism: up to ftp_connections logged-in connections (pool.go),
//     as many as the round-trip time calls for (six on loopback, all
//     from 10 ms), fewer when the server refuses more logins.
package ftp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/textproto"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	ftplib "github.com/jlaffaye/ftp"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
	"wirefs/internal/remote/addr"
	"wirefs/internal/remote/session"
)

// Defaults for zero Options.
const (
	defaultConnectTimeout = 15 * time.Second
	defaultTimeout        = 60 * time.Second
)

// Backend is one FTP session. It implements remote.Backend and
// remote.Writer.
type Backend struct {
	addr     string         // host:port
	host     string         // for ~/.netrc and prompts
	srv      session.Server // "ftp [user@]host[:port]" in messages; the bounds
	user     string
	password string // never logged nor put in errors
	tls      *tls.Config
	log      *slog.Logger
	times    poolTimes

	home string // PWD after login: what "/" means

	max    int          // connections at most (Options.Connections)
	rtt    atomic.Int64 // the shortest round trip seen, in ns (pool.go's bound); 0: none yet
	noEPSV atomic.Bool
	// inPlace: temporaries cannot be renamed on this server, noTemp:
	// the directories where they cannot be created (Store);
	// warnedReplace: the log said that its RNTO does not replace.
	inPlace, warnedReplace atomic.Bool
	noStat                 atomic.Bool // STAT PATH lists nothing here (statReply)
	noTemp                 sync.Map

	mu   sync.Mutex
	idle []*pconn
	live map[*pconn]struct{}
	// The pool's bounds (pool.go): limit is max, or fewer once the
	// server refused a login for too many connections; the leased
	// counts; changed is closed (and replaced) when they change.
	limit, leased, leasedTransfers, leasedAhead int
	dialing                                     int           // logins under way
	peak                                        int           // the most connections the server held at once
	probing                                     bool          // a login beyond a lowered bound is under way (get)
	loginAt                                     time.Time     // after a refusal, no login before this (refusedLogin)
	loginBackoff                                time.Duration // the wait before loginAt
	changed                                     chan struct{}
	warnedLimit                                 bool
	script                                      []string             // a login's commands, sent at once (login.go)
	noScript                                    bool                 // a login went otherwise: one command at a time
	streams                                     map[string][]*stream // read.go
	closed                                      bool
	done                                        chan struct{}
	wg                                          sync.WaitGroup
}

var (
	_ remote.Dialer     = Dial
	_ remote.Backend    = (*Backend)(nil)
	_ remote.Writer     = (*Backend)(nil)
	_ remote.Appender   = (*Backend)(nil)
	_ remote.Chtimer    = (*Backend)(nil)
	_ remote.StatLister = (*Backend)(nil)
)

// Dial starts a session with server, "[user@]host[:port]" (port 21 by
// default). It logs in once, so that a wrong password or an unreachable
// server shows here.
//
// Credentials: the user from the name, with the password ~/.netrc gives
// for the host (whose login is used too when the name has none), else
// the one o.Askpass returns; with no user and no ~/.netrc entry, the
// anonymous login ("anonymous", password "anonymous@").
func Dial(ctx context.Context, server string, o remote.Options) (remote.Backend, error) {
	return dial(ctx, server, o, defaultPoolTimes)
}

func dial(ctx context.Context, server string, o remote.Options, times poolTimes) (*Backend, error) {
	o = o.WithDefaults(defaultConnectTimeout, defaultTimeout)
	srv := session.Server{Proto: "ftp", Host: server, ConnectTimeout: o.ConnectTimeout, Timeout: o.Timeout}
	if o.TLS {
		srv.Proto = "ftps"
	}
	sv, err := addr.Parse(server)
	if err != nil {
		return nil, srv.Error(syscall.EINVAL, "", "", err)
	}
	user, host := sv.User, sv.Host
	conns := o.Connections
	switch {
	case conns == 0:
		conns = DefaultConnections
	case conns < 0:
		return nil, srv.Errorf(syscall.EINVAL, "", "", "%d connections", conns)
	}
	b := &Backend{
		addr:    sv.HostPort(strconv.Itoa(DefaultPort)),
		host:    host,
		srv:     srv,
		log:     o.Log,
		times:   times,
		max:     conns,
		limit:   conns,
		changed: make(chan struct{}),
		live:    map[*pconn]struct{}{},
		streams: map[string][]*stream{},
		done:    make(chan struct{}),
	}
	if o.TLS {
		b.tls = &tls.Config{
			ServerName: host,
			RootCAs:    o.RootCAs,
			MinVersion: tls.VersionTLS12,
			// Servers that insist data connections resume the control
			// connection's TLS session (vsftpd's require_ssl_reuse)
			// get the resumption from this cache.
			ClientSessionCache: tls.NewLRUClientSessionCache(conns),
		}
	}
	if b.user, b.password, err = credentials(user, host, o); err != nil {
		return nil, srv.Error(ns.Errno(err), "", "", err)
	}

	pc, err := b.get(ctx, false, "connect", "")
	if err != nil {
		return nil, err
	}
	asked := time.Now()
	home, err := pc.sc.CurrentDir()
	b.noteRTT(time.Since(asked)) // the first sample of the round trip (pool.go's bound)
	if err != nil {
		b.discard(pc)
		b.Close()
		if isConnLoss(err) {
			return nil, b.srv.Failure(ctx, "pwd", "", err, false)
		}
		return nil, b.srv.Errorf(syscall.EIO, "pwd", "", "the server does not say the login directory: %w", err)
	}
	b.home = home
	b.put(pc)
	b.wg.Add(1)
	go b.janitor()
	b.log.Debug("ftp: session started", "server", b.srv.Host, "user", b.user, "home", home, "tls", o.TLS)
	return b, nil
}

// credentials picks the login for user (possibly "") on host.
func credentials(user, host string, o remote.Options) (login, password string, err error) {
	nlogin, npassword, ok, err := remote.Netrc(o.Home, host)
	if err != nil {
		return "", "", ns.Errorf(syscall.EACCES, "cannot read ~/.netrc: %v", err)
	}
	switch {
	case user == "" && ok && nlogin != "":
		return nlogin, npassword, nil
	case user == "":
		return "anonymous", "anonymous@", nil
	case ok && (nlogin == "" || nlogin == user):
		return user, npassword, nil
	case o.Askpass != nil:
		p, err := o.Askpass(fmt.Sprintf("Password for ftp://%s@%s: ", user, host))
		if err != nil {
			return "", "", ns.Errorf(syscall.EACCES, "no password for %s@%s: %v", user, host, err)
		}
		return user, p, nil
	}
	// No password anywhere: some servers accept the user without one;
	// the others refuse the login with a clear message.
	return user, "", nil
}

// serverPath is p on the server: below the login directory.
func (b *Backend) serverPath(p string) string { return path.Join(b.home, p) }

// use leases a connection and runs fn on it; ctx cancellation breaks the
// connection (one call has it to itself: nothing is abandoned). A
// refusal is explained (errors.go). A connection that turned out dead is
// discarded, and session.Again decides whether the operation runs once
// more on a new connection (it had been idle in the pool: the server may
// have restarted since). On success the connection stays leased to the
// caller, who must put it back.
func (b *Backend) use(ctx context.Context, transfer bool, op, p string, retry session.Retry, fn func(pc *pconn) error) (*pconn, error) {
	for attempt := 0; ; attempt++ {
		pc, err := b.get(ctx, transfer, op, p)
		if err != nil {
			return nil, err
		}
		stop := context.AfterFunc(ctx, pc.kill)
		err = fn(pc)
		lost := isConnLoss(err)
		if err != nil && !lost {
			err = pc.explain(op, p, err)
		}
		if !stop() {
			// ctx fired: the connection is broken whatever fn saw.
			b.discard(pc)
			return nil, b.srv.Wrap(op, p, session.Interrupted(ctx))
		}
		if err == nil {
			pc.lastUsed = time.Now()
			return pc, nil
		}
		if !lost {
			if pc.broken {
				b.discard(pc)
			} else {
				b.put(pc)
			}
			return nil, err
		}
		b.discard(pc)
		if session.Again(attempt, pc.reused, err, retry) {
			b.log.Debug("ftp: pooled connection lost; reconnecting", "server", b.srv.Host, "op", op, "err", err)
			b.dropIdle()
			continue
		}
		return nil, b.srv.Failure(ctx, op, p, err, false)
	}
}

// do is use for operations that give the connection back at once; each
// is one command that comes out the same when repeated.
func (b *Backend) do(ctx context.Context, op, p string, fn func(pc *pconn) error) error {
	pc, err := b.use(ctx, false, op, p, session.Always, fn)
	if err == nil {
		b.put(pc)
	}
	return err
}

// isRefusalText reports whether err is a bare message from the server
// rather than a failure of the connection.
func isRefusalText(err error) bool {
	var ne net.Error
	var errno syscall.Errno
	return !errors.As(err, &ne) && !errors.As(err, &errno) && !errors.Is(err, io.EOF) &&
		!errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded)
}

// Stat returns the attributes of p from its parent's listing (see the
// package comment for why).
func (b *Backend) Stat(ctx context.Context, p string) (remote.Info, error) {
	var info remote.Info
	err := b.do(ctx, "stat", p, func(pc *pconn) error {
		i, found, err := pc.find(p)
		if err == nil && !found {
			return b.srv.Error(syscall.ENOENT, "stat", p, syscall.ENOENT)
		}
		info = i
		return err
	})
	return info, err
}

// StatListsParent: Stat finds p in its directory's listing (find).
func (b *Backend) StatListsParent() {}

// List returns the entries of directory p.
func (b *Backend) List(ctx context.Context, p string) ([]remote.Info, error) {
	var infos []remote.Info
	err := b.do(ctx, "list", p, func(pc *pconn) error {
		entries, self, err := pc.list(p)
		if err != nil {
			return err
		}
		// A listing names "." (LIST -a) or its cdir (MLSD) only for a
		// directory. Without it, the server may have listed a file, or
		// (vsftpd) nothing for a missing path: look.
		if !self && p != "/" {
			info, found, err := pc.find(p)
			if err != nil {
				return err
			}
			if !found {
				return b.srv.Error(syscall.ENOENT, "list", p, syscall.ENOENT)
			}
			if !info.Mode.IsDir() {
				return b.srv.Error(syscall.ENOTDIR, "list", p, syscall.ENOTDIR)
			}
		}
		infos = entries
		return nil
	})
	return infos, err
}

// list lists directory p on pc, with permission bits. Where the server
// lists with LIST (no MLSD), STAT -a p lists p on the control connection
// in one round trip (statList): LIST waits for its passive reply, the
// data connection, the transfer and the transfer's end, three round
// trips.
func (pc *pconn) list(p string) (entries []remote.Info, self bool, err error) {
	mlsd := pc.sc.IsTimePreciseInList()
	if !mlsd && !pc.b.noStat.Load() {
		entries, self, err = pc.statList(p)
		if err == nil || isConnLoss(err) {
			return entries, self, err
		}
		if !pc.b.noStat.Swap(true) {
			pc.b.log.Debug("ftp: the server lists no directory with STAT; listings use LIST", "server", pc.b.srv.Host, "err", err)
		}
	}
	pc.disarm() // jlaffaye asks for a data connection of its own
	arg := pc.b.serverPath(p)
	if !mlsd {
		arg = "-a " + arg
	}
	var raw strings.Builder
	pc.capture = &raw
	es, err := pc.sc.List(arg)
	pc.capture = nil
	if err != nil {
		return nil, false, err
	}
	entries, self = entryInfos(raw.String(), es)
	return entries, self, nil
}

// statList lists p with STAT -a p: the reply holds LIST -a's lines
// (RFC 959), which jlaffaye parses as List does its own (a patch:
// third_party/README.md), with the server's clock taken as UTC as List
// takes it.
func (pc *pconn) statList(p string) ([]remote.Info, bool, error) {
	if err := pc.send("STAT -a " + pc.b.serverPath(p)); err != nil {
		return nil, false, err
	}
	_, msg, err := pc.reply(2)
	if err != nil {
		return nil, false, err
	}
	entries, self := statEntries(msg, time.Now())
	return entries, self, nil
}

// find looks p up in its parent's listing; "/" (the login directory) is
// always there.
func (pc *pconn) find(p string) (info remote.Info, found bool, err error) {
	if p == "/" {
		return remote.Info{Name: "/", Mode: os.ModeDir | 0o755, Size: -1}, true, nil
	}
	entries, _, err := pc.list(path.Dir(p))
	if err != nil {
		return remote.Info{}, false, err
	}
	name := path.Base(p)
	for _, e := range entries {
		if e.Name == name {
			return e, true, nil
		}
	}
	return remote.Info{}, false, nil
}

// Store replaces p whole with size bytes of r (size < 0: all of r). The
// bytes go with STOR to a temporary name in p's directory
// (remote.TempName), renamed over p with RNFR/RNTO once the server has
// them all, so that a failed upload never leaves part of the data under
// p's name; the temporary is deleted on failure (on a new connection when
// the old one broke). The new file gets p's mode as its parent's listing
// shows it (perm when p is new) with SITE CHMOD; other hard links to p
// keep the old data (as with rsync).
//
// Servers differ in what they let a user do:
//   - RNTO onto an existing file replaces it on Unix servers (vsftpd,
//     ProFTPD, Pure-FTPd and pyftpdlib call rename(2)); a server that
//     refuses to (IIS and others that keep the old file) gets p deleted
//     first, logged once: for a moment p does not exist.
//   - Where the temporary cannot be created (a directory whose files the
//     user may write but not add to), stores in that directory go
//     straight to the name from then on; where it cannot be renamed
//     (vsftpd's anonymous uploads without anon_other_write_enable,
//     "incoming" directories), every store of the session does. Each is
//     logged once: there a failed upload may leave part of the file,
//     which the cache's retry replaces.
func (b *Backend) Store(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	b.dropStreams(p)
	if _, noTemp := b.noTemp.Load(path.Dir(p)); noTemp || b.inPlace.Load() {
		return b.storeInPlace(ctx, p, r, size, perm)
	}
	tmp := remote.TempName(p)
	rewind := rewinder(r)
	src := counting(r, size)
	// p's mode (perm for a new file) must be known before the rename:
	// STAT PATH goes ahead of the STOR in the same write (statReply) and
	// costs nothing; a server without it is asked by SIZE and a
	// listing after the data (modeByListing).
	mode, known := perm, false
	pc, err := b.use(ctx, true, "store", p, session.Unsent(src.sent), func(pc *pconn) error {
		mode, known = perm, false
		if b.noStat.Load() {
			return pc.stor(b.serverPath(tmp), src, "", nil)
		}
		return pc.stor(b.serverPath(tmp), src, "STAT "+b.serverPath(p), func() error {
			old, found, err := pc.statReply(path.Base(p))
			switch {
			case err == nil:
				known = true
				if found {
					mode = old & keptMode
				}
			case isConnLoss(err):
				return err
			case !b.noStat.Swap(true):
				b.log.Debug("ftp: the server lists no file with STAT; a store looks at the directory's listing", "server", b.srv.Host, "err", err)
			}
			return nil
		})
	})
	if err == nil {
		b.put(pc)
		if size >= 0 && src.n != size {
			err = b.srv.Errorf(syscall.EIO, "store", p, "the data ended after %d of %d bytes", src.n, size)
		}
	} else if refused(err) && (src.n == 0 || rewind()) {
		if _, known := b.noTemp.LoadOrStore(path.Dir(p), true); !known {
			b.log.Warn("ftp: the server refuses a temporary file beside a file to store; stores in its directory go straight to the name from now on, and a failed one may leave part of the file",
				"server", b.srv.Host, "path", p, "err", err)
		}
		return b.storeInPlace(ctx, p, r, size, perm)
	}
	if err == nil {
		err = b.do(ctx, "store", p, func(pc *pconn) error {
			if !known {
				old, found, err := pc.modeByListing(p)
				if err != nil {
					return err
				}
				if found {
					mode = old & keptMode
				}
				known = true
			}
			return pc.chmodAndReplace(tmp, p, mode)
		})
		if refused(err) {
			if !b.inPlace.Swap(true) {
				b.log.Warn("ftp: the server refuses to rename a temporary file over a file to store; stores go straight to the name from now on, and a failed one may leave part of the file",
					"server", b.srv.Host, "path", p, "err", err)
			}
			if rewind() {
				b.dropPartial(ctx, tmp)
				return b.storeInPlace(ctx, p, r, size, perm)
			}
		}
	}
	if err != nil {
		b.dropPartial(ctx, tmp)
	}
	return err
}

// statReply reads the reply to STAT PATH and looks for the line of name
// in the listing it holds (RFC 959: LIST's lines, in the reply, on the
// control connection): no data connection, where the parent's LIST costs
// four and a half round trips. For a file PATH, name is its base name;
// for a directory, "." (its own line). found is false when the listing
// has no line for name (a new file). A refusal (a server without STAT of
// a path) is the error.
func (pc *pconn) statReply(name string) (mode os.FileMode, found bool, err error) {
	_, msg, err := pc.reply(2)
	if err != nil {
		return 0, false, err
	}
	for _, line := range strings.Split(msg, "\n") {
		line = strings.TrimRight(line, "\r")
		if f := parseLine(line); f.hasMode && strings.HasSuffix(line, " "+name) {
			return f.mode, true, nil
		}
	}
	return 0, false, nil
}

// keptMode are the bits of a replaced file's mode that its replacement
// gets: permissions and setuid, setgid, sticky.
const keptMode = os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky

// modeByListing is p's mode where the server has no STAT of a path: SIZE
// says whether p exists (a new file costs no listing), then its parent's
// listing has the mode. found is false for a new file (or a directory,
// whose rename the server refuses).
func (pc *pconn) modeByListing(p string) (mode os.FileMode, found bool, err error) {
	if _, err := pc.sc.FileSize(pc.b.serverPath(p)); err != nil && isConnLoss(err) {
		return 0, false, err
	} else if err != nil {
		return 0, false, nil
	}
	old, found, err := pc.find(p)
	return old.Mode, found, err
}

// rewinder returns a func that puts r back where it is now, when r can
// seek (the cache's data files), and reports whether it did.
func rewinder(r io.Reader) func() bool {
	s, ok := r.(io.Seeker)
	if !ok {
		return func() bool { return false }
	}
	at, err := s.Seek(0, io.SeekCurrent)
	return func() bool {
		if err != nil {
			return false
		}
		_, serr := s.Seek(at, io.SeekStart)
		return serr == nil
	}
}

// refused reports a refusal by permission, as opposed to a failure.
func refused(err error) bool {
	errno := ns.Errno(err)
	return errno == syscall.EACCES || errno == syscall.EPERM
}

// chmodAndReplace gives tmp the mode perm where the server allows and
// renames it over p: SITE CHMOD, RNFR and RNTO in one write (send), one
// round trip instead of three; only when the rename is refused does
// replace look at why.
func (pc *pconn) chmodAndReplace(tmp, p string, perm os.FileMode) error {
	st, sp := pc.b.serverPath(tmp), pc.b.serverPath(p)
	if err := pc.send(pc.chmodCommand(tmp, perm), "RNFR "+st, "RNTO "+sp); err != nil {
		return err
	}
	if err := pc.chmodReply(tmp); err != nil {
		return err
	}
	_, _, rnfr := pc.reply(3)
	if isConnLoss(rnfr) {
		return rnfr
	}
	_, _, err := pc.reply(2) // after a refused RNFR: 503, bad sequence
	if rnfr == nil && err == nil || isConnLoss(err) {
		return err
	}
	return pc.replace(tmp, p)
}

// replace renames tmp over p. A server that refuses to replace an
// existing file gets it deleted first.
func (pc *pconn) replace(tmp, p string) error {
	st, sp := pc.b.serverPath(tmp), pc.b.serverPath(p)
	err := pc.sc.Rename(st, sp)
	var reply *textproto.Error
	if err == nil || !errors.As(err, &reply) {
		return err
	}
	if _, serr := pc.sc.FileSize(sp); serr != nil {
		return err // nothing there to replace: the rename itself is refused
	}
	if !pc.b.warnedReplace.Swap(true) {
		pc.b.log.Warn("ftp: the server does not rename over an existing file; a store deletes the old file just before the new one takes its name",
			"server", pc.b.srv.Host, "err", err)
	}
	if derr := pc.sc.Delete(sp); derr != nil {
		return err
	}
	return pc.sc.Rename(st, sp)
}

// dropPartial deletes what a failed store made (Store's temporary, or a
// fresh file, StoreFresh), unless the caller gave up (then it stays, and
// the log says where).
func (b *Backend) dropPartial(ctx context.Context, tmp string) {
	err := ctx.Err()
	if err == nil {
		err = b.do(ctx, "store", tmp, func(pc *pconn) error {
			err := pc.sc.Delete(b.serverPath(tmp))
			var reply *textproto.Error
			if errors.As(err, &reply) && reply.Code == ftplib.StatusFileUnavailable {
				return nil // never made
			}
			return err
		})
	}
	if err != nil {
		b.log.Warn("ftp: cannot delete the partial file of a failed upload", "server", b.srv.Host, "path", tmp, "err", err)
	}
}

// storeInPlace is STOR straight to p: Store where a temporary cannot be
// used. Only a new file gets perm.
func (b *Backend) storeInPlace(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	src := counting(r, size)
	var created bool
	pc, err := b.use(ctx, true, "store", p, session.Unsent(src.sent), func(pc *pconn) error {
		sp := b.serverPath(p)
		{
			// SIZE is the cheapest "does it exist" (no data
			// connection); only a new file gets perm.
			_, serr := pc.sc.FileSize(sp)
			if serr != nil && isConnLoss(serr) {
				return serr
			}
			created = serr != nil
		}
		return pc.stor(sp, src, "", nil)
	})
	if err != nil {
		return err
	}
	if size >= 0 && src.n != size {
		b.put(pc)
		return b.srv.Errorf(syscall.EIO, "store", p, "the data ended after %d of %d bytes", src.n, size)
	}
	if created {
		pc.chmodQuietly(p, perm)
	}
	b.put(pc)
	return nil
}

// Append writes n bytes of r at the end of the existing file p with APPE,
// which the server appends to the file as it is when the data arrive, and
// returns the size SIZE reports afterwards (-1 when the server has no
// SIZE). Never retried once data went out: a second APPE would append
// twice.
func (b *Backend) Append(ctx context.Context, p string, r io.Reader, n int64) (int64, error) {
	b.dropStreams(p)
	src := counting(r, n)
	size := int64(-1)
	pc, err := b.use(ctx, true, "append", p, session.Unsent(src.sent), func(pc *pconn) error {
		sp := b.serverPath(p)
		// APPE creates a missing file; Append's contract is an
		// existing one (the cache sends a new file whole).
		if _, err := pc.sc.FileSize(sp); err != nil {
			return err
		}
		pc.disarm() // jlaffaye asks for a data connection of its own
		if err := pc.sc.Append(sp, src); err != nil {
			return err
		}
		if sz, err := pc.sc.FileSize(sp); err == nil {
			size = sz
		}
		return nil
	})
	if err != nil {
		return -1, err
	}
	b.put(pc)
	if src.n != n {
		return -1, b.srv.Errorf(syscall.EIO, "append", p, "the data ended after %d of %d bytes", src.n, n)
	}
	return size, nil
}

// countingReader counts what STOR has taken, so that Store retries only
// when nothing was consumed yet.
type countingReader struct {
	r io.Reader
	n int64
}

// counting counts the size bytes of r (size < 0: all of r).
func counting(r io.Reader, size int64) *countingReader {
	if size >= 0 {
		r = io.LimitReader(r, size)
	}
	return &countingReader{r: r}
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) sent() int64 { return c.n }

// Mkdir makes directory p with MKD and gives it perm (servers apply their
// own umask; a refusal of the mode does not undo the directory) in one
// round trip where it can:
//   - SITE CHMOD must wait for MKD's 257: sent with it, it would change
//     the mode of a directory someone else made when MKD fails. But most
//     directories need none (cp -r, mkdir -p: the mode asked for is the
//     server's default), so STAT -a p goes with the MKD (it only reads):
//     its "." line is the mode MKD gave, and SITE CHMOD follows, a round
//     trip later, only when that differs from perm or the server listed
//     no "." line (STAT without options, or of a path, refused).
//   - A new directory is where files are about to be made: the passive
//     command of the connection's next transfer goes with them, so the
//     first store finds its data connection made ahead (arm.go), and a
//     second connection is logged in beside it (takeIdle: stores
//     alternate between two).
func (b *Backend) Mkdir(ctx context.Context, p string, perm os.FileMode) error {
	chmodLater := false
	err := b.do(ctx, "mkdir", p, func(pc *pconn) error {
		sp := b.serverPath(p)
		cmds := []string{"MKD " + sp, "STAT -a " + sp}
		arm := pc.armAge(time.Now()) < 0
		if arm {
			pc.disarm() // one that failed: the passive command replaces its listener
			cmds = append(cmds, b.passiveVerb())
		}
		if err := pc.send(cmds...); err != nil {
			return err
		}
		pc.arming = arm
		b.mu.Lock()
		if len(b.live) < 2 {
			b.loginAhead() // meanwhile
		}
		b.mu.Unlock()
		_, _, err := pc.reply(2)
		if isConnLoss(err) {
			return err
		}
		// A refused STAT leaves found false: SITE CHMOD as before.
		mode, found, serr := pc.statReply(".")
		if isConnLoss(serr) {
			return serr
		}
		pc.readArm()
		if err != nil {
			return err
		}
		switch {
		case found && mode.IsDir() && mode&keptMode == perm&keptMode:
		case pc.broken:
			// The passive command ended the session (vsftpd's
			// "500 OOPS" when no port is free); the directory is
			// made, and gets its mode on another connection.
			chmodLater = true
		default:
			pc.chmodQuietly(p, perm)
		}
		return nil
	})
	if err == nil && chmodLater {
		err = b.do(ctx, "mkdir", p, func(pc *pconn) error {
			pc.chmodQuietly(p, perm)
			return nil
		})
	}
	return err
}

// Remove deletes file p with DELE.
func (b *Backend) Remove(ctx context.Context, p string) error {
	b.dropStreams(p)
	return b.do(ctx, "remove", p, func(pc *pconn) error { return pc.sc.Delete(b.serverPath(p)) })
}

// Rmdir removes empty directory p with RMD.
func (b *Backend) Rmdir(ctx context.Context, p string) error {
	return b.do(ctx, "rmdir", p, func(pc *pconn) error { return pc.sc.RemoveDir(b.serverPath(p)) })
}

// Rename renames with RNFR/RNTO. A refusal that rename(2) would explain
// by what is at to (a non-empty directory, a file where a directory goes
// or the other way round) gets rename(2)'s errno.
func (b *Backend) Rename(ctx context.Context, from, to string) error {
	b.dropStreams(from)
	b.dropStreams(to)
	return b.do(ctx, "rename", from, func(pc *pconn) error {
		err := pc.sc.Rename(b.serverPath(from), b.serverPath(to))
		var reply *textproto.Error
		if !errors.As(err, &reply) {
			return err
		}
		src, srcFound, serr := pc.find(from)
		dst, dstFound, derr := pc.find(to)
		if serr != nil || derr != nil || !srcFound || !dstFound {
			return err
		}
		errno := syscall.Errno(0)
		switch {
		case !src.Mode.IsDir() && dst.Mode.IsDir():
			errno = syscall.EISDIR
		case src.Mode.IsDir() && !dst.Mode.IsDir():
			errno = syscall.ENOTDIR
		case src.Mode.IsDir():
			if entries, _, lerr := pc.list(to); lerr == nil && len(entries) > 0 {
				errno = syscall.ENOTEMPTY
			}
		}
		if errno == 0 {
			return err
		}
		return b.srv.Errorf(errno, "rename", from+" to "+to, "the server said %d %s", reply.Code, strings.TrimSpace(reply.Msg))
	})
}

// Chmod sets permission bits with SITE CHMOD; ENOTSUP where the server has
// no such command.
func (b *Backend) Chmod(ctx context.Context, p string, perm os.FileMode) error {
	return b.do(ctx, "chmod", p, func(pc *pconn) error { return pc.chmod(p, perm) })
}

func (pc *pconn) chmod(p string, perm os.FileMode) error {
	_, err := pc.raw(pc.chmodCommand(p, perm))
	return err
}

// chmodCommand is the SITE CHMOD command that gives p the mode perm.
func (pc *pconn) chmodCommand(p string, perm os.FileMode) string {
	mode := perm.Perm()
	if perm&os.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if perm&os.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if perm&os.ModeSticky != 0 {
		mode |= 0o1000
	}
	return fmt.Sprintf("SITE CHMOD %04o %s", uint32(mode), pc.b.serverPath(p))
}

// chmodQuietly applies the mode asked for at creation where the server
// allows; where it does not, the file keeps the server's mode.
func (pc *pconn) chmodQuietly(p string, perm os.FileMode) {
	if err := pc.chmod(p, perm); err != nil {
		pc.noChmod(p, err)
	}
}

// chmodReply reads the reply to a SITE CHMOD of p sent with send: a
// refusal is logged (chmodQuietly), a lost connection is the error.
func (pc *pconn) chmodReply(p string) error {
	_, _, err := pc.reply(2)
	if isConnLoss(err) {
		return err
	}
	if err != nil {
		pc.noChmod(p, err)
	}
	return nil
}

func (pc *pconn) noChmod(p string, err error) {
	pc.b.log.Debug("ftp: server did not set the mode of a new file", "server", pc.b.srv.Host, "path", p, "err", err)
}

// Chtimes sets p's modification time with MFMT, or with the form of MDTM
// that vsftpd writes (its mdtm_write); FTP carries no access time. A
// server with neither answers ENOTSUP, and the cache keeps the times
// itself.
func (b *Backend) Chtimes(ctx context.Context, p string, atime, mtime time.Time) error {
	return b.do(ctx, "chtimes", p, func(pc *pconn) error {
		sp := b.serverPath(p)
		if pc.sc.IsSetTimeSupported() {
			return pc.sc.SetTime(sp, mtime)
		}
		_, err := pc.raw("MDTM " + mtime.UTC().Format("20060102150405") + " " + sp)
		if err != nil && !isConnLoss(err) {
			return b.srv.Errorf(syscall.ENOTSUP, "chtimes", p, "the server sets no times (neither MFMT nor vsftpd's MDTM)")
		}
		return err
	})
}

// Close ends the session: idle connections say QUIT, leased ones are cut
// (their operations fail), the keepalive goroutine stops.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.done)
	b.mu.Unlock()
	b.dropParked()
	b.mu.Lock()
	idle := b.idle
	b.idle = nil
	inUse := make([]*pconn, 0, len(b.live))
	for pc := range b.live {
		inUse = append(inUse, pc)
	}
	b.mu.Unlock()
	for _, pc := range idle {
		pc.quit()
	}
	for _, pc := range inUse {
		pc.kill()
	}
	b.wg.Wait()
	return nil
}

// DefaultPort is the port of a server name without one, FTPS included
// (explicit AUTH TLS): the protocol registry's too.
const DefaultPort = 21
