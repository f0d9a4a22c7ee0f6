// Package http is the remote.Backend for HTTP and HTTPS servers: read-only
// files named by URL paths, attributes from HEAD or from autoindex-style
// directory listings, partial reads with Range requests.
package http

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	nethttp "net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
	"wirefs/internal/remote/addr"
	"wirefs/internal/remote/session"
)

const (
	defaultConnectTimeout = 15 * time.Second
	defaultTimeout        = 30 * time.Second
	// idleConnsPerHost keeps enough connections alive for the cache's
	// parallel reads, read-ahead and prefetch (32 background requests
	// by default) and a program's requests besides to each find one: a
	// connection closed for want of an idle slot is dialed again by a
	// later request, a round trip (at 16, every burst of 33 requests
	// dialed 17 connections anew).
	idleConnsPerHost = 64
	maxRedirects     = 10
	maxListing       = 64 << 20 // bytes of HTML; a sane listing is far smaller
)

var (
	errStalled = errors.New("the server made no progress")
	errClosed  = errors.New("the session is closed")
)

// backend is one HTTP(S) server. It is safe for concurrent use.
type backend struct {
	base    url.URL        // scheme and host[:port]
	host    string         // without port: for ~/.netrc and prompts
	srv     session.Server // "http[s] [user@]host[:port]" in messages; the bounds
	client  *nethttp.Client
	tr      *nethttp.Transport
	log     *slog.Logger
	askpass func(prompt string) (string, error)

	closing context.Context // done once Close is called
	close   context.CancelFunc

	warnedRanges atomic.Bool
	// noHEAD: the server refused a HEAD (405, 501); Stat asks with a
	// one-byte ranged GET from then on.
	noHEAD atomic.Bool
	// redirectedTo holds the origins ("https://host:443") that
	// redirects led to, each logged once.
	redirectedTo sync.Map

	mu    sync.Mutex
	login credentials
	// askMu serializes prompts, so parallel requests that all meet a 401
	// ask the user once.
	askMu sync.Mutex
}

// credentials are what basic auth sends; nothing is sent without a
// password.
type credentials struct{ user, password string }

// Dial returns a session with server "[user@]host[:port]", https when
// o.TLS. It contacts nothing: the first request connects, so a server
// that is down now may be up by then. The password for user (or the login
// of the host's ~/.netrc entry when no user is named) comes from ~/.netrc,
// else from o.Askpass when the server answers 401.
func Dial(_ context.Context, server string, o remote.Options) (remote.Backend, error) {
	o = o.WithDefaults(defaultConnectTimeout, defaultTimeout)
	srv := session.Server{Proto: "http", Host: server, ConnectTimeout: o.ConnectTimeout, Timeout: o.Timeout}
	if o.TLS {
		srv.Proto = "https"
	}
	sv, err := addr.Parse(server)
	if err != nil {
		return nil, srv.Error(syscall.ENOENT, "", "", err)
	}
	s := &backend{
		base:    url.URL{Scheme: srv.Proto, Host: sv.HostPort("")},
		host:    sv.Host,
		srv:     srv,
		log:     o.Log,
		askpass: o.Askpass,
	}
	s.log = s.log.With("server", s.base.String())

	s.login = netrcLogin(s.log, o.Home, sv.Host, sv.User)
	s.tr = &nethttp.Transport{
		Proxy:                 nethttp.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   o.ConnectTimeout,
		ResponseHeaderTimeout: o.Timeout,
		MaxIdleConnsPerHost:   idleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		// Bytes and sizes must be the server's, not a decompressed
		// variant whose length no header states.
		DisableCompression: true,
	}
	s.client = &nethttp.Client{Transport: s.tr, CheckRedirect: s.checkRedirect}
	s.closing, s.close = context.WithCancel(context.Background())
	return s, nil
}

// netrcLogin returns the login for host: user with the password of the
// host's ~/.netrc entry when that entry is for user (or for anyone, when
// no user is named), else user alone.
func netrcLogin(log *slog.Logger, home, host, user string) credentials {
	if home == "" {
		return credentials{user: user} // no ~/.netrc (Netrc would read ./.netrc)
	}
	netrcUser, password, ok, err := remote.Netrc(home, host)
	switch {
	case err != nil:
		log.Warn("cannot read ~/.netrc", "err", err)
	case ok && (user == "" || netrcUser == user):
		return credentials{user: netrcUser, password: password}
	}
	return credentials{user: user}
}

// checkRedirect follows redirects as Go's http.Client and curl -L do,
// with two exceptions:
//   - a redirect that only adds "/" to the path says "this is a
//     directory" (nginx, Apache and python http.server all answer so) and
//     is not followed: behind a proxy or a port forward such a Location
//     names the server's own origin (its port), not the one the user
//     reached it by, so the next request goes to the user's origin with
//     the slash (send, isDir);
//   - credentials go to the user's origin only (scheme, host and port,
//     curl's rule; Go's client would send them to another port of the
//     same host).
//
// The first redirect to each other origin is logged, since the files
// then come from elsewhere.
func (s *backend) checkRedirect(req *nethttp.Request, via []*nethttp.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("more than %d redirects", maxRedirects)
	}
	prev := via[len(via)-1]
	if addsSlash(prev.URL, req.URL) {
		return nethttp.ErrUseLastResponse
	}
	if !sameServer(req.URL, &s.base) {
		req.Header.Del("Authorization")
		origin := req.URL.Scheme + "://" + net.JoinHostPort(req.URL.Hostname(), portOf(req.URL))
		if _, seen := s.redirectedTo.LoadOrStore(origin, true); !seen {
			s.log.Warn("following a redirect to another server", "from", prev.URL.Redacted(), "to", req.URL.Redacted())
		}
	}
	return nil
}

// addsSlash reports whether to is from with "/" added to its path: the
// redirect servers make from a directory's name to its listing.
func addsSlash(from, to *url.URL) bool {
	return !strings.HasSuffix(from.Path, "/") && to.Path == from.Path+"/" && to.RawQuery == from.RawQuery
}

// isDir reports whether resp says its path is a directory: a redirect
// that only adds "/" (checkRedirect), or an answer from a URL path ending
// in "/" (after other redirects).
func isDir(resp *nethttp.Response) bool {
	if strings.HasSuffix(resp.Request.URL.Path, "/") {
		return true
	}
	loc, err := resp.Location()
	return err == nil && resp.StatusCode >= 300 && resp.StatusCode < 400 && addsSlash(resp.Request.URL, loc)
}

func sameServer(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && a.Hostname() == b.Hostname() && portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return strconv.Itoa(DefaultTLSPort)
	}
	return strconv.Itoa(DefaultPort)
}

// The ports of a server name without one (the protocol registry's too).
const (
	DefaultPort    = 80
	DefaultTLSPort = 443
)

// Stat asks the server for p's headers (HEAD). p is a directory when the
// server redirects it to p + "/" (nginx, Apache and python http.server
// all do; isDir). A server that refuses HEAD (405, 501) is asked with a
// GET of p's first byte instead, whose Content-Range gives the size.
func (s *backend) Stat(ctx context.Context, p string) (remote.Info, error) {
	if !s.noHEAD.Load() {
		resp, err := s.send(ctx, "stat", nethttp.MethodHead, p, "")
		if err == nil {
			resp.Body.Close()
			return statInfo(p, resp, resp.ContentLength), nil
		}
		if ns.Errno(err) != syscall.ENOTSUP {
			return remote.Info{}, err
		}
		if !s.noHEAD.Swap(true) {
			s.log.Info("the server refuses HEAD; attributes come from one-byte GET requests", "err", err)
		}
	}
	resp, err := s.send(ctx, "stat", nethttp.MethodGet, p, "bytes=0-0")
	if err != nil {
		return remote.Info{}, err
	}
	// Closing the body early drops the connection of a server that
	// ignored Range and sends the whole file.
	resp.Body.Close()
	size := resp.ContentLength // 200: the server ignores Range
	if resp.StatusCode == nethttp.StatusPartialContent || resp.StatusCode == nethttp.StatusRequestedRangeNotSatisfiable {
		size = -1
		if cr, ok := parseContentRange(resp.Header.Get("Content-Range")); ok {
			size = cr.total // 416 for an empty file: "bytes */0"
		}
	}
	return statInfo(p, resp, size), nil
}

// statInfo is the Info of p that the headers of resp give, for a file of
// size bytes (-1: not said).
func statInfo(p string, resp *nethttp.Response, size int64) remote.Info {
	info := remote.Info{Name: path.Base(p), Mode: fileMode, Size: size, ETag: resp.Header.Get("ETag")}
	if t, err := nethttp.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		info.Mtime = t
	}
	if isDir(resp) {
		info.Mode, info.Size = dirMode, 0
	}
	return info
}

// List reads the HTML listing of directory p with one GET.
func (s *backend) List(ctx context.Context, p string) ([]remote.Info, error) {
	dir := p
	if !strings.HasSuffix(dir, "/") {
		dir += "/"
	}
	resp, err := s.send(ctx, "list", nethttp.MethodGet, dir, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/html" && mt != "application/xhtml+xml" {
		return nil, s.srv.Errorf(syscall.ENOTDIR, "list", dir, "not a directory listing (the server sends %q)", mt)
	}
	page, err := io.ReadAll(io.LimitReader(resp.Body, maxListing+1))
	if err != nil {
		return nil, err
	}
	if len(page) > maxListing {
		return nil, s.srv.Errorf(syscall.EIO, "list", dir, "the listing is larger than %d MiB", maxListing>>20)
	}
	final := resp.Request.URL.Path
	return ParseListing(page, final[:strings.LastIndexByte(final, '/')+1]), nil
}

// ReadRange reads n bytes of p from off with a Range request. A server
// that ignores Range (200 instead of 206) is read sequentially: the first
// off bytes are skipped here. ctx governs the whole transfer, including
// reads from the returned reader.
func (s *backend) ReadRange(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, s.srv.Errorf(syscall.EINVAL, "read", p, "negative offset %d", off)
	}
	if n == 0 {
		return nethttp.NoBody, nil
	}
	var rng string
	if off > 0 || n > 0 {
		rng = fmt.Sprintf("bytes=%d-", off)
		if n > 0 {
			rng += strconv.FormatInt(off+n-1, 10)
		}
	}
	resp, err := s.send(ctx, "read", nethttp.MethodGet, p, rng)
	if err != nil {
		return nil, err
	}
	body := resp.Body.(*progressBody)
	switch {
	case isDir(resp):
		body.Close()
		return nil, s.srv.Error(syscall.EISDIR, "read", p, syscall.EISDIR)
	case resp.StatusCode == nethttp.StatusRequestedRangeNotSatisfiable:
		body.Close() // off is at or past the end of the file
		return nethttp.NoBody, nil
	case resp.StatusCode == nethttp.StatusPartialContent:
		if cr, ok := parseContentRange(resp.Header.Get("Content-Range")); !ok || cr.start != off {
			body.Close()
			return nil, s.srv.Errorf(syscall.EIO, "read", p, "asked for bytes from %d, the server sent %q", off, resp.Header.Get("Content-Range"))
		}
	case rng != "":
		if !s.warnedRanges.Swap(true) {
			s.log.Info("the server ignores Range requests; partial reads skip from the start of the file")
		}
		if _, err := io.CopyN(io.Discard, body, off); err != nil {
			body.Close()
			if err == io.EOF {
				return nethttp.NoBody, nil
			}
			return nil, err
		}
	}
	if n > 0 {
		body.limit(n)
	}
	return body, nil
}

// Close aborts transfers in progress and closes every connection.
func (s *backend) Close() error {
	s.close()
	s.tr.CloseIdleConnections()
	return nil
}

func (s *backend) describe(p string) string {
	u := s.base
	u.Path = p
	return u.String()
}

// send makes one request for p, the HTTP side of op, and returns a
// successful response (2xx, 416 for a Range request, or a redirect that
// says p is a directory: isDir), whose Body is a
// *progressBody that the caller must close. Any other answer becomes an
// error with its errno. A 401 is retried once when a password can be had.
func (s *backend) send(ctx context.Context, op, method, p, rng string) (*nethttp.Response, error) {
	if s.closing.Err() != nil {
		return nil, s.srv.Wrap(op, p, session.ErrClosed)
	}
	for retried := false; ; retried = true {
		// Each request has its own context so that a stalled body or
		// Close can abort it (dropping its connection) without
		// touching the caller's ctx.
		reqCtx, cancel := context.WithCancelCause(ctx)
		stop := context.AfterFunc(s.closing, func() { cancel(errClosed) })
		done := func() { stop(); cancel(nil) }
		req, err := nethttp.NewRequestWithContext(reqCtx, method, s.describe(p), nil)
		if err != nil {
			done()
			return nil, s.srv.Error(syscall.EINVAL, op, p, err)
		}
		req.Header.Set("User-Agent", "wirefs")
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		sent := s.credentials()
		if sent.password != "" {
			req.SetBasicAuth(sent.user, sent.password)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			done()
			return nil, s.failure(ctx, reqCtx, op, p, err)
		}
		resp.Body = s.newProgressBody(ctx, reqCtx, op, p, resp.Body, func() { cancel(errStalled) }, done)

		code := resp.StatusCode
		if code >= 200 && code < 300 || code == nethttp.StatusRequestedRangeNotSatisfiable && rng != "" ||
			code >= 300 && code < 400 && isDir(resp) {
			return resp, nil
		}
		resp.Body.Close()
		// Credentials are asked for the user's origin only (checkRedirect).
		if code == nethttp.StatusUnauthorized && !retried && sameServer(resp.Request.URL, &s.base) {
			if again, err := s.askPassword(sent, op, p); err != nil {
				return nil, err
			} else if again {
				continue
			}
		}
		return nil, s.statusError(resp, op, p, sent)
	}
}

func (s *backend) credentials() credentials {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.login
}

// askPassword is called when the server refused a request sent with
// credentials sent. It reports whether other credentials are now known.
func (s *backend) askPassword(sent credentials, op, p string) (bool, error) {
	s.askMu.Lock()
	defer s.askMu.Unlock()
	if s.credentials() != sent {
		return true, nil // another request asked meanwhile
	}
	if sent.password != "" || sent.user == "" || s.askpass == nil {
		return false, nil
	}
	password, err := s.askpass(fmt.Sprintf("Password for %s@%s: ", sent.user, s.host))
	if err != nil {
		return false, s.srv.Errorf(syscall.EACCES, op, p, "the server asks for a password and none was given: %w", err)
	}
	s.mu.Lock()
	s.login.password = password
	s.mu.Unlock()
	return true, nil
}

// statusError turns an unsuccessful HTTP status into an errno.
func (s *backend) statusError(resp *nethttp.Response, op, p string, sent credentials) error {
	code := resp.StatusCode
	switch {
	case code == nethttp.StatusNotFound || code == nethttp.StatusGone:
		return s.srv.Errorf(syscall.ENOENT, op, p, "no such file (%s)", resp.Status)
	case code == nethttp.StatusUnauthorized && sent.password != "":
		return s.srv.Errorf(syscall.EACCES, op, p, "the server refuses user %q with the password given (%s)", sent.user, resp.Status)
	case code == nethttp.StatusUnauthorized:
		return s.srv.Errorf(syscall.EACCES, op, p, "the server asks for a login; name the user as user@host and give the password in ~/.netrc (%s)", resp.Status)
	case code == nethttp.StatusForbidden || code == nethttp.StatusProxyAuthRequired:
		return s.srv.Errorf(syscall.EACCES, op, p, "access refused (%s)", resp.Status)
	case code == nethttp.StatusMethodNotAllowed || code == nethttp.StatusNotImplemented:
		return s.srv.Errorf(syscall.ENOTSUP, op, p, "the server refuses %s (%s)", resp.Request.Method, resp.Status)
	default:
		return s.srv.Errorf(syscall.EIO, op, p, "the server answers %s", resp.Status)
	}
}

// failure turns a transport error into an errno: the caller's ctx first
// (EINTR, ETIMEDOUT), then why this request's own context ended (the
// body's watchdog, Close), then the session core's reading of the error:
// a failed dial is Unreachable (ECONNREFUSED, an unknown host), a
// certificate not trusted EACCES, a timeout of the transport (TLS
// handshake, response headers) a stall, anything else a lost connection.
func (s *backend) failure(ctx, reqCtx context.Context, op, p string, err error) error {
	switch {
	case ctx.Err() != nil:
		return s.srv.Wrap(op, p, session.Interrupted(ctx))
	case context.Cause(reqCtx) == errStalled:
		return s.srv.Wrap(op, p, s.srv.Stalled())
	case context.Cause(reqCtx) == errClosed:
		return s.srv.Wrap(op, p, session.ErrClosed)
	}
	err = unwrapURL(err)
	var dial *net.OpError
	return s.srv.Failure(ctx, op, p, err, errors.As(err, &dial) && dial.Op == "dial")
}

// unwrapURL drops the "Get URL:" prefix that the message says already.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// progressBody is a response body whose reads fail with ETIMEDOUT when the
// server sends nothing for the session's timeout (session.WatchReader).
// The bound is on progress, not on the whole transfer: a large file may
// take as long as it takes.
type progressBody struct {
	s      *backend
	op, p  string
	ctx    context.Context // the caller's
	reqCtx context.Context // this request's; cancelled by stall or Close
	rc     io.ReadCloser   // the transport's body
	w      *session.Reader // rc, watched
	r      io.Reader       // w, limited to the bytes asked for
	done   func()          // releases reqCtx
	closed atomic.Bool
}

func (s *backend) newProgressBody(ctx, reqCtx context.Context, op, p string, rc io.ReadCloser, stalled, done func()) *progressBody {
	w := session.WatchReader(rc, s.srv.Timeout, stalled)
	return &progressBody{s: s, op: op, p: p, ctx: ctx, reqCtx: reqCtx, rc: rc, w: w, r: w, done: done}
}

func (b *progressBody) limit(n int64) { b.r = io.LimitReader(b.w, n) }

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = b.s.failure(b.ctx, b.reqCtx, b.op, b.p, err)
	}
	return n, err
}

// Close abandons what is left of the transfer; the transport drops the
// connection unless the body was read to its end.
func (b *progressBody) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.w.Stop()
	err := b.rc.Close()
	b.done()
	return err
}
