package ftp

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path"
	"syscall"
	"time"

	"wirefs/internal/remote"
	"wirefs/internal/remote/session"
)

var _ remote.FreshStorer = (*Backend)(nil)

// Fresh files: one round trip for a small new file, where Store takes two.
//
// Store sends the data to a temporary name and renames it over the file
// once the server's 226 says it has every byte: a failed upload never
// leaves part of the data under the file's name, but the rename waits for
// the 226, a second round trip. For a file that nobody had (made through
// this client, never stored), StoreFresh keeps that promise without the
// temporary, when every byte is in the kernel before the STOR leaves: the
// bytes are written to the data connection made ahead (arm.go), and the
// connection closed behind them, before the command is sent. Then:
//   - the daemon dying before the STOR leaves a data connection that the
//     server never takes (no file); dying after it, the kernel still
//     delivers the bytes and the FIN, so the server gets the whole file;
//   - a server that fails the transfer (a full disk: 451) says so, and
//     StoreFresh deletes what the STOR made before it returns the error
//     (on a new connection when this one broke).
//
// What it cannot keep: when the network fails in the middle of those few
// bytes and stays down, the server keeps what arrived under the name until
// the connection is back and the delete (or the cache's retry, which
// stores the file again) gets through. A SIZE of the name goes ahead of
// the STOR (cheaper for the server than STAT, which lists the directory): a file of that name that another client made meanwhile is
// replaced as Store would (keeping its mode is Store's, not this), and is
// not deleted after a failure, which is logged.

// freshMax is the largest file StoreFresh sends under its name: every byte
// must fit in the kernel's buffers (this side's send buffer, and the
// server's receive window of a connection it has not yet taken) without
// the server reading, so that the write returns at once.
const freshMax = 16 << 10

// freshWriteWait bounds that write: bytes the kernel cannot take by then
// go through Store, from a new data connection (the server never took the
// one written to; the next passive command replaces its listener).
const freshWriteWait = time.Second

// StoreFresh stores p, which no file of the server had as far as the
// caller knows, in one round trip where it can (see above), else as
// Store does.
func (b *Backend) StoreFresh(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	_, noTemp := b.noTemp.Load(path.Dir(p))
	if size < 0 || size > freshMax || b.tls != nil || b.inPlace.Load() || noTemp {
		return b.Store(ctx, p, r, size, perm)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return b.srv.Errorf(syscall.EIO, "store", p, "the data ended before %d bytes: %v", size, err)
	}
	b.dropStreams(p)
	// made: the STOR went and was not refused at once, so the server may
	// have made p; existed: p's SIZE found a file there before it.
	var noArm, storSent, made, existed bool
	pc, err := b.use(ctx, true, "store", p, session.Unsent(func() int64 {
		if storSent {
			return 1
		}
		return 0
	}), func(pc *pconn) error {
		noArm, storSent, made, existed = false, false, false, false
		conn := pc.takeArm()
		if conn == nil || !writeAhead(conn, data) {
			noArm = true
			return nil
		}
		sp := b.serverPath(p)
		if err := pc.send("SIZE "+sp, "STOR "+sp, pc.chmodCommand(p, perm), b.passiveVerb()); err != nil {
			return err
		}
		storSent, made, pc.arming = true, true, true
		_, _, err := pc.reply(2) // 213 and the size, or 550: no file
		if isConnLoss(err) {
			return err
		}
		existed = err == nil
		_, _, err = pc.reply(1) // 150, or a refusal
		if err == nil {
			_, _, err = pc.reply(2) // 226, or why the transfer failed
		} else if !isConnLoss(err) {
			made = false
		}
		if isConnLoss(err) {
			return err
		}
		if cerr := pc.chmodReply(p); cerr != nil {
			return cerr
		}
		pc.readArm()
		return err
	})
	switch {
	case noArm:
		b.put(pc)
		return b.Store(ctx, p, bytes.NewReader(data), size, perm)
	case err == nil:
		b.put(pc)
	case !made:
	case existed:
		b.log.Warn("ftp: a store of a new file failed where another client had made a file of its name meanwhile; that file may now hold part of the data",
			"server", b.srv.Host, "path", p, "err", err)
	default:
		b.dropPartial(ctx, p)
	}
	return err
}

// writeAhead writes data to the data connection of a transfer not yet
// asked for and closes it, and reports whether the kernel took every byte
// (freshWriteWait). The connection is closed either way.
func writeAhead(conn net.Conn, data []byte) bool {
	conn.SetWriteDeadline(time.Now().Add(freshWriteWait))
	_, err := conn.Write(data)
	if cerr := conn.Close(); err == nil {
		err = cerr
	}
	return err == nil
}
