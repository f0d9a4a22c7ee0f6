package ninep

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/hugelgupf/p9/p9"
)

func message(typ byte, tag uint16, body []byte) []byte {
	m := binary.LittleEndian.AppendUint32(nil, uint32(headerLen+len(body)))
	m = append(m, typ)
	m = binary.LittleEndian.AppendUint16(m, tag)
	return append(m, body...)
}

func tattach(fid, afid uint32, uname, aname string, uid uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, fid)
	b = binary.LittleEndian.AppendUint32(b, afid)
	b = appendString(b, uname)
	b = appendString(b, aname)
	return message(msgTattach, 1, binary.LittleEndian.AppendUint32(b, uid))
}

func tversion(msize uint32, v string) []byte {
	return message(msgTversion, 0xffff, appendString(binary.LittleEndian.AppendUint32(nil, msize), v))
}

// writeInPieces writes stream to a rewriter in pieces of the given sizes
// (cycled), as the library's writev fallback does, and returns the output.
func writeInPieces(stream []byte, pieces []int, u attachUser) ([]byte, error) {
	var out bytes.Buffer
	r := &attachRewriter{w: &out, user: u}
	for i := 0; len(stream) > 0; i++ {
		n := 1
		if len(pieces) > 0 {
			n = max(1, pieces[i%len(pieces)])
		}
		n = min(n, len(stream))
		if _, err := r.Write(stream[:n]); err != nil {
			return out.Bytes(), err
		}
		stream = stream[n:]
	}
	return out.Bytes(), nil
}

func TestAttachRewriter(t *testing.T) {
	u := attachUser{uid: 1000, name: "me"}
	twrite := message(118, 7, append(make([]byte, 16), bytes.Repeat([]byte("d"), 5000)...))
	in := slices.Concat(tversion(1<<20, "9P2000.L.Google.7"), tattach(1, 0xffffffff, "", "/srv/export", uint32(p9.NoUID)), twrite)
	want := slices.Concat(tversion(1<<20, "9P2000.L"), tattach(1, 0xffffffff, "me", "/srv/export", 1000), twrite)
	for _, pieces := range [][]int{{len(in)}, {1}, {7, 16, 5000}, {3, 11}} {
		got, err := writeInPieces(in, pieces, u)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("pieces %v: got %x, %v\nwant %x", pieces, got, err, want)
		}
	}
	if _, err := writeInPieces(message(msgTattach, 1, []byte{1, 2}), nil, u); err == nil {
		t.Error("a malformed Tattach was accepted")
	}
	if _, err := writeInPieces([]byte{3, 0, 0, 0, 100, 0, 0}, nil, u); err == nil {
		t.Error("a message shorter than its header was accepted")
	}
}

// FuzzAttachRewriter: any stream, in any pieces, never panics; streams
// without Tversion and Tattach pass unchanged; rewritten messages keep
// their framing.
func FuzzAttachRewriter(f *testing.F) {
	f.Add(slices.Concat(tversion(65536, "9P2000.L.Google.7"), tattach(1, 0, "x", "/a", 5)), []byte{7, 3})
	f.Add(message(118, 1, make([]byte, 30)), []byte{1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 104, 0, 0}, []byte{})
	f.Fuzz(func(t *testing.T, stream []byte, pieces []byte) {
		sizes := make([]int, len(pieces))
		for i, p := range pieces {
			sizes[i] = int(p)
		}
		out, err := writeInPieces(stream, sizes, attachUser{uid: 42, name: "fuzz"})
		if err != nil {
			return
		}
		if !containsRewritable(stream) && !bytes.HasPrefix(stream, out) {
			t.Fatalf("a stream without Tversion/Tattach changed: %x -> %x", stream, out)
		}
		for len(out) >= headerLen {
			size := int(binary.LittleEndian.Uint32(out))
			if size < headerLen || size > len(out) {
				break // the rest of a message still to come
			}
			if typ := out[4]; typ == msgTattach {
				d := decoder{b: out[headerLen+8 : size]}
				d.str()
				d.str()
				if d.u32() != 42 || d.bad || len(d.b) != 0 {
					t.Fatalf("rewritten Tattach is malformed: %x", out[:size])
				}
			}
			out = out[size:]
		}
	})
}

// containsRewritable reports whether a framed stream has a Tversion or
// Tattach among its complete headers.
func containsRewritable(stream []byte) bool {
	for len(stream) >= headerLen {
		if t := stream[4]; t == msgTversion || t == msgTattach {
			return true
		}
		size := int(binary.LittleEndian.Uint32(stream))
		if size < headerLen || size > len(stream) {
			return false
		}
		stream = stream[size:]
	}
	return false
}

func TestParseRversion(t *testing.T) {
	body := func(msize uint32, v string) []byte {
		return appendString(binary.LittleEndian.AppendUint32(nil, msize), v)
	}
	if m, err := parseRversion(msgRversion, body(65536, "9P2000.L"), 1<<20); err != nil || m != 65536 {
		t.Errorf("got %d, %v", m, err)
	}
	for _, bad := range []struct {
		typ  byte
		body []byte
	}{
		{msgRversion, body(65536, "unknown")},
		{msgRversion, body(2<<20, "9P2000.L")},
		{msgRversion, body(100, "9P2000.L")},
		{msgRversion, []byte{1, 2, 3}},
		{7, body(65536, "9P2000.L")},
	} {
		if m, err := parseRversion(bad.typ, bad.body, 1<<20); err == nil {
			t.Errorf("accepted %d %x as msize %d", bad.typ, bad.body, m)
		}
	}
}

func FuzzParseRversion(f *testing.F) {
	f.Add(byte(msgRversion), appendString(binary.LittleEndian.AppendUint32(nil, 65536), "9P2000.L"))
	f.Fuzz(func(t *testing.T, typ byte, body []byte) {
		m, err := parseRversion(typ, body, 1<<20)
		if err == nil && (m < minMsize || m > 1<<20) {
			t.Fatalf("msize %d accepted", m)
		}
	})
}

func TestParseExports(t *testing.T) {
	text := "/srv/export - - -\nctl - - -\n/srv/export/ - - -\n\n  /home/x/ ro - -\n"
	if got := parseExports(text); !slices.Equal(got, []string{"/srv/export", "/home/x"}) {
		t.Errorf("got %q", got)
	}
	if got := childrenToward("/", []string{"/srv/export", "/srv/other", "/home"}); !slices.Equal(got, []string{"home", "srv"}) {
		t.Errorf("children of /: %q", got)
	}
	if got := childrenToward("/srv", []string{"/srv/export", "/srv/other", "/srvx/a", "/srv"}); !slices.Equal(got, []string{"export", "other"}) {
		t.Errorf("children of /srv: %q", got)
	}
}

func FuzzParseExports(f *testing.F) {
	f.Add("/srv/export - - -\nctl - - -\n")
	f.Add("/a/../b\n/\n")
	f.Fuzz(func(t *testing.T, text string) {
		paths := parseExports(text)
		for _, p := range paths {
			if p == "" || p[0] != '/' {
				t.Fatalf("export %q is not absolute", p)
			}
			for _, name := range childrenToward("/", paths) {
				if name == "" && p != "/" {
					t.Fatalf("empty child name from %q", paths)
				}
			}
		}
	})
}
