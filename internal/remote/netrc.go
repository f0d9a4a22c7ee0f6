package remote

import (
	"os"
	"path/filepath"
	"strings"
)

// Netrc is the login and password ~/.netrc gives for a host (the
// "default" entry when no machine matches); ok is false when it has none.
// A missing file, or no home, is not an error.
func Netrc(home, host string) (login, password string, ok bool, err error) {
	if home == "" {
		return "", "", false, nil // no home: no netrc (never ./.netrc)
	}
	data, err := os.ReadFile(filepath.Join(home, ".netrc"))
	if err != nil {
		if os.IsNotExist(err) {
			return "", "", false, nil
		}
		return "", "", false, err
	}
	login, password, ok = ParseNetrc(string(data), host)
	return login, password, ok, nil
}

// ParseNetrc finds host's entry in the text of a netrc file. Tokens are
// separated by white space; "macdef" bodies run to the next empty line
// and are skipped.
func ParseNetrc(text, host string) (login, password string, ok bool) {
	type entry struct{ login, password string }
	var found, def *entry
	var cur *entry
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		f := strings.Fields(lines[i])
		for j := 0; j < len(f); j++ {
			next := func() string {
				if j+1 < len(f) {
					j++
					return f[j]
				}
				return ""
			}
			switch f[j] {
			case "machine":
				cur = nil
				if next() == host && found == nil {
					found = &entry{}
					cur = found
				}
			case "default":
				cur = nil
				if def == nil {
					def = &entry{}
					cur = def
				}
			case "login":
				if v := next(); cur != nil {
					cur.login = v
				}
			case "password":
				if v := next(); cur != nil {
					cur.password = v
				}
			case "account":
				next()
			case "macdef":
				for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
					i++
				}
				j = len(f)
			}
		}
	}
	if found == nil {
		found = def
	}
	if found == nil {
		return "", "", false
	}
	return found.login, found.password, true
}
