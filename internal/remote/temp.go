package remote

import (
	"crypto/rand"
	"encoding/hex"
	"path"
	"unicode/utf8"
)

// TempName returns a fresh temporary name for a whole-file upload to p, in
// p's directory so that a rename can put it in place: ".NAME.wirefs-XXXXXXXX"
// (a dot file, hidden from ls as rsync's are), with NAME shortened where
// the whole would pass the 255 bytes most file systems allow in a name.
func TempName(p string) string {
	var buf [4]byte
	rand.Read(buf[:])
	suffix := ".wirefs-" + hex.EncodeToString(buf[:])
	name := path.Base(p)
	for len(name) > 255-1-len(suffix) {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return path.Join(path.Dir(p), "."+name+suffix)
}
