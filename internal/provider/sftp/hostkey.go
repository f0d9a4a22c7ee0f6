package sftp

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// hostKeyError is a refused host key. The handshake error wraps it, so
// that Dial can tell a key problem from an authentication failure.
type hostKeyError struct{ msg string }

func (e *hostKeyError) Error() string { return e.msg }

// hostKeys checks server keys against the known_hosts files of h.
type hostKeys struct {
	h      *hostConfig
	home   string
	accept bool // add unknown keys (never changed ones)
	check  ssh.HostKeyCallback
	log    *slog.Logger
}

func newHostKeys(h *hostConfig, home string, acceptNew bool, log *slog.Logger) (*hostKeys, error) {
	var files []string
	for _, f := range h.knownHosts {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	// An empty database when no file exists yet: every key is unknown.
	check := func(string, net.Addr, ssh.PublicKey) error { return &knownhosts.KeyError{} }
	if len(files) > 0 {
		var err error
		if check, err = knownhosts.New(files...); err != nil {
			return nil, err
		}
	}
	// StrictHostKeyChecking=no would let ssh accept changed keys too;
	// wirefs never does, so it means accept-new here.
	accept := acceptNew || h.strict == "accept-new" || h.strict == "no" || h.strict == "off"
	return &hostKeys{h: h, home: home, accept: accept, check: check, log: log}, nil
}

// algorithms are the host key algorithms to ask for: those of the keys
// already known for the host, so that a server with several keys shows
// the known one rather than looking "changed". nil lets the server pick.
func (k *hostKeys) algorithms() []string {
	probe, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	var ke *knownhosts.KeyError
	if err := k.check(k.h.addr(), &net.TCPAddr{}, probe); !errors.As(err, &ke) {
		return nil
	}
	var algos []string
	for _, want := range ke.Want {
		switch t := want.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			algos = append(algos, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			algos = append(algos, t)
		}
	}
	return algos
}

// callback is the ssh.HostKeyCallback: known keys pass, unknown keys are
// added when allowed and refused otherwise, changed keys are always
// refused.
func (k *hostKeys) callback(hostname string, remote net.Addr, key ssh.PublicKey) error {
	err := k.check(hostname, remote, key)
	var ke *knownhosts.KeyError
	var revoked *knownhosts.RevokedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &revoked):
		return &hostKeyError{fmt.Sprintf("the host key %s is marked @revoked in %s:%d; refusing to connect",
			fingerprint(key), tilde(k.home, revoked.Revoked.Filename), revoked.Revoked.Line)}
	case errors.As(err, &ke) && len(ke.Want) > 0:
		var known []string
		for _, w := range ke.Want {
			known = append(known, fmt.Sprintf("%s (%s:%d)", fingerprint(w.Key), tilde(k.home, w.Filename), w.Line))
		}
		return &hostKeyError{fmt.Sprintf("WARNING: THE HOST KEY OF %s HAS CHANGED: the server shows %s, "+
			"known_hosts has %s. Someone may be impersonating the server (or its key was replaced). "+
			"Refusing to connect; if the change is expected, remove the old line and connect again",
			hostname, fingerprint(key), strings.Join(known, ", "))}
	case errors.As(err, &ke):
		if !k.accept {
			return &hostKeyError{fmt.Sprintf("the host key of %s is unknown (%s); refusing to connect. "+
				"Check the fingerprint, then accept it with the accept-new-host-keys option "+
				"(StrictHostKeyChecking accept-new) or add it to %s",
				hostname, fingerprint(key), tilde(k.home, k.h.knownHosts[0]))}
		}
		return k.add(hostname, key)
	default:
		return &hostKeyError{fmt.Sprintf("cannot check the host key: %v", err)}
	}
}

// add appends key for hostname to the first known_hosts file, hashed when
// HashKnownHosts says so.
func (k *hostKeys) add(hostname string, key ssh.PublicKey) error {
	host := knownhosts.Normalize(hostname)
	if k.h.hashKnownHosts {
		host = knownhosts.HashHostname(host)
	}
	file := k.h.knownHosts[0]
	line := knownhosts.Line([]string{host}, key) + "\n"
	err := os.MkdirAll(filepath.Dir(file), 0o700)
	if err == nil {
		var f *os.File
		if f, err = os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			_, err = f.WriteString(line)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		return &hostKeyError{fmt.Sprintf("cannot record the new host key: %v", err)}
	}
	k.log.Warn("sftp: accepted a new host key", "server", k.h.name(), "host", hostname,
		"key", fingerprint(key), "file", tilde(k.home, file))
	return nil
}

func fingerprint(key ssh.PublicKey) string {
	return key.Type() + " " + ssh.FingerprintSHA256(key)
}
