package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"wirefs/internal/config"
	"wirefs/internal/door/catch"
	"wirefs/internal/protocols"
)

const runLong = `Run CMD, and every process it starts, with the wirefs namespace visible at
PREFIX (default /net): "cat /net/tcp/host:80", "exec 3<>/net/tcp/8000",
"cat /net/dns/localhost". Nothing is mounted where the user can see it and
no privilege is needed (seccomp user notification, Linux 5.14 or newer).
wirefs run exits with CMD's status (128+N if signal N killed it). Options
end at CMD.

The remote roots appear at the top level too (/http/HOST/PATH,
/sftp/USER@HOST/PATH, /9p/..., /ftp/...), and so do the mount points of
the config file, and URL names work as file names: "cat http://host/x",
"cp f sftp://me@host/dir/".

It is not a sandbox. Setuid programs run without their privilege under it.
chdir into the namespace works (getcwd shows the namespace name). Names
relative to a directory descriptor (openat(fd, ...)) are not caught unless
the descriptor came from the namespace. Manual: docs/wirefs.md.
`

// runCommand is wirefs run [options] -- CMD ARGS…: CMD and its
// descendants see the namespace at --prefix through the catcher door,
// with no mount visible and no privilege. wirefs exits with CMD's status.
func runCommand(reg *protocols.Registry) *cobra.Command {
	var cf catcherFlags
	var cfg nsConfig
	var syncWake, timing, fastPath bool
	c := setup(&cobra.Command{
		Use:   "run [options] -- CMD [ARGS...]",
		Short: "run CMD with /net: no mount, no root",
		Long:  runLong,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(c, "no command given")
			}
			return nil
		},
		Annotations: map[string]string{annotationNoInterspersed: "yes"},
		RunE: func(_ *cobra.Command, args []string) error {
			log, closeLog, err := cf.log()
			if err != nil {
				return err
			}
			defer closeLog()
			d, err := buildNamespace(cfg, reg, log)
			if err != nil {
				return fmt.Errorf("run: %w", err)
			}
			o := catch.Options{
				Prefix: cf.prefix, Args: args, Log: log, NoSyncWakeUp: !syncWake, NoFastPath: !fastPath,
				Roots: d.roots, URLName: urlName(reg),
			}
			if timing {
				o.Timing = os.Stderr
			}
			status, err := catch.Run(d.ns, o)
			d.close(log)
			if err != nil {
				return fmt.Errorf("run: %w", err)
			}
			return exitStatus(status)
		},
	})
	fl := c.Flags()
	fl.SetInterspersed(false)
	cf.add(c)
	fl.BoolVar(&syncWake, "sync-wake-up", true, "use the synchronous wake-up of Linux 6.6 (turn off only to measure it)")
	fl.MarkHidden("sync-wake-up") // a measurement switch
	fl.BoolVar(&timing, "timing", false, "print at exit where trapped calls spent their time in the supervisor (bench/catch.sh)")
	fl.MarkHidden("timing")
	fl.BoolVar(&fastPath, "fast-path", true, "preload the library that lets local path calls of dynamic programs through untrapped (turn off only to measure it)")
	fl.MarkHidden("fast-path")
	cfg.addFlags(fl)
	return c
}

// urlName maps a URL name of a protocol of schemes
// ("sftp://me@host/dir/f") to its namespace name ("sftp/me@host/dir/f").
func urlName(schemes config.Schemes) func(name string) (string, bool) {
	return func(name string) (string, bool) {
		r, err := config.ParseRoot(name, schemes)
		if err != nil {
			return "", false
		}
		if r.Path == "/" {
			return r.Scheme + "/" + r.Server, true
		}
		return r.Scheme + "/" + r.Server + r.Path, true
	}
}

// catcherFlags are the options run and attach share besides the
// namespace's.
type catcherFlags struct {
	prefix  string
	verbose bool
	logFile string
	opts    optionsFlag
}

func (c *catcherFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&c.prefix, "prefix", "/net", "show the namespace at `DIR` (absolute path)")
	fl.BoolVarP(&c.verbose, "verbose", "v", false, "log debug messages to stderr")
	fl.StringVar(&c.logFile, "log", "", "append the log to `FILE` instead of stderr")
	c.opts = optionsFlag{fs: fl}
	fl.VarP(&c.opts, "options", "o", "set `OPT[,OPT...]`: the options here spelled with _ (t_read=10s)")
	cmd.RegisterFlagCompletionFunc("options", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return optionNames(fl, false), cobra.ShellCompDirectiveNoSpace
	})
}

// log is the log of run and attach. It must not mix with the program's
// output: by default only wirefs's own failures reach stderr.
func (c *catcherFlags) log() (*slog.Logger, func(), error) {
	var w io.Writer = os.Stderr
	level := slog.LevelError
	closeLog := func() {}
	if c.logFile != "" {
		f, err := appendLog(c.logFile)
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
