package ftp

import (
	"errors"
	"net"
	"slices"
	"strings"
)

// A login is five or six commands (USER, PASS, FEAT, TYPE I, OPTS UTF8
// ON; PBSZ and PROT for FTPS), and jlaffaye waits for each reply before
// it sends the next: far from the server, a new connection cost six
// round trips before its first transfer (300 ms at 50 ms RTT). The
// commands of a login do not change between the connections of a
// session, so the first login is recorded as jlaffaye writes it, and
// later ones send the recording at once: the server reads the commands
// one after another as if they had come one by one (RFC 959 lets a
// client send before the reply), the replies come back in one round trip,
// and jlaffaye reads them as it always does. A login that goes
// differently (jlaffaye writes another command, or fewer) cannot be
// trusted to be in step with the server's replies: the connection is
// dropped and the session logs in one command at a time from then on.

// errLoginOutOfStep: a login did not send the commands of the recording.
var errLoginOutOfStep = errors.New("the login did not go as the session's first one did")

// loginConn is the control connection as jlaffaye sees it during a
// login: it records the commands jlaffaye writes (no script yet) or
// checks them against the script, which it has sent whole at the first
// write. After done it passes everything through.
type loginConn struct {
	net.Conn
	script   []string // commands still to be written by jlaffaye, each with its CRLF
	recorded []string // the commands written (recording)
	scripted bool     // script is in use: sent at the first write
	sent     bool
	over     bool // done: everything passes through
}

func (c *loginConn) Write(p []byte) (int, error) {
	switch {
	case c.over:
		return c.Conn.Write(p)
	case !c.scripted:
		c.recorded = append(c.recorded, string(p))
		return c.Conn.Write(p)
	}
	if !c.sent {
		c.sent = true
		if _, err := c.Conn.Write([]byte(strings.Join(c.script, ""))); err != nil {
			return 0, err
		}
	}
	// jlaffaye writes one command per Write (textproto's PrintfLine
	// flushes each line).
	if len(c.script) == 0 || c.script[0] != string(p) {
		return 0, errLoginOutOfStep
	}
	c.script = c.script[1:]
	return len(p), nil
}

// done ends the login: it returns the recording to keep (nil when
// scripted) and errLoginOutOfStep when jlaffaye wrote fewer commands than
// the script (the server's replies to the others are still to come).
func (c *loginConn) done() ([]string, error) {
	c.over = true
	if c.scripted {
		if len(c.script) > 0 {
			return nil, errLoginOutOfStep
		}
		return nil, nil
	}
	return c.recorded, nil
}

// loginScript is the recording new connections send at once (nil: log in
// one command at a time).
func (b *Backend) loginScript() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.noScript {
		return nil
	}
	return b.script
}

// keepLoginScript keeps the recording of a successful login, unless the
// session has one or gave up scripts.
func (b *Backend) keepLoginScript(rec []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.script == nil && !b.noScript && len(rec) > 0 {
		b.script = slices.Clone(rec)
	}
}

// dropLoginScript makes every later login go one command at a time.
func (b *Backend) dropLoginScript() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.noScript {
		b.noScript, b.script = true, nil
		b.log.Info("ftp: a login did not go as the first one did; logging in one command at a time from now on", "server", b.srv.Host)
	}
}
