package remote

import (
	"crypto/rand"
	"encoding/hex"
	"path"
	"strings"
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

// spareMark begins the name of a temporary opened before the store that
// will use it (SpareName).
const spareMark = ".wirefs-spare-"

// SpareName returns a fresh name in directory dir for a temporary opened
// ahead of the store that will use it, whose file name is not known yet:
// ".wirefs-spare-XXXXXXXX". Listings leave such names out (IsSpare).
func SpareName(dir string) string {
	var buf [4]byte
	rand.Read(buf[:])
	return path.Join(dir, spareMark+hex.EncodeToString(buf[:]))
}

// IsSpare reports whether name (a file name, not a path) is one that
// SpareName makes.
func IsSpare(name string) bool { return strings.HasPrefix(name, spareMark) }
