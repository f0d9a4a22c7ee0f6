package sftp

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// auth builds the authentication methods of one connection attempt in
// ssh's order: agent keys and identity files (one "publickey" method:
// x/crypto tries each method name once), then password and
// keyboard-interactive through askpass. It remembers what it tried for
// the error message.
type auth struct {
	h       *hostConfig
	home    string
	log     *slog.Logger
	askpass func(prompt string) (string, error)
	// pause suspends the connection deadline while a person types.
	pause func(func() (string, error)) (string, error)

	mu    sync.Mutex
	tried []string
	agent net.Conn // closed by close once the handshake is over
}

func (a *auth) try(what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.tried {
		if t == what {
			return
		}
	}
	a.tried = append(a.tried, what)
}

// triedList is "agent, publickey ~/.ssh/id_ed25519, password".
func (a *auth) triedList() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.tried) == 0 {
		return "nothing: no agent, no key file, no way to ask for a password"
	}
	return strings.Join(a.tried, ", ")
}

func (a *auth) triedAny() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.tried) > 0
}

func (a *auth) close() {
	if a.agent != nil {
		a.agent.Close()
	}
}

func (a *auth) methods() []ssh.AuthMethod {
	m := []ssh.AuthMethod{ssh.PublicKeysCallback(a.signers)}
	if a.askpass == nil {
		return m
	}
	if a.h.passwordTries > 0 {
		m = append(m, ssh.RetryableAuthMethod(ssh.PasswordCallback(func() (string, error) {
			a.try("password")
			return a.ask(fmt.Sprintf("%s's password: ", a.h.name()))
		}), a.h.passwordTries))
	}
	m = append(m, ssh.KeyboardInteractive(func(name, instruction string, questions []string, echos []bool) ([]string, error) {
		if len(questions) > 0 {
			a.try("keyboard-interactive")
		}
		answers := make([]string, len(questions))
		for i, q := range questions {
			prompt := strings.TrimSpace(instruction + " " + q)
			ans, err := a.ask(fmt.Sprintf("%s: %s ", a.h.name(), prompt))
			if err != nil {
				return nil, err
			}
			answers[i] = ans
		}
		return answers, nil
	}))
	return m
}

func (a *auth) ask(prompt string) (string, error) {
	return a.pause(func() (string, error) { return a.askpass(prompt) })
}

// signers are the agent's keys, then those of the identity files. With
// IdentitiesOnly, agent keys are used only when they match a file's
// public key (file.pub). A file whose key the agent already offers is not
// loaded, so its passphrase is not asked for.
func (a *auth) signers() ([]ssh.Signer, error) {
	filePubs := make([][]byte, len(a.h.identityFiles))
	for i, f := range a.h.identityFiles {
		if b, err := os.ReadFile(f + ".pub"); err == nil {
			if pub, _, _, _, err := ssh.ParseAuthorizedKey(b); err == nil {
				filePubs[i] = pub.Marshal()
			}
		}
	}
	var out [][]byte
	var signers []ssh.Signer
	for _, k := range a.agentKeys() {
		if pub := k.PublicKey().Marshal(); !a.h.identitiesOnly || containsBytes(filePubs, pub) {
			signers, out = append(signers, k), append(out, pub)
		}
	}
	if len(signers) > 0 {
		a.try("agent")
	}
	for i, f := range a.h.identityFiles {
		if filePubs[i] != nil && containsBytes(out, filePubs[i]) {
			continue
		}
		if s := a.identity(f); s != nil {
			signers = append(signers, s)
		}
	}
	return signers, nil
}

// agentKeys are the keys of the ssh-agent at $SSH_AUTH_SOCK, if any. The
// connection stays open for signing until close.
func (a *auth) agentKeys() []ssh.Signer {
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" || a.agent != nil {
		return nil
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		a.log.Debug("sftp: ssh-agent unreachable", "err", err)
		return nil
	}
	a.agent = conn
	keys, err := agent.NewClient(conn).Signers()
	if err != nil {
		a.log.Debug("sftp: ssh-agent gives no keys", "err", err)
	}
	return keys
}

// identity loads one identity file, asking for the passphrase of an
// encrypted key; nil when it cannot be used.
func (a *auth) identity(file string) ssh.Signer {
	shown := tilde(a.home, file)
	data, err := os.ReadFile(file)
	if err != nil {
		if a.h.explicit || !os.IsNotExist(err) {
			a.log.Warn("sftp: cannot read identity file", "file", shown, "err", err)
		}
		return nil
	}
	signer, err := ssh.ParsePrivateKey(data)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) && a.askpass != nil {
		var pass string
		pass, err = a.ask(fmt.Sprintf("Enter passphrase for key '%s': ", shown))
		if err == nil {
			signer, err = ssh.ParsePrivateKeyWithPassphrase(data, []byte(pass))
		}
	}
	if err != nil {
		a.log.Warn("sftp: identity file not usable", "file", shown, "err", err)
		return nil
	}
	a.try("publickey " + shown)
	return signer
}

func containsBytes(list [][]byte, b []byte) bool {
	for _, x := range list {
		if bytes.Equal(x, b) {
			return true
		}
	}
	return false
}
