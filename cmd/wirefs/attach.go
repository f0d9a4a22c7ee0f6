package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"

	"wirefs/internal/door/catch"
)

// cmdAttach is `wirefs attach [options] PID`: the running process PID, and
// the children it starts from now on, see the namespace as under wirefs
// run. It returns when PID exits.
func cmdAttach(args []string) error {
	fl := flag.NewFlagSet("attach", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprint(fl.Output(), `Usage: wirefs attach [options] PID

Take over the running process PID (yours, x86-64): with ptrace, make it
install the catcher's seccomp filter, then serve it as wirefs run serves
its command, until PID exits. Children PID started before are not
covered; its threads are. A process that is traced already, cannot be
traced (Yama ptrace_scope, PR_SET_DUMPABLE 0, setuid) or runs under
wirefs run cannot be taken over. Manual: docs/wirefs.md.

Options:
`)
		fl.PrintDefaults()
	}
	var cf catcherFlags
	cf.add(fl)
	var cfg nsConfig
	cfg.addFlags(fl)
	if help, err := parseFlags(fl, args); help || err != nil {
		return err
	}
	if fl.NArg() != 1 {
		fl.Usage()
		return errors.New("attach: want one PID")
	}
	pid, err := strconv.Atoi(fl.Arg(0))
	if err != nil || pid <= 0 {
		return fmt.Errorf("attach: %q is not a process id", fl.Arg(0))
	}
	log, closeLog, err := cf.log()
	if err != nil {
		return err
	}
	defer closeLog()
	d, err := buildNamespace(cfg, log)
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	defer d.close(log)
	err = catch.Attach(d.ns, pid, catch.Options{Prefix: cf.prefix, Log: log, Roots: d.roots, URLName: urlName})
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	return nil
}
