// Package ninep is the 9P2000.L remote-file backend (namespace name "9p"),
// with diod as the reference server, over github.com/hugelgupf/p9.
//
// Paths are absolute on the server. 9P has no single root: a client
// attaches to a named export. The attach name for a path is the longest
// prefix of it that the server accepts, so 9p/host/srv/export/dir/f works
// when the server exports /srv/export. When the server lists its exports
// (diod's "ctl" file system, exported with -e ctl), the longest export
// that is a prefix of the path is attached directly; otherwise prefixes
// are tried from the longest down, and what the server accepted or
// refused is remembered. Directories above every export ("/", "/srv")
// are synthesized: they list the next component of the known exports.
//
// One idea per file:
//   - ninep.go: Dial, the attach user, Close;
//   - conn.go: one connection (dial, version handshake, attaches) and the
//     Answer hook of the session core (internal/remote/session), which
//     shares it, retries, abandons cancelled calls and words the errors;
//   - wire.go: the bytes under the p9 library (the watchdog, the
//     rewritten Tversion, Tattach and Tsetattr, the msize handshake);
//   - exports.go, places.go: which export holds a path, the
//     synthesized directories above them;
//   - walk.go: fids for names;
//   - stat.go: Stat, List and attributes; read.go: ReadRange;
//   - write.go: Store and what Append and Patch (patch.go) share;
//   - dirs.go: Mkdir, Remove, Rmdir, Rename; attrs.go: Chmod, Chtimes,
//     Chown; links.go: Symlink, Readlink, Link, Statfs.
package ninep

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hugelgupf/p9/p9"

	"wirefs/internal/remote"
	"wirefs/internal/remote/addr"
	"wirefs/internal/remote/session"
)

const (
	defaultTimeout        = 30 * time.Second
	defaultConnectTimeout = 15 * time.Second
)

// Backend is a session with one 9P2000.L server. It implements
// remote.Backend, remote.Writer and the optional interfaces of links,
// owners, times, statfs and partial writes.
type Backend struct {
	addr string         // host:port
	srv  session.Server // "9p [user@]host[:port]" in messages
	s    *session.Session[*conn]
	user attachUser
	log  *slog.Logger

	mu       sync.Mutex
	accepted map[string]bool      // attach names the server accepted (when it does not list exports)
	refused  map[string]time.Time // attach names refused, until when
}

var (
	_ remote.Dialer       = Dial
	_ remote.Backend      = (*Backend)(nil)
	_ remote.Writer       = (*Backend)(nil)
	_ remote.Chtimer      = (*Backend)(nil)
	_ remote.Chowner      = (*Backend)(nil)
	_ remote.Symlinker    = (*Backend)(nil)
	_ remote.Linker       = (*Backend)(nil)
	_ remote.Statfser     = (*Backend)(nil)
	_ remote.Appender     = (*Backend)(nil)
	_ remote.AppendOpener = (*Backend)(nil)
	_ remote.Creator      = (*Backend)(nil)
	_ remote.Patcher      = (*Backend)(nil)
)

// Dial connects to server ("[user@]host[:port]", port 564 by default) and
// returns a session that attaches as user: a user name, a numeric uid,
// or by default the current user.
func Dial(ctx context.Context, server string, o remote.Options) (remote.Backend, error) {
	o = o.WithDefaults(defaultConnectTimeout, defaultTimeout)
	srv := session.Server{Proto: "9p", Host: server, ConnectTimeout: o.ConnectTimeout, Timeout: o.Timeout}
	sv, err := addr.Parse(server)
	if err != nil {
		return nil, srv.Error(syscall.EINVAL, "", "", err)
	}
	u, err := lookupAttachUser(sv.User)
	if err != nil {
		return nil, srv.Error(syscall.EINVAL, "", "", err)
	}
	b := &Backend{
		addr:     sv.HostPort(strconv.Itoa(DefaultPort)),
		srv:      srv,
		user:     u,
		log:      o.Log,
		accepted: map[string]bool{},
		refused:  map[string]time.Time{},
	}
	b.s = session.New(session.Protocol[*conn]{Server: srv, Log: o.Log, Dial: b.dial, Answer: b.answer})
	// Connect now, so that a wrong address or a server that does not
	// speak 9P2000.L is reported by Dial.
	if err := b.s.Connect(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// lookupAttachUser resolves the user part of a server name: empty is the
// current user, digits are a uid, anything else a user name, looked up
// here for its uid or else left to the server to look up.
func lookupAttachUser(name string) (attachUser, error) {
	switch {
	case name == "":
		u := attachUser{uid: p9.UID(os.Getuid())}
		if cu, err := user.Current(); err == nil {
			u.name = cu.Username
		}
		return u, nil
	case strings.Trim(name, "0123456789") == "":
		uid, err := strconv.ParseUint(name, 10, 32)
		if err != nil || p9.UID(uid) == p9.NoUID {
			return attachUser{}, fmt.Errorf("user %q is not a valid uid", name)
		}
		return attachUser{uid: p9.UID(uid)}, nil
	default:
		u := attachUser{uid: p9.NoUID, name: name}
		if lu, err := user.Lookup(name); err == nil {
			if uid, err := strconv.ParseUint(lu.Uid, 10, 32); err == nil {
				u.uid = p9.UID(uid)
			}
		}
		return u, nil
	}
}

// Close ends the session. Requests in flight fail with EIO.
func (b *Backend) Close() error { return b.s.Close() }

// DefaultPort is the port of a server name without one (the protocol
// registry's too).
const DefaultPort = 564
