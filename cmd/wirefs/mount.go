package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	fusedoor "wirefs/internal/door/fuse"
	"wirefs/internal/protocols"
)

// readyFDEnv names the descriptor on which a daemonized child reports
// "ok" or the reason it failed to mount.
const readyFDEnv = "WIREFS_READY_FD"

// mountOptions are the options of wirefs mount.
type mountOptions struct {
	foreground bool
	verbose    bool
	allowOther bool
	logFile    string
	debugFUSE  bool
	ns         nsConfig
	protocols  *protocols.Registry
	flags      mountFlags
	opts       optionsFlag
}

const mountLong = `Mount the wirefs namespace at MOUNTPOINT, an existing directory. wirefs
mount returns when the mount is ready, leaving its daemon in the background,
and prints nothing on success. Options may come before or after MOUNTPOINT.

-o takes options as mount(8), fstab and sshfs give them: every option below
spelled with _ (-o allow_other,t_read=10s,cache_size=2g), and ro, rw,
noexec, exec. The options of mount(8) that concern others (_netdev, noauto,
nofail, user, defaults, x-*, comment=, suid, dev, the atime ones...) are
ignored, so "mount -t fuse.wirefs wirefs /net -o allow_other" and the fstab
line "wirefs /net fuse.wirefs allow_other,_netdev 0 0" work through
mount.fuse3, which runs "wirefs wirefs /net -o OPTIONS" (wirefs must be in
/usr/local/bin, /usr/bin or another directory of the default PATH).
`

// mountCommand is wirefs mount, whose options go to o.
func mountCommand(o *mountOptions, args []string) *cobra.Command {
	c := setup(&cobra.Command{
		Use:   "mount [options] MOUNTPOINT",
		Short: "mount the namespace (daemonizes)",
		Long:  mountLong,
		Args:  exactArgs(1, "one MOUNTPOINT"),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: func(_ *cobra.Command, pos []string) error { return o.mount(pos[0], args) },
	})
	fl := c.Flags()
	fl.BoolVarP(&o.foreground, "foreground", "f", false, "stay in the foreground, logging to stderr (or to --log FILE)")
	fl.BoolVarP(&o.verbose, "verbose", "v", false, "log debug messages")
	fl.BoolVar(&o.allowOther, "allow-other", false, "let other users use the mount (a user needs user_allow_other in /etc/fuse.conf)")
	o.ns.addFlags(fl)
	fl.StringVar(&o.logFile, "log", "", "append the daemon's log to `FILE` (default $XDG_STATE_HOME/wirefs/wirefs.log)")
	fl.BoolVar(&o.debugFUSE, "debug-fuse", false, "log every FUSE request (very verbose)")
	o.opts = optionsFlag{fs: fl, generic: o.flags.generic}
	fl.VarP(&o.opts, "options", "o", "set `OPT[,OPT...]` the way fstab does (see above)")
	c.RegisterFlagCompletionFunc("options", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return optionNames(fl, true), cobra.ShellCompDirectiveNoSpace
	})
	return c
}

// mount mounts at arg; args is the command line, which a daemon it starts
// gets again.
func (o *mountOptions) mount(arg string, args []string) error {
	if strings.HasPrefix(arg, "/dev/fd/") {
		// mount.fuse3's drop_privileges mounts by itself and passes the
		// descriptor; the FUSE door needs the mount point's path.
		return fmt.Errorf("mount %s: drop_privileges is not supported (setuid=USER is)", arg)
	}
	mnt, err := filepath.Abs(arg)
	if err != nil {
		return err
	}
	if st, err := os.Stat(mnt); err != nil || !st.IsDir() {
		return fmt.Errorf("mount: %s is not a directory", mnt)
	}
	homeFromPasswd()
	if !o.foreground && os.Getenv(readyFDEnv) == "" {
		return daemonize(args, o.logFile)
	}

	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	var logTo io.Writer = os.Stderr // a daemon's stderr is its log file already
	if o.foreground && o.logFile != "" {
		f, err := appendLog(o.logFile)
		if err != nil {
			return err
		}
		defer f.Close()
		logTo = f
	}
	log := slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)

	daemonProcs()
	d, err := buildNamespace(o.ns, o.protocols, log)
	if err != nil {
		ready(err)
		return err
	}
	defer d.close(log)
	srv, err := fusedoor.Mount(mnt, d.ns, fusedoor.Options{
		AllowOther: o.allowOther, AttrTimeout: time.Second, DebugFUSE: o.debugFUSE, Log: log,
	})
	if err == nil {
		if err = o.flags.apply(mnt); err != nil {
			srv.Unmount() // no one can be using it yet
			srv.Wait()
		}
	}
	if err != nil {
		err = fmt.Errorf("mount %s: %w", mnt, err)
	}
	ready(err)
	if err != nil {
		return err
	}
	d.onDrop(srv.DropKernelCaches)
	attrs := []any{"mountpoint", mnt, "pid", os.Getpid()}
	if len(o.opts.set) > 0 {
		attrs = append(attrs, "options", o.opts.String())
	}
	log.Info("mounted", attrs...)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			if s == syscall.SIGHUP {
				log.Info("SIGHUP: dropping caches")
				d.dropCaches()
				continue
			}
			log.Info("unmounting", "signal", s.String())
			if err := srv.Unmount(); err != nil {
				log.Warn("unmount failed (busy?)", "err", err)
			}
		}
	}()
	srv.Wait()
	log.Info("unmounted", "mountpoint", mnt)
	return nil
}

// apply sets ro and noexec on the mount, as a change of its per-mount
// flags (mount(2) MS_REMOUNT|MS_BIND), which needs root.
func (m mountFlags) apply(mnt string) error {
	if !m.readOnly && !m.noExec {
		return nil
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_NOSUID | unix.MS_NODEV)
	var names []string
	if m.readOnly {
		flags |= unix.MS_RDONLY
		names = append(names, "ro")
	}
	if m.noExec {
		flags |= unix.MS_NOEXEC
		names = append(names, "noexec")
	}
	if err := unix.Mount("", mnt, "", flags, ""); err != nil {
		return fmt.Errorf("%s: %w (wirefs sets them only when it runs as root)", strings.Join(names, ","), err)
	}
	return nil
}

// homeFromPasswd sets HOME, when it is unset, to the user's home from the
// password database: mount(8) clears HOME, and mount.fuse3 sets it (to
// /root) only when it does not switch to another user (setuid=USER).
func homeFromPasswd() {
	if os.Getenv("HOME") != "" {
		return
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		os.Setenv("HOME", u.HomeDir)
	}
}

// appendLog opens a log file to append to, private to its user.
func appendLog(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// ready tells a waiting parent (see daemonize) how the mount went.
func ready(err error) {
	fdStr := os.Getenv(readyFDEnv)
	if fdStr == "" {
		return
	}
	os.Unsetenv(readyFDEnv)
	fd, convErr := strconv.Atoi(fdStr)
	if convErr != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "ready")
	defer f.Close()
	if err != nil {
		fmt.Fprint(f, err.Error())
		return
	}
	fmt.Fprint(f, "ok")
}

// daemonize starts wirefs again with the same command line args, in a new
// session, detached from the terminal, and waits until it has mounted (or
// failed, whose reason it prints).
func daemonize(args []string, logFile string) error {
	if logFile == "" {
		dir := os.Getenv("XDG_STATE_HOME")
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return fmt.Errorf("the daemon's log: %w (name one with --log FILE or -o log=FILE)", err)
			}
			dir = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(dir, "wirefs")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("the daemon's log: %w (name one with --log FILE or -o log=FILE)", err)
		}
		logFile = filepath.Join(dir, "wirefs.log")
	}
	logf, err := appendLog(logFile)
	if err != nil {
		return err
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), readyFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	w.Close()
	msg, _ := io.ReadAll(r)
	r.Close()
	if string(msg) == "ok" {
		cmd.Process.Release()
		return nil
	}
	if len(msg) == 0 {
		cmd.Wait()
		return fmt.Errorf("the daemon exited before mounting; see %s", logFile)
	}
	return errors.New(strings.TrimSpace(string(msg)))
}

func umountCommand() *cobra.Command {
	return setup(&cobra.Command{
		Use:     "umount MOUNTPOINT",
		Aliases: []string{"unmount"},
		Short:   "unmount it",
		Long:    "Unmount a wirefs mount; its daemon exits.\n",
		Args:    exactArgs(1, "one MOUNTPOINT"),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: func(_ *cobra.Command, pos []string) error {
			mnt, err := filepath.Abs(pos[0])
			if err != nil {
				return err
			}
			return systemUnmounter().unmount(mnt)
		},
	})
}

// unmounter unmounts with umount(2), and when that is not permitted (an
// ordinary user) with the set-uid helper fusermount3, or the fusermount
// of FUSE 2 where there is no fusermount3.
type unmounter struct {
	umount   func(dir string) error
	lookPath func(file string) (string, error)
	run      func(prog string, args ...string) ([]byte, error)
}

// systemUnmounter is the unmounter of the system: umount(2) and the
// helpers on $PATH.
func systemUnmounter() unmounter {
	return unmounter{
		umount:   func(dir string) error { return unix.Unmount(dir, 0) },
		lookPath: exec.LookPath,
		run:      func(prog string, args ...string) ([]byte, error) { return exec.Command(prog, args...).CombinedOutput() },
	}
}

func (u unmounter) unmount(mnt string) error {
	err := u.umount(mnt)
	if err == nil {
		return nil
	} else if !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("umount %s: %w", mnt, err)
	}
	for _, helper := range []string{"fusermount3", "fusermount"} {
		prog, lerr := u.lookPath(helper)
		if lerr != nil {
			continue
		}
		if out, err := u.run(prog, "-u", mnt); err != nil {
			msg := strings.TrimSpace(string(out))
			if msg == "" {
				msg = err.Error()
			}
			return fmt.Errorf("umount %s: %s", mnt, msg)
		}
		return nil
	}
	return fmt.Errorf("umount %s: %w (and neither fusermount3 nor fusermount is installed)", mnt, err)
}
