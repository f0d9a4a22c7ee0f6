package ninep

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hugelgupf/p9/p9"

	"wirefs/internal/remote/session"
)

// 9P message framing: size[4] type[1] tag[2], little-endian.
const (
	headerLen   = 7
	msgTversion = 100
	msgRversion = 101
	msgTattach  = 104
	msgTsetattr = 26
	// tsetattrLen is the length of every Tsetattr: fid, valid, mode,
	// uid, gid, size, and two times of two 64-bit fields.
	tsetattrLen = headerLen + 5*4 + 5*8
	// maxRewritten bounds the messages the outbound rewriter holds whole
	// (Tversion and Tattach carry two short strings at most).
	maxRewritten = 1 << 16
	version      = "9P2000.L"
)

// wireConn is the TCP connection under the p9 client. It does what the
// library cannot be told to do:
//   - a watchdog (session.Watch) fails every Read and Write that makes no
//     progress for the timeout, and stall drops the connection: the p9
//     client has no timeouts of its own, and it only reads while a
//     request waits for its answer, so an idle connection never times
//     out;
//   - outbound messages pass through an attachRewriter, which writes to
//     the socket itself (one writev for a header and its body).
type wireConn struct {
	*session.Watched
	out *attachRewriter
}

func newWireConn(c net.Conn, timeout time.Duration, u attachUser, stall func()) *wireConn {
	return &wireConn{Watched: session.Watch(c, timeout, stall), out: &attachRewriter{w: c, user: u}}
}

func (c *wireConn) Write(p []byte) (int, error) {
	dog := c.Watchdog()
	dog.Begin()
	defer dog.End()
	return c.out.Write(p)
}

// attachUser is who the session attaches as: n_uname (p9.NoUID to let
// the server look up name) and uname.
type attachUser struct {
	uid  p9.UID
	name string
}

// attachRewriter passes the p9 client's outbound byte stream through,
// message by message, rewriting three messages the library gets wrong
// for diod:
//   - Tversion: the library asks for "9P2000.L.Google.7" and expects
//     EAGAIN to step down; diod answers EIO. We ask for plain "9P2000.L"
//     (the msize, negotiated beforehand by handshake, is kept).
//   - Tattach: the library always sends an empty uname and n_uname =
//     NoUID; we send the session's user, so the server checks permissions
//     as that user.
//   - Tsetattr: the library masks the mode to 01777, dropping setuid and
//     setgid; fullMode carries the whole mode to the rewriter (see there).
//
// Every other message is forwarded as written, without copying; its
// header is held back only until the first piece of its body, so that
// both go out in one writev.
type attachRewriter struct {
	w    io.Writer
	user attachUser
	held []byte // the start of the current message, not yet forwarded
	left int    // bytes of the current forwarded message still to come
	want int    // >0: length of the current message, held whole to rewrite
}

func (r *attachRewriter) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		switch {
		case r.left > 0: // the body of a forwarded message
			n := min(r.left, len(p))
			bufs := net.Buffers{p[:n]}
			if len(r.held) > 0 {
				bufs = net.Buffers{r.held, p[:n]}
			}
			if _, err := bufs.WriteTo(r.w); err != nil {
				return 0, err
			}
			r.held = r.held[:0]
			r.left -= n
			p = p[n:]
		case len(r.held) < headerLen:
			n := min(headerLen-len(r.held), len(p))
			r.held = append(r.held, p[:n]...)
			p = p[n:]
			if len(r.held) == headerLen {
				if err := r.startMessage(); err != nil {
					return 0, err
				}
			}
		default: // collecting a message to rewrite
			n := min(r.want-len(r.held), len(p))
			r.held = append(r.held, p[:n]...)
			p = p[n:]
			if len(r.held) == r.want {
				msg, err := rewriteMessage(r.held, r.user)
				if err != nil {
					return 0, err
				}
				if _, err := r.w.Write(msg); err != nil {
					return 0, err
				}
				r.held, r.want = r.held[:0], 0
			}
		}
	}
	return total, nil
}

// startMessage decides, from a complete header in r.held, whether the
// message is forwarded or held whole for rewriting.
func (r *attachRewriter) startMessage() error {
	size := int(binary.LittleEndian.Uint32(r.held))
	if size < headerLen {
		return fmt.Errorf("9P client wrote a message of impossible size %d", size)
	}
	switch r.held[4] {
	case msgTversion, msgTattach, msgTsetattr:
		if size > maxRewritten {
			return fmt.Errorf("9P client wrote an oversized message of type %d (%d bytes)", r.held[4], size)
		}
		r.want = size
	default:
		r.left = size - headerLen
	}
	if size == headerLen { // a message without a body: nothing more will come
		return r.flushHeaderOnly()
	}
	return nil
}

func (r *attachRewriter) flushHeaderOnly() error {
	msg := r.held
	if r.want > 0 {
		var err error
		if msg, err = rewriteMessage(r.held, r.user); err != nil {
			return err
		}
	}
	_, err := r.w.Write(msg)
	r.held, r.want = r.held[:0], 0
	return err
}

// rewriteMessage returns msg (a whole Tversion, Tattach or Tsetattr) as
// diod should see it. It never changes the tag or fids.
func rewriteMessage(msg []byte, u attachUser) ([]byte, error) {
	if msg[4] == msgTsetattr {
		return rewriteSetattr(msg)
	}
	d := decoder{b: msg[headerLen:]}
	out := append([]byte(nil), msg[:headerLen]...)
	switch msg[4] {
	case msgTversion:
		msize := d.u32()
		d.str() // the library's version string, replaced
		if d.bad || len(d.b) != 0 {
			return nil, errors.New("9P client wrote a malformed Tversion")
		}
		out = binary.LittleEndian.AppendUint32(out, msize)
		out = appendString(out, version)
	case msgTattach:
		fid, afid := d.u32(), d.u32()
		d.str() // uname, replaced
		aname := d.str()
		d.u32() // n_uname, replaced
		if d.bad || len(d.b) != 0 {
			return nil, errors.New("9P client wrote a malformed Tattach")
		}
		out = binary.LittleEndian.AppendUint32(out, fid)
		out = binary.LittleEndian.AppendUint32(out, afid)
		out = appendString(out, u.name)
		out = appendString(out, aname)
		out = binary.LittleEndian.AppendUint32(out, uint32(u.uid))
	default:
		return nil, fmt.Errorf("9P message type %d is not rewritten", msg[4])
	}
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out, nil
}

// Tsetattr's valid bits for the mode and the size.
const (
	setattrMode = 0x1
	setattrSize = 0x8
)

// fullModeMark marks a Tsetattr size field that carries a whole mode: the
// high half is the mark, the low half the mode (see fullMode).
const fullModeMark = 0x6d6f6465 << 32 // "mode"

// fullMode returns the size field that carries mode, setuid and setgid
// included, past the library, which masks Tsetattr's mode to 01777: the
// server reads the size only when valid says so, and rewriteSetattr
// moves the mode back where it belongs before the server sees it.
func fullMode(mode p9.FileMode) uint64 { return fullModeMark | uint64(mode) }

// rewriteSetattr puts the whole mode that fullMode carried in the size
// field of a Tsetattr that sets the mode and not the size back in the
// mode field, and clears the size. Any other Tsetattr passes unchanged.
func rewriteSetattr(msg []byte) ([]byte, error) {
	if len(msg) != tsetattrLen {
		return nil, fmt.Errorf("9P client wrote a Tsetattr of %d bytes, not %d", len(msg), tsetattrLen)
	}
	body := msg[headerLen:]
	valid := binary.LittleEndian.Uint32(body[4:])
	sizeField := body[20:28]
	carried := binary.LittleEndian.Uint64(sizeField)
	if valid&setattrMode == 0 || valid&setattrSize != 0 || carried&^0xffffffff != fullModeMark {
		return msg, nil
	}
	out := append([]byte(nil), msg...)
	binary.LittleEndian.PutUint32(out[headerLen+8:], uint32(carried))
	binary.LittleEndian.PutUint64(out[headerLen+20:], 0)
	return out, nil
}

// decoder reads 9P fields; bad records a read past the end.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) take(n int) []byte {
	if d.bad || len(d.b) < n {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) str() string {
	n := d.take(2)
	if n == nil {
		return ""
	}
	return string(d.take(int(binary.LittleEndian.Uint16(n))))
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// handshake negotiates the message size on a fresh connection, before
// the p9 client sends its own Tversion: the library never reads the
// server's msize from Rversion and would send messages larger than the
// server accepts (diod caps msize at 64 KiB). It returns the server's
// msize.
func handshake(c net.Conn, want uint32) (uint32, error) {
	req := []byte{0, 0, 0, 0, msgTversion, 0xff, 0xff} // tag NOTAG
	req = binary.LittleEndian.AppendUint32(req, want)
	req = appendString(req, version)
	binary.LittleEndian.PutUint32(req, uint32(len(req)))
	if _, err := c.Write(req); err != nil {
		return 0, err
	}
	var hdr [headerLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return 0, err
	}
	size := binary.LittleEndian.Uint32(hdr[:])
	if size < headerLen || size > maxRewritten {
		return 0, fmt.Errorf("the server answered Tversion with a message of %d bytes; it does not speak 9P", size)
	}
	body := make([]byte, size-headerLen)
	if _, err := io.ReadFull(c, body); err != nil {
		return 0, err
	}
	return parseRversion(hdr[4], body, want)
}

// parseRversion checks the answer to Tversion and returns the msize to use.
func parseRversion(typ byte, body []byte, want uint32) (uint32, error) {
	d := decoder{b: body}
	if typ != msgRversion {
		return 0, fmt.Errorf("the server answered Tversion with message type %d; it does not speak %s", typ, version)
	}
	msize := d.u32()
	v := d.str()
	switch {
	case d.bad:
		return 0, errors.New("the server's Rversion is malformed")
	case v != version:
		return 0, fmt.Errorf("the server speaks %q, not %s", v, version)
	case msize > want:
		return 0, fmt.Errorf("the server raised msize from %d to %d", want, msize)
	case msize < minMsize:
		return 0, fmt.Errorf("the server's msize %d is too small", msize)
	}
	return msize, nil
}
