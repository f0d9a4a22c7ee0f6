package testsrv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	_ "embed"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The user and password nginx asks for below /private/ (HTTP basic auth).
const (
	NginxUser     = "wirefs"
	NginxPassword = "s3cret-for-tests"
)

// NginxOption changes how Nginx configures the server.
type NginxOption func(*nginxSetup)

type nginxSetup struct{ extra string }

// NginxRefuseHEAD makes nginx answer every HEAD request with 405 Method
// Not Allowed, as some application servers and object stores do.
func NginxRefuseHEAD() NginxOption {
	return func(s *nginxSetup) { s.extra += "if ($request_method = HEAD) { return 405; }\n" }
}

// Nginx starts the real nginx serving root with autoindex on 127.0.0.1 at a
// free port, plain HTTP or (tls) HTTPS with a throwaway self-signed
// certificate for 127.0.0.1 and localhost, whose pool it returns. Paths
// below /private/ ask for HTTP basic auth as NginxUser, NginxPassword.
// nginx is stopped when the test ends.
func Nginx(t testing.TB, root string, tls bool, opts ...NginxOption) (addr string, ca *x509.CertPool) {
	t.Helper()
	var setup nginxSetup
	for _, o := range opts {
		o(&setup)
	}
	bin := Need(t, "nginx")
	dir := t.TempDir()

	// {PLAIN} keeps the test free of crypt(3); nginx accepts it.
	nginxWriteFile(t, filepath.Join(dir, "htpasswd"), NginxUser+":{PLAIN}"+NginxPassword+"\n")
	ssl := ""
	var certs string
	if tls {
		ca = nginxCert(t, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
		ssl = " ssl"
		certs = fmt.Sprintf("ssl_certificate %s/cert.pem;\n\t\tssl_certificate_key %s/key.pem;", dir, dir)
	}
	port := startOnFreePort(t, func(port int) error {
		// Every path nginx writes is in dir, so it runs without
		// touching /var and several can run at once. master_process
		// off keeps one process that stays the user running the test
		// (no switch to "nobody", who could not read a 0700 temporary
		// directory).
		conf := fmt.Sprintf(`master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 256; }
http {
	access_log %[1]s/access.log;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	types { text/html html; text/plain txt; }
	default_type application/octet-stream;
	server {
		listen 127.0.0.1:%[2]d%[6]s;
		server_name localhost;
		%[3]s
		root %[4]s;
		autoindex on;
		%[5]s
		location /private/ {
			auth_basic "wirefs tests";
			auth_basic_user_file %[1]s/htpasswd;
		}
	}
}
`, dir, port, certs, root, setup.extra, ssl)
		nginxWriteFile(t, filepath.Join(dir, "nginx.conf"), conf)
		cmd := exec.Command(bin, "-p", dir, "-e", filepath.Join(dir, "error.log"),
			"-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;")
		cmd.Dir = dir
		return serve(t, cmd, port, filepath.Join(dir, "error.log"))
	})
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), ca
}

// PythonHTTP starts `python3 -m http.server` serving root on 127.0.0.1 at a
// free port: a peer whose listings give names only and which ignores
// Range headers (Python before 3.14). It is stopped when the test ends.
func PythonHTTP(t testing.TB, root string) (addr string) {
	t.Helper()
	return servePython(t, func(port string) []string {
		return []string{"-m", "http.server", "--bind", "127.0.0.1", "--directory", root, port}
	})
}

//go:embed testdata/http_nohead.py
var httpNoHEAD string

// PythonHTTPRefusingHEAD is PythonHTTP with a handler that answers HEAD
// with 501 Not Implemented (testdata/http_nohead.py), as servers that
// implement GET only do.
func PythonHTTPRefusingHEAD(t testing.TB, root string) (addr string) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "http_nohead.py")
	nginxWriteFile(t, script, httpNoHEAD)
	return servePython(t, func(port string) []string { return []string{script, "127.0.0.1", port, root} })
}

// servePython runs python3 with the arguments args gives for a free port
// of 127.0.0.1, logging to a temporary file, until the test ends.
func servePython(t testing.TB, args func(port string) []string) (addr string) {
	t.Helper()
	bin := Need(t, "python3")
	logFile := filepath.Join(t.TempDir(), "http.server.log")
	port := startOnFreePort(t, func(port int) error {
		cmd := exec.Command(bin, args(strconv.Itoa(port))...)
		f, err := os.Create(logFile)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close() // cmd has its own copy
		cmd.Stdout, cmd.Stderr = f, f
		return serve(t, cmd, port, logFile)
	})
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// serve starts cmd, a server of TCP port of 127.0.0.1, waits until it
// listens there, and stops it when the test ends. An error says why it
// does not (errPortTaken: another process bound the port first), with
// logFile, where it logs. Any TCP server will do: vsftpd.go uses it too.
func serve(t testing.TB, cmd *exec.Cmd, port int, logFile string) error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %v", cmd.Path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	// Its own socket, not a connection accepted by whoever else may
	// have bound the port first.
	deadline := time.Now().Add(10 * time.Second)
	for !listensOn(cmd.Process.Pid, port) {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			log, _ := os.ReadFile(logFile)
			if bindFailed(string(log)) {
				return fmt.Errorf("%s could not bind port %d: %w:\n%s", cmd.Path, port, errPortTaken, log)
			}
			return fmt.Errorf("%s exited (%v) before listening on port %d:\n%s", cmd.Path, err, port, log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			return fmt.Errorf("%s does not listen on port %d after 10s:\n%s", cmd.Path, port, log)
		}
	}
	return nil
}

// nginxCert writes a throwaway ECDSA certificate for 127.0.0.1 and
// localhost and its key as PEM files and returns a pool trusting it
// (also FTPS's certificate in vsftpd.go).
func nginxCert(t testing.TB, certFile, keyFile string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "wirefs test server"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	nginxWriteFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	nginxWriteFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

func nginxWriteFile(t testing.TB, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
