package ftp

import (
	"errors"
	"net"
	"net/textproto"
	"time"
)

// Data connections made ahead. A transfer needs a data connection, and in
// passive mode that costs two round trips before the first byte: the
// passive command's reply (the port), then the TCP handshake. Both can be
// paid before the transfer is asked for: every transfer command is
// followed, in the same write, by the passive command of the next
// transfer on the connection; the server answers it right after the
// transfer's final reply, and the client connects to the port it
// announces while the connection waits in the pool (the server's kernel
// completes the handshake; the server takes the connection from its
// listener when the next RETR or STOR arrives, as it would had the
// client connected after sending it). The next transfer on the connection
// then sends its command alone and its data flow one round trip later:
// a small file costs one round trip instead of two and a half.
//
// A server keeps the listener until the next transfer or passive command;
// some end it after a while with an unsolicited "421 Passive data channel
// timed out" (pyftpdlib, after 30 s without a connection), which would put
// the replies out of step. So a connection made ahead is used only for
// armFresh, and the janitor ends older ones on idle connections with
// ABOR (which ends a passive listener where no transfer runs).

// armFresh is how long a data connection made ahead is used.
const armFresh = 10 * time.Second

// arm is a data connection made ahead; raw and err are set under
// pconn.mu once done is closed.
type arm struct {
	done chan struct{}
	raw  net.Conn
	err  error
	at   time.Time // when the server announced the port
}

// passiveVerb is the passive command of this session: EPSV, or PASV once
// EPSV failed.
func (b *Backend) passiveVerb() string {
	if b.noEPSV.Load() {
		return "PASV"
	}
	return "EPSV"
}

// sendArm sends the passive command of the next transfer while this one
// runs; the server answers it after this one's final reply.
func (pc *pconn) sendArm() error {
	if err := pc.send(pc.b.passiveVerb()); err != nil {
		return err
	}
	pc.arming = true
	return nil
}

// readArm reads the reply to the passive command sent after a transfer
// command, if one was sent, and connects, in the background, to the port
// it announces. A refusal leaves pc without a data connection made ahead
// (the next transfer asks for one). A lost control connection (or a
// session that died, vsftpd's "500 OOPS" when no passive port is free)
// leaves pc broken: the transfer it followed is whole, the connection is
// not reused.
func (pc *pconn) readArm() {
	if !pc.arming {
		return
	}
	pc.arming = false
	code, msg, err := pc.reply(2)
	if isConnLoss(err) {
		pc.broken = true
		return
	}
	if err != nil {
		return
	}
	b := pc.b
	addr, err := b.dataAddr(code, msg)
	if err != nil {
		return // the next transfer's passive command replaces the listener
	}
	a := &arm{done: make(chan struct{}), at: time.Now()}
	pc.mu.Lock()
	if pc.killed {
		pc.mu.Unlock()
		return
	}
	pc.arm = a
	pc.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer close(a.done)
		raw, err := net.DialTimeout("tcp", addr, b.srv.ConnectTimeout)
		pc.mu.Lock()
		defer pc.mu.Unlock()
		a.raw, a.err = raw, err
		if err == nil && pc.killed {
			raw.Close()
		}
	}()
}

// takeArm returns the data connection made ahead, ready for the transfer
// command about to be sent, or nil (none, it failed, or it is older than
// armFresh: the caller then asks for a new one, which replaces the
// server's listener).
func (pc *pconn) takeArm() net.Conn {
	raw, at := pc.armConn()
	if raw == nil {
		return nil
	}
	if time.Since(at) > armFresh {
		raw.Close()
		return nil
	}
	data, err := pc.useData(raw)
	if err != nil {
		return nil
	}
	return data
}

// armConn takes pc's data connection made ahead, once connected.
func (pc *pconn) armConn() (net.Conn, time.Time) {
	pc.mu.Lock()
	a := pc.arm
	pc.arm = nil
	pc.mu.Unlock()
	if a == nil {
		return nil, time.Time{}
	}
	<-a.done
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if a.err != nil || pc.killed {
		return nil, time.Time{}
	}
	return a.raw, a.at
}

// armAge is how long ago the server announced the port of pc's data
// connection made ahead, -1 when pc has none (or it failed).
func (pc *pconn) armAge(now time.Time) time.Duration {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	a := pc.arm
	if a == nil {
		return -1
	}
	select {
	case <-a.done:
		if a.err != nil {
			return -1
		}
	default:
	}
	return now.Sub(a.at)
}

// disarm closes the data connection made ahead: before a command that
// asks for its own (jlaffaye's LIST, APPE), or when the server no longer
// took it.
func (pc *pconn) disarm() {
	if raw, _ := pc.armConn(); raw != nil {
		raw.Close()
	}
}

// staleArm reports whether pc holds a data connection made ahead longer
// ago than armFresh (the janitor ends it).
func (pc *pconn) staleArm(now time.Time) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.arm != nil && now.Sub(pc.arm.at) > armFresh
}

// endArm ends the server's listener of a stale data connection made
// ahead on an idle pc: the connection closed, then ABOR, which the
// servers answer whether or not a transfer runs (225, 226).
func (pc *pconn) endArm() error {
	pc.disarm()
	if err := pc.send("ABOR"); err != nil {
		return err
	}
	_, _, err := pc.reply(2)
	var reply *textproto.Error
	if errors.As(err, &reply) {
		return nil
	}
	return err
}

// cantOpenData reports the server's "425 Can't open data connection": a
// data connection made ahead that it no longer took.
func cantOpenData(err error) bool {
	var reply *textproto.Error
	return errors.As(err, &reply) && reply.Code == 425
}
