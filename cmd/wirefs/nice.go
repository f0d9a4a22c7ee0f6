package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"wirefs/internal/door/catch"
	"wirefs/internal/provider/vif"
)

const niceLong = `Run CMD, and every process it starts, in a virtual network interface of
its own (seed 003's netnice): its traffic out of IFACE is limited to RATE
(guaranteed) and CEIL (at most; default RATE, a shaper). The VIF is a child
of IFACE's root VIF, and it and everything wirefs made for it are removed
when CMD exits and what its sockets still held has gone out (at most a
minute later). wirefs nice exits with CMD's status. Options end at CMD.

Units as tc writes them: 2mbit, 256kbps (kilobytes), 1gbit.

With CAP_NET_ADMIN (root) the kernel does the shaping (an HTB class, a
cgroup, a BPF classifier). It works without a mount; while a wirefs daemon
manages the VIFs of this network namespace, use its vif/ tree instead
(mkdir /net/vif/IFACE/NAME; echo RATE > .../rate; ln -s ...
/net/proc/PID/IFACE).

Without CAP_NET_ADMIN it falls back to pacing each socket: every TCP
socket CMD and its descendants connect or listen with is paced at CEIL
(default RATE) with SO_MAX_PACING_RATE, set through the catcher (seccomp
user notification, as wirefs run; static binaries too). It says on stderr
what is lost: no hierarchy and no sharing (each connection gets the rate
on its own), TCP only (UDP is not paced), egress only.
`

func niceCommand() *cobra.Command {
	var rate, ceil, iface string
	var weight uint32
	var verbose bool
	c := setup(&cobra.Command{
		Use:   "nice [options] -- CMD [ARGS...]",
		Short: "run CMD in a VIF of its own",
		Long:  niceLong,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(c, "no command given")
			}
			if rate == "" {
				return usageErrorf(c, "--rate is required")
			}
			return nil
		},
		Annotations: map[string]string{annotationNoInterspersed: "yes"},
		RunE: func(c *cobra.Command, args []string) error {
			s := vif.Spec{Iface: iface, Weight: weight, Name: fmt.Sprintf("nice%d", os.Getpid())}
			var err error
			if s.Rate, err = vif.ParseRate(rate); err != nil {
				return usageErrorf(c, "--rate: %v", err)
			}
			if ceil != "" {
				if s.Ceil, err = vif.ParseRate(ceil); err != nil {
					return usageErrorf(c, "--ceil: %v", err)
				}
			}
			var w io.Writer = io.Discard
			if verbose {
				w = os.Stderr
			}
			log := slog.New(slog.NewTextHandler(w, nil))
			status, err := nice(s, args, log)
			if errors.Is(err, vif.ErrNoCapNetAdmin) {
				status, err = nicePaced(s, args, log)
			}
			if err != nil {
				return fmt.Errorf("nice: %w", err)
			}
			return exitStatus(status)
		},
	})
	fl := c.Flags()
	fl.SetInterspersed(false)
	fl.StringVar(&rate, "rate", "", "guarantee `RATE` to CMD (tc units: 2mbit, 256kbps)")
	fl.StringVar(&ceil, "ceil", "", "let CMD borrow up to `CEIL` when the interface has spare (default: RATE)")
	fl.Uint32Var(&weight, "weight", 1, "share of spare bandwidth against other VIFs (`N`, 1-100)")
	fl.StringVar(&iface, "iface", "", "shape traffic out of `IFACE` (default: the default route's)")
	fl.BoolVarP(&verbose, "verbose", "v", false, "log what is made and removed to stderr")
	return c
}

// nicePaced is nice without CAP_NET_ADMIN: CMD runs under the catcher,
// trapping only connect and listen, and each TCP socket is paced at the
// VIF's ceil (per-socket pacing, catch/pace.go).
func nicePaced(s vif.Spec, args []string, log *slog.Logger) (int, error) {
	rate := s.Ceil
	if rate == 0 {
		rate = s.Rate
	}
	fmt.Fprintf(os.Stderr, "wirefs nice: no CAP_NET_ADMIN, so no VIF: each TCP socket of the command is paced at %s instead "+
		"(no hierarchy or sharing: every connection gets the rate on its own; UDP and incoming traffic are not limited)\n",
		vif.FormatRate(rate))
	status, err := catch.Run(nil, catch.Options{Args: args, Log: log, Pace: rate / 8})
	if err != nil {
		return 0, fmt.Errorf("per-socket pacing: %w", err)
	}
	return status, nil
}

// nice makes the VIF, starts CMD inside its cgroup (clone3 with
// CLONE_INTO_CGROUP: no instant outside it), waits, and removes it all.
func nice(s vif.Spec, args []string, log *slog.Logger) (int, error) {
	p := vif.New(vif.Options{Log: log})
	if err := p.Err(); err != nil {
		return 0, err
	}
	if s.Iface == "" {
		var err error
		if s.Iface, err = vif.DefaultIface(); err != nil {
			p.Close()
			return 0, err
		}
	}
	defer func() {
		if err := p.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "wirefs: nice: removing the VIF: %v\n", err)
		}
	}()
	dir, err := p.Make(s)
	if err != nil {
		return 0, err
	}
	cg, err := os.Open(dir)
	if err != nil {
		return 0, err
	}
	defer cg.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	// Ctrl-C reaches CMD through the terminal; wirefs waits for it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	go func() {
		for sig := range sigs {
			if sig != syscall.SIGINT && sig != syscall.SIGQUIT { // those the terminal sends CMD itself
				cmd.Process.Signal(sig)
			}
		}
	}()
	err = cmd.Wait()
	// what CMD's sockets still hold goes out at its rate, then the VIF goes
	p.Drain(s, time.Minute)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}
