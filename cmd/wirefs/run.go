package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"wirefs/internal/config"
	"wirefs/internal/door/catch"
)

// cmdRun is `wirefs run [options] -- CMD ARGS…`: CMD and its descendants
// see the namespace at --prefix through the catcher door, with no mount
// visible and no privilege. It exits with CMD's status.
func cmdRun(args []string) error {
	fl := flag.NewFlagSet("run", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprint(fl.Output(), `Usage: wirefs run [options] -- CMD [ARGS...]

Run CMD, and every process it starts, with the wirefs namespace visible at
PREFIX (default /net): "cat /net/tcp/host:80", "exec 3<>/net/tcp/8000",
"cat /net/dns/localhost". Nothing is mounted where the user can see it and
no privilege is needed (seccomp user notification, Linux 5.14 or newer).
wirefs run exits with CMD's status (128+N if signal N killed it).

The remote roots appear at the top level too (/http/HOST/PATH,
/sftp/USER@HOST/PATH, /9p/..., /ftp/...), and so do the mount points of
the config file, and URL names work as file names: "cat http://host/x",
"cp f sftp://me@host/dir/".

It is not a sandbox. Setuid programs run without their privilege under it.
chdir into the namespace leaves the program in a private directory of
wirefs (getcwd shows its name). Manual: docs/wirefs.md.

Options:
`)
		fl.PrintDefaults()
	}
	var cf catcherFlags
	cf.add(fl)
	syncWake := fl.Bool("sync-wake-up", true, "use the synchronous wake-up of Linux 6.6 (turn off only to measure it)")
	var cfg nsConfig
	cfg.addFlags(fl)
	if help, err := parseFlags(fl, args); help || err != nil {
		return err
	}
	if fl.NArg() == 0 {
		fl.Usage()
		return errors.New("run: no command given")
	}

	log, closeLog, err := cf.log()
	if err != nil {
		return err
	}
	defer closeLog()

	d, err := buildNamespace(cfg, log)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	status, err := catch.Run(d.ns, catch.Options{
		Prefix: cf.prefix, Args: fl.Args(), Log: log, NoSyncWakeUp: !*syncWake,
		Roots: d.roots, URLName: urlName,
	})
	d.close(log)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	os.Exit(status)
	return nil
}

// urlName maps a URL name ("sftp://me@host/dir/f") to its namespace name
// ("sftp/me@host/dir/f").
func urlName(name string) (string, bool) {
	r, err := config.ParseRoot(name)
	if err != nil {
		return "", false
	}
	if r.Path == "/" {
		return r.Scheme + "/" + r.Server, true
	}
	return r.Scheme + "/" + r.Server + r.Path, true
}

// catcherFlags are the options run and attach share besides the
// namespace's.
type catcherFlags struct {
	prefix  string
	verbose bool
	logFile string
}

func (c *catcherFlags) add(fl *flag.FlagSet) {
	fl.StringVar(&c.prefix, "prefix", "/net", "where the namespace appears (absolute path)")
	fl.BoolVar(&c.verbose, "v", false, "log debug messages to stderr")
	fl.StringVar(&c.logFile, "log", "", "append the log to this file instead of stderr")
}

// log is the log of run and attach. It must not mix with the program's
// output: by default only wirefs's own failures reach stderr.
func (c *catcherFlags) log() (*slog.Logger, func(), error) {
	var w io.Writer = os.Stderr
	level := slog.LevelError
	closeLog := func() {}
	if c.logFile != "" {
		f, err := os.OpenFile(c.logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, err
		}
		w, level, closeLog = f, slog.LevelInfo, func() { f.Close() }
	}
	if c.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	return log, closeLog, nil
}
