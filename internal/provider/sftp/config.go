package sftp

import (
	"bytes"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/kevinburke/ssh_config"

	"wirefs/internal/ns"
	"wirefs/internal/remote/addr"
)

// hostConfig is what one server name means once ~/.ssh/config is applied.
type hostConfig struct {
	alias    string // the host as named in the namespace
	hostname string // the host to connect to (HostName)
	port     string
	user     string
	// identityFiles are the keys to offer, ~ expanded; explicit is true
	// when they come from IdentityFile lines (a missing one is then
	// worth a log line, a missing default is not).
	identityFiles  []string
	explicit       bool
	identitiesOnly bool
	knownHosts     []string // files to check, the first is where new keys go
	strict         string   // StrictHostKeyChecking, lower case ("" = default)
	hashKnownHosts bool
	passwordTries  int // NumberOfPasswordPrompts
}

// addr is where to connect.
func (h *hostConfig) addr() string { return net.JoinHostPort(h.hostname, h.port) }

// name is user@alias, how messages name the session.
func (h *hostConfig) name() string { return h.user + "@" + h.alias }

// resolveHost applies home/.ssh/config to server. Values given in the
// server name win over the file, as on the ssh command line.
func resolveHost(server, home string) (*hostConfig, error) {
	sv, err := addr.Parse(server)
	if err != nil {
		return nil, ns.Errorf(syscall.ENOENT, "%v", err)
	}
	login, host, port := sv.User, sv.Host, sv.Port
	cfg := &ssh_config.Config{}
	if data, err := os.ReadFile(filepath.Join(home, ".ssh", "config")); err == nil {
		if cfg, err = ssh_config.DecodeBytes(data); err != nil {
			return nil, ns.Errorf(syscall.EIO, "%s: %v", filepath.Join(home, ".ssh", "config"), err)
		}
	} else if !os.IsNotExist(err) {
		return nil, ns.Errorf(syscall.EIO, "%v", err)
	}
	get := func(key string) string {
		v, _ := cfg.Get(host, key)
		return strings.TrimSpace(v)
	}
	h := &hostConfig{alias: host, hostname: host, port: port, user: login}
	if h.user == "" {
		h.user = get("User")
	}
	if h.user == "" {
		h.user = currentUser()
	}
	if h.port == "" {
		h.port = get("Port")
	}
	if h.port == "" {
		h.port = strconv.Itoa(DefaultPort)
	}
	tok := tokens{home: home, user: currentUser(), remoteUser: h.user, host: host, port: h.port}
	if v := get("HostName"); v != "" {
		h.hostname = tok.expand(v)
	}
	tok.host = h.hostname

	files, _ := cfg.GetAll(host, "IdentityFile")
	for _, f := range files {
		h.identityFiles = append(h.identityFiles, tok.expand(strings.TrimSpace(f)))
	}
	h.explicit = len(h.identityFiles) > 0
	if !h.explicit {
		for _, f := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			h.identityFiles = append(h.identityFiles, filepath.Join(home, ".ssh", f))
		}
	}
	h.identitiesOnly = strings.EqualFold(get("IdentitiesOnly"), "yes")

	h.knownHosts = []string{filepath.Join(home, ".ssh", "known_hosts")}
	for _, f := range strings.Fields(get("UserKnownHostsFile")) {
		if f = tok.expand(f); f != h.knownHosts[0] && f != "/dev/null" {
			h.knownHosts = append(h.knownHosts, f)
		}
	}
	h.strict = strings.ToLower(get("StrictHostKeyChecking"))
	h.hashKnownHosts = strings.EqualFold(get("HashKnownHosts"), "yes")
	h.passwordTries = 3
	if n, err := strconv.Atoi(get("NumberOfPasswordPrompts")); err == nil && n >= 0 {
		h.passwordTries = n
	}
	return h, nil
}

// currentUser is the name of the user running wirefs, ssh's default login.
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// tokens are the values ssh_config(5) substitutes in file names.
type tokens struct{ home, user, remoteUser, host, port string }

// expand replaces a leading ~ (the caller's Home, never the real $HOME)
// and the tokens %d %u %r %h %p %%. Unknown tokens are kept as written.
func (t tokens) expand(s string) string {
	if s == "~" {
		s = t.home
	} else if strings.HasPrefix(s, "~/") {
		s = t.home + s[1:] // as ssh does: no cleaning
	}
	if !strings.Contains(s, "%") {
		return s
	}
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		if s[i] != '%' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'd':
			b.WriteString(t.home)
		case 'u':
			b.WriteString(t.user)
		case 'r':
			b.WriteString(t.remoteUser)
		case 'h':
			b.WriteString(t.host)
		case 'p':
			b.WriteString(t.port)
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// tilde shortens home to ~ in a path shown to the user.
func tilde(home, p string) string {
	if home != "" && strings.HasPrefix(p, home+"/") {
		return "~" + p[len(home):]
	}
	return p
}

// DefaultPort is the port of a server name without one, when
// ~/.ssh/config gives none (the protocol registry's too).
const DefaultPort = 22
