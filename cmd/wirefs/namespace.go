package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"wirefs/internal/cache"
	"wirefs/internal/config"
	"wirefs/internal/ns"
	"wirefs/internal/protocols"
	"wirefs/internal/provider/ctl"
	"wirefs/internal/provider/dns"
	"wirefs/internal/provider/ftp"
	"wirefs/internal/provider/netstream"
	"wirefs/internal/provider/portal"
	"wirefs/internal/provider/splicefs"
	"wirefs/internal/provider/vif"
	"wirefs/internal/remote"
	"wirefs/internal/resolve"
)

// nsConfig holds the settings of the namespace, shared by every door
// (mount, run).
type nsConfig struct {
	connectTimeout time.Duration
	dnsTTL         time.Duration
	dnsServer      string
	dnsTimeout     time.Duration
	cacheDir       string
	cacheSize      string
	configFile     string
	readTimeout    time.Duration
	tRead          time.Duration
	tWrite         time.Duration
	acceptNewKeys  bool
	ftpConnections int
	// prefetch (internal/cache/prefetch.go)
	prefetchRequests int
	prefetchDir      sizeFlag
	prefetchFile     sizeFlag
	readdirAhead     int
}

func (c *nsConfig) addFlags(fl *pflag.FlagSet) {
	fl.DurationVar(&c.connectTimeout, "connect-timeout", 30*time.Second, "give up connecting (TCP connect, server login) after `DURATION`")
	fl.DurationVar(&c.dnsTTL, "dns-ttl", 60*time.Second, "keep resolved names for `DURATION`")
	fl.StringVar(&c.dnsServer, "dns-server", "", "ask the DNS server at `ADDR[:PORT]` instead of /etc/resolv.conf's")
	fl.DurationVar(&c.dnsTimeout, "dns-timeout", resolve.DefaultTimeout, "fail a name's lookup (ETIMEDOUT) after `DURATION`")
	fl.StringVar(&c.cacheDir, "cache-dir", "", "cache remote files in `DIR` (default $XDG_CACHE_HOME/wirefs, ~/.cache/wirefs)")
	fl.StringVar(&c.cacheSize, "cache-size", "10g", "keep at most `SIZE` of clean data in the cache (k, m, g suffixes)")
	fl.StringVar(&c.configFile, "config", "", "read mount points from `FILE` (default $XDG_CONFIG_HOME/wirefs/mounts, ~/.config/wirefs/mounts)")
	fl.DurationVar(&c.readTimeout, "read-timeout", 30*time.Second, "fail a remote call (ETIMEDOUT) whose server makes no progress for `DURATION`")
	fl.DurationVar(&c.tRead, "t-read", 30*time.Second, "remote files: trust attributes and data for `DURATION` after validation")
	fl.DurationVar(&c.tWrite, "t-write", 0, "remote files: write back `DURATION` after close (0: before close returns)")
	fl.BoolVar(&c.acceptNewKeys, "accept-new-host-keys", false, "sftp: add unknown host keys to known_hosts (changed keys are always refused)")
	fl.IntVar(&c.ftpConnections, "ftp-connections", ftp.DefaultConnections, "ftp: at most `N` control connections per server, each carrying one transfer")
	fl.IntVar(&c.prefetchRequests, "prefetch-requests", cache.DefaultPrefetchRequests, "remote files: at most `N` prefetch requests in flight per server (0: no prefetch)")
	c.prefetchDir = cache.DefaultPrefetchDir
	fl.Var(&c.prefetchDir, "prefetch-dir", "remote files: fetch ahead up to `SIZE` of a listed directory's files once a program reads one")
	c.prefetchFile = cache.DefaultPrefetchFile
	fl.Var(&c.prefetchFile, "prefetch-file", "remote files: fetch ahead only files of at most `SIZE`")
	fl.IntVar(&c.readdirAhead, "readdir-ahead", cache.DefaultReaddirAhead, "remote files: list up to `N` subdirectories ahead of a program's listing")
}

// daemonNamespace is the namespace and the caches a signal can drop.
type daemonNamespace struct {
	ns       *ns.Namespace
	resolver *resolve.Resolver
	files    *onUse[*cache.Cache]
	vifs     *onUse[*vif.Provider] // vif/ and proc/: seed 003's VIFs
	splices  *splicefs.Provider    // splice/: seed 002's splices
	portals  *portal.Provider      // the mounts file's portal lines
	// roots are the top-level names of remote files: the protocol roots
	// and the user's mount points (the catcher shows them at "/" too).
	roots []string
	// kernel drops what a door's kernel side cached; set once a door runs.
	mu     sync.Mutex
	kernel func()
}

// onUse is a part of the namespace started on its first use: opening the
// cache directory (locks, recovery of its slots) and the VIF provider's
// start (netlink, cgroups, leftovers) cost a short command such as
// "wirefs splice FILE tcp/HOST:PORT" a few milliseconds that it never
// needs.
type onUse[T any] struct {
	mu      sync.Mutex
	start   func() (T, error)
	v       T
	err     error
	started bool
}

func (o *onUse[T]) get() (T, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.started {
		o.v, o.err = o.start()
		o.started = true
	}
	return o.v, o.err
}

// ifStarted is the part if it has been started (and did not fail).
func (o *onUse[T]) ifStarted() (T, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.v, o.started && o.err == nil
}

// mountOnUse mounts at prefix the directory of part, started on the first
// resolution through prefix.
func mountOnUse(n *ns.Namespace, prefix string, part *onUse[ns.Dir]) {
	n.MountLazy(prefix, func() (ns.Node, error) { return part.get() })
}

// buildNamespace mounts the providers at their implicit roots (one per
// protocol of reg) and the user's mount points from the config file, and
// starts the cache and the VIF provider: a daemon finds a cache directory
// it cannot use, and leftovers of VIFs, when it starts.
func buildNamespace(c nsConfig, reg *protocols.Registry, log *slog.Logger) (*daemonNamespace, error) {
	d, err := lazyNamespace(c, reg, log)
	if err != nil {
		return nil, err
	}
	d.vifs.get()
	if _, err := d.files.get(); err != nil {
		d.close(log)
		return nil, err
	}
	return d, nil
}

// lazyNamespace is buildNamespace with the cache and the VIF provider
// started on first use (wirefs splice: most splices use neither).
func lazyNamespace(c nsConfig, reg *protocols.Registry, log *slog.Logger) (*daemonNamespace, error) {
	// Without a home (a service with no $HOME) the network still works:
	// remote files just find no ~/.ssh, ~/.netrc or mount-point file.
	home, _ := os.UserHomeDir()
	limit, err := config.ParseSize(c.cacheSize)
	if err != nil {
		return nil, fmt.Errorf("--cache-size %q: %v", c.cacheSize, err)
	}
	for _, n := range []struct {
		flag string
		v    int
	}{{"--prefetch-requests", c.prefetchRequests}, {"--readdir-ahead", c.readdirAhead}} {
		if n.v < 0 || n.v > 4096 {
			return nil, fmt.Errorf("%s %d: not in 0..4096", n.flag, n.v)
		}
	}
	if c.ftpConnections < 1 || c.ftpConnections > config.MaxFTPConnections {
		return nil, fmt.Errorf("--ftp-connections %d: not in 1..%d", c.ftpConnections, config.MaxFTPConnections)
	}
	res, err := c.resolver()
	if err != nil {
		return nil, err
	}
	var table config.Table
	file, required := c.configFile, c.configFile != ""
	if file == "" && (home != "" || os.Getenv("XDG_CONFIG_HOME") != "") {
		file = config.DefaultFile(home)
	}
	if file != "" {
		table, err = config.Load(file, required, reg)
		var unreadable *fs.PathError
		if err != nil && !required && errors.As(err, &unreadable) {
			// The default file of a home that is not ours (sudo -u nobody
			// keeps HOME=/root): the network works, without mount points.
			log.Warn("the mounts file cannot be read; no mount points", "file", file, "err", unreadable.Err)
			err = nil
		}
		if err != nil {
			return nil, err
		}
	}

	streams := netstream.New(res, c.connectTimeout, log)
	d := &daemonNamespace{ns: ns.New(), resolver: res}
	d.files = &onUse[*cache.Cache]{start: func() (*cache.Cache, error) { return openCache(c.cacheDir, limit, log) }}
	d.ns.Mount("tcp", streams.TCP())
	d.ns.Mount("udp", streams.UDP())
	d.ns.Mount("dns", dns.Dir(res))
	d.ns.Mount(".wirefs", ctl.Dir(streams.Live, d.dropCaches, d.writeCacheStatus))
	d.splices = splicefs.New(d.ns, log)
	d.ns.Mount("splice", d.splices.Dir())
	d.vifs = &onUse[*vif.Provider]{start: func() (*vif.Provider, error) { return newVIF(log), nil }}
	for prefix, dir := range map[string]func(*vif.Provider) ns.Dir{"vif": (*vif.Provider).VIFDir, "proc": (*vif.Provider).ProcDir} {
		mountOnUse(d.ns, prefix, &onUse[ns.Dir]{start: func() (ns.Dir, error) {
			v, _ := d.vifs.get() // never fails: a provider without rights is read-only
			return dir(v), nil
		}})
	}

	cli := c.options()
	// The remote roots of one protocol and the mount points that share
	// its options share its sessions, made with the cache.
	remoteRoot := func(name string, p protocols.Protocol, o config.Options) *onUse[ns.Dir] {
		return &onUse[ns.Dir]{start: func() (ns.Dir, error) {
			files, err := d.files.get()
			if err != nil {
				return nil, err
			}
			return files.Servers(name, p.Dial, remoteOptions(home, p, o, log), cacheOptions(p, o, table.Files)), nil
		}}
	}
	servers := map[string]*onUse[ns.Dir]{}
	for _, p := range reg.All() {
		servers[p.Scheme] = remoteRoot(p.Scheme, p, cli)
		mountOnUse(d.ns, p.Scheme, servers[p.Scheme])
		d.roots = append(d.roots, p.Scheme)
	}
	for _, m := range table.Mounts {
		// A mount with options of its own gets sessions of its own.
		root := servers[m.Root.Scheme]
		if !m.Opts.Empty() {
			p, _ := reg.Lookup(m.Root.Scheme) // the parser checked it
			root = remoteRoot(m.Root.Scheme+"@"+m.Prefix, p, m.Opts.Over(cli))
		}
		mountOnUse(d.ns, m.Prefix, &onUse[ns.Dir]{start: func() (ns.Dir, error) {
			dir, err := root.get()
			if err != nil {
				return nil, err
			}
			return ns.Alias(dir, m.Root.Server+m.Root.Path), nil
		}})
		d.roots = append(d.roots, m.Prefix)
		log.Debug("mount point", "prefix", "/"+m.Prefix, "root", m.Root.String(), "line", m.Line)
	}
	d.portals = portal.New(log, portal.Grace)
	for _, p := range table.Portals {
		node, err := portalNode(p, d.portals, streams)
		if err != nil {
			d.portals.Close()
			return nil, fmt.Errorf("%s: line %d: portal /%s: %v", file, p.Line, p.Prefix, err)
		}
		d.ns.Mount(p.Prefix, node)
		log.Debug("portal", "prefix", "/"+p.Prefix, "provider", p.Provider, "line", p.Line)
	}
	return d, nil
}

// openCache opens the cache of remote files in dir, or in the user's
// cache directory when dir is "".
func openCache(dir string, limit int64, log *slog.Logger) (*cache.Cache, error) {
	explicit := dir != ""
	if !explicit {
		base, err := os.UserCacheDir()
		if err != nil {
			base = filepath.Join(os.TempDir(), fmt.Sprintf("wirefs-%d", os.Getuid()))
		}
		dir = filepath.Join(base, "wirefs")
	}
	files, err := cache.New(dir, limit, log)
	if err != nil && !explicit {
		// A user whose home cannot be written (nobody) still gets the
		// network; remote files are then cached in a fresh private
		// directory, whose dirty data a crash would lose.
		tmp, terr := os.MkdirTemp("", "wirefs-cache-")
		if terr == nil {
			log.Warn("the cache directory cannot be used; caching remote files in a temporary directory", "dir", dir, "err", err, "instead", tmp)
			files, err = cache.New(tmp, limit, log)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cache %s: %v", dir, err)
	}
	files.OnBackground(backgroundProcs)
	return files, nil
}

// resolver is the resolver the options ask for.
func (c nsConfig) resolver() (*resolve.Resolver, error) {
	if c.dnsTimeout <= 0 {
		return nil, fmt.Errorf("--dns-timeout %v: must be more than 0", c.dnsTimeout)
	}
	res := resolve.New(c.dnsTTL)
	res.Timeout = c.dnsTimeout
	if c.dnsServer != "" {
		server, err := resolve.ParseServer(c.dnsServer)
		if err != nil {
			return nil, fmt.Errorf("--dns-server: %v", err)
		}
		res.Lookup = resolve.ServerLookup(server)
	}
	return res, nil
}

// portalNode is the node of a portal line. A tcp or udp portal is the
// netstream provider's node of its name, so it behaves, fails and is
// listed exactly as that name under tcp/ or udp/; the name is parsed now
// (a malformed one fails the mount), nothing connects before an open.
func portalNode(p config.Portal, portals *portal.Provider, streams *netstream.Provider) (ns.Node, error) {
	switch p.Provider {
	case "exec":
		return portals.Exec(p)
	case "fs":
		return portals.FS(p.Args[0])
	case "tcp":
		return streams.TCP().Lookup(context.Background(), p.Args[0])
	default: // udp: the parser knows no other
		return streams.UDP().Lookup(context.Background(), p.Args[0])
	}
}

// options are the command line's settings of remote files: the lowest
// level of the options model (config.Options.Over), where every option
// that has a flag is given (its default, if nothing else).
func (c nsConfig) options() config.Options {
	return config.Options{TRead: &c.tRead, TWrite: &c.tWrite, ReadTimeout: &c.readTimeout,
		ConnectTimeout: &c.connectTimeout, AcceptNewHostKeys: &c.acceptNewKeys, FTPConnections: &c.ftpConnections,
		PrefetchRequests: &c.prefetchRequests, PrefetchDir: (*int64)(&c.prefetchDir),
		PrefetchFile: (*int64)(&c.prefetchFile), ReaddirAhead: &c.readdirAhead}
}

// cacheOptions are the cache settings of sessions of protocol p with the
// options o (the command line's, or a mount line's over them), and the
// per-file lines of the protocol (keyed "SERVER/PATH", "SERVER/PATH/" for
// a subtree), which the cache puts over o file by file.
func cacheOptions(p protocols.Protocol, o config.Options, perFile []config.File) cache.Options {
	co := cache.Options{TRead: o.TRead, TWrite: o.TWrite, AgePercent: o.AgePercent, DirTTL: o.DirTTL,
		ReadAhead: o.ReadAhead, ReadOnly: config.Value(o.ReadOnly) || !p.Writable, Files: map[string]cache.FileOptions{},
		PrefetchRequests: o.PrefetchRequests, PrefetchDir: o.PrefetchDir, PrefetchFile: o.PrefetchFile, ReaddirAhead: o.ReaddirAhead}
	for _, f := range perFile {
		if f.Root.Scheme != p.Scheme {
			continue
		}
		key := f.Root.Server + f.Root.Path
		if f.Subtree && !strings.HasSuffix(key, "/") {
			key += "/"
		}
		co.Files[key] = cache.FileOptions{TRead: f.Opts.TRead, TWrite: f.Opts.TWrite}
	}
	return co
}

// remoteOptions are the session settings of protocol p with the options o.
func remoteOptions(home string, p protocols.Protocol, o config.Options, log *slog.Logger) remote.Options {
	return remote.Options{Log: log, ConnectTimeout: config.Value(o.ConnectTimeout), Timeout: config.Value(o.ReadTimeout),
		Home: home, TLS: p.TLS, AcceptNewHostKeys: config.Value(o.AcceptNewHostKeys), Askpass: askpass,
		Connections: config.Value(o.FTPConnections)}
}

// askpass asks the program named by $WIREFS_ASKPASS (or $SSH_ASKPASS), as
// ssh does: the prompt is its argument, the secret its output. Without
// one, nothing is asked: the daemon has no terminal.
func askpass(prompt string) (string, error) {
	prog := os.Getenv("WIREFS_ASKPASS")
	if prog == "" {
		prog = os.Getenv("SSH_ASKPASS")
	}
	if prog == "" {
		return "", errors.New("no password source (set WIREFS_ASKPASS to a program that prints it, or use ~/.netrc or ssh keys)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, prog, prompt).Output()
	if err != nil {
		return "", fmt.Errorf("askpass %s: %v", prog, err)
	}
	return strings.TrimRight(string(out), "\r\n"), nil
}

// onDrop registers what a door's kernel side must forget when caches drop.
func (d *daemonNamespace) onDrop(kernel func()) {
	d.mu.Lock()
	d.kernel = kernel
	d.mu.Unlock()
}

// dropCaches forgets every cached answer (SIGHUP, .wirefs/drop-caches):
// names, remote files' attributes, listings and validations, and what the
// kernel cached of them.
func (d *daemonNamespace) dropCaches() {
	d.resolver.Flush()
	if files, ok := d.files.ifStarted(); ok {
		files.Drop()
	}
	d.mu.Lock()
	kernel := d.kernel
	d.mu.Unlock()
	if kernel != nil {
		kernel()
	}
}

// close writes back what is pending and ends remote sessions.
func (d *daemonNamespace) close(log *slog.Logger) {
	// A step that holds up the daemon's exit says so: a test harness
	// waits seconds for the daemon after the unmount, then fails.
	timed := func(what string, fn func()) {
		began := time.Now()
		fn()
		if took := time.Since(began); took > time.Second {
			log.Warn("shutting down: slow step", "step", what, "took", took)
		}
	}
	timed("splices", func() { d.splices.Close() }) // before the ends' providers
	if d.portals != nil {
		timed("portals", func() { d.portals.Close() })
	}
	if files, ok := d.files.ifStarted(); ok {
		timed("cache", func() {
			if err := files.Close(); err != nil {
				log.Warn("closing the cache", "err", err)
			}
		})
	}
	if vifs, ok := d.vifs.ifStarted(); ok {
		timed("VIFs", func() {
			if err := vifs.Close(); err != nil {
				log.Warn("removing the VIFs", "err", err)
			}
		})
	}
}

// writeCacheStatus is .wirefs/status's report of the cache (which it
// starts: the file says what the cache holds).
func (d *daemonNamespace) writeCacheStatus(w io.Writer) error {
	files, err := d.files.get()
	if err != nil {
		return err
	}
	return files.WriteStatus(w)
}
