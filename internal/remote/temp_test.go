package remote

import (
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTempName(t *testing.T) {
	long := strings.Repeat("é", 127) // 254 bytes
	for _, p := range []string{"/d/file.txt", "/f", "/a/b/" + long} {
		tmp := TempName(p)
		name := path.Base(tmp)
		if path.Dir(tmp) != path.Dir(p) || !strings.HasPrefix(name, ".") || !strings.Contains(name, ".wirefs-") ||
			len(name) > 255 || !utf8.ValidString(name) {
			t.Errorf("TempName(%q) = %q", p, tmp)
		}
		if TempName(p) == tmp {
			t.Errorf("TempName(%q) gave %q twice", p, tmp)
		}
	}
}
