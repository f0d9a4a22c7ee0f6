package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	fusedoor "wirefs/internal/door/fuse"
)

// readyFDEnv names the descriptor on which a daemonized child reports
// "ok" or the reason it failed to mount.
const readyFDEnv = "WIREFS_READY_FD"

func cmdMount(args []string) error {
	fl := flag.NewFlagSet("mount", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprint(fl.Output(), "Usage: wirefs mount [options] MOUNTPOINT\n\nMount the wirefs namespace at MOUNTPOINT. Prints nothing on success.\n\nOptions:\n")
		fl.PrintDefaults()
	}
	foreground := fl.Bool("foreground", false, "stay in the foreground, logging to stderr")
	verbose := fl.Bool("v", false, "log debug messages")
	allowOther := fl.Bool("allow-other", false, "let other users use the mount (non-root needs user_allow_other in /etc/fuse.conf)")
	var cfg nsConfig
	cfg.addFlags(fl)
	logFile := fl.String("log", "", "log file of the daemon (default $XDG_STATE_HOME/wirefs/wirefs.log)")
	debugFUSE := fl.Bool("debug-fuse", false, "log every FUSE request (very verbose)")
	if help, err := parseFlags(fl, args); help || err != nil {
		return err
	}
	if fl.NArg() != 1 {
		fl.Usage()
		return errors.New("mount: need exactly one MOUNTPOINT")
	}
	mnt, err := filepath.Abs(fl.Arg(0))
	if err != nil {
		return err
	}
	if st, err := os.Stat(mnt); err != nil || !st.IsDir() {
		return fmt.Errorf("mount: %s is not a directory", mnt)
	}
	if !*foreground && os.Getenv(readyFDEnv) == "" {
		return daemonize(args, *logFile)
	}

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)

	d, err := buildNamespace(cfg, log)
	if err != nil {
		ready(err)
		return err
	}
	defer d.close(log)
	srv, err := fusedoor.Mount(mnt, d.ns, fusedoor.Options{
		AllowOther: *allowOther, AttrTimeout: time.Second, DebugFUSE: *debugFUSE, Log: log,
	})
	ready(err)
	if err != nil {
		return fmt.Errorf("mount %s: %w", mnt, err)
	}
	d.onDrop(srv.DropKernelCaches)
	log.Info("mounted", "mountpoint", mnt, "pid", os.Getpid())

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

// daemonize starts this command again in a new session, detached from the
// terminal, and waits until it has mounted (or failed, whose reason it
// prints).
func daemonize(args []string, logFile string) error {
	if logFile == "" {
		dir := os.Getenv("XDG_STATE_HOME")
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return err
			}
			dir = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(dir, "wirefs")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		logFile = filepath.Join(dir, "wirefs.log")
	}
	logf, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
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
	cmd := exec.Command(self, append([]string{"mount"}, args...)...)
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

func cmdUmount(args []string) error {
	fl := flag.NewFlagSet("umount", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprint(fl.Output(), "Usage: wirefs umount MOUNTPOINT\n\nUnmount a wirefs mount; its daemon exits.\n")
	}
	if help, err := parseFlags(fl, args); help || err != nil {
		return err
	}
	if fl.NArg() != 1 {
		fl.Usage()
		return errors.New("umount: need exactly one MOUNTPOINT")
	}
	mnt, err := filepath.Abs(fl.Arg(0))
	if err != nil {
		return err
	}
	if err := syscall.Unmount(mnt, 0); err == nil {
		return nil
	} else if err != syscall.EPERM {
		return fmt.Errorf("umount %s: %w", mnt, err)
	}
	out, err := exec.Command("fusermount3", "-u", mnt).CombinedOutput()
	if err != nil {
		return fmt.Errorf("umount %s: %s", mnt, strings.TrimSpace(string(out)))
	}
	return nil
}
