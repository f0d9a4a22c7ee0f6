package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"wirefs/internal/door/catch"
	"wirefs/internal/protocols"
)

const attachLong = `Take over the running process PID (yours, x86-64): with ptrace, make it
install the catcher's seccomp filter, then serve it as wirefs run serves
its command, until PID exits. Children PID started before are not
covered; its threads are. A process that is traced already, cannot be
traced (Yama ptrace_scope, PR_SET_DUMPABLE 0, setuid) or runs under
wirefs run cannot be taken over. Manual: docs/wirefs.md.
`

// attachCommand is wirefs attach [options] PID: the running process PID,
// and the children it starts from now on, see the namespace as under
// wirefs run. It returns when PID exits.
func attachCommand(reg *protocols.Registry) *cobra.Command {
	var cf catcherFlags
	var cfg nsConfig
	c := setup(&cobra.Command{
		Use:   "attach [options] PID",
		Short: "the same for a running process",
		Long:  attachLong,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(c, "want one PID, got %s", arguments(len(args)))
			}
			if pid, err := strconv.Atoi(args[0]); err != nil || pid <= 0 {
				return usageErrorf(c, "%q is not a process id", args[0])
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			pid, _ := strconv.Atoi(args[0])
			log, closeLog, err := cf.log()
			if err != nil {
				return err
			}
			defer closeLog()
			d, err := buildNamespace(cfg, reg, log)
			if err != nil {
				return fmt.Errorf("attach: %w", err)
			}
			defer d.close(log)
			err = catch.Attach(d.ns, pid, catch.Options{Prefix: cf.prefix, Log: log, Roots: d.roots, URLName: urlName(reg)})
			if err != nil {
				return fmt.Errorf("attach: %w", err)
			}
			return nil
		},
	})
	cf.add(c)
	cfg.addFlags(c.Flags())
	return c
}
