// Command wirefs shows the network as a file system. See docs/wirefs.md.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"wirefs/internal/protocols"
)

// Exit statuses: a command that failed while running exits 1, a bad
// command line 2 (wirefs run exits with its command's status).
const (
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a bad command line. It is printed as one line that points
// at the command's --help, and wirefs exits 2.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(c *cobra.Command, format string, a ...any) error {
	return &usageError{cmd: c, err: fmt.Errorf(format, a...)}
}

// exitStatus ends wirefs with this status and no message of its own.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// execute runs the command line args (without the program name) and
// returns the exit status.
func execute(args []string, stdout, stderr io.Writer) int {
	args = append([]string{}, mountHelperArgs(args)...) // never nil: cobra would read os.Args
	root := newRoot(args)
	args = singleDashLongOptions(root, args)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	var status exitStatus
	var bad *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &bad):
		fmt.Fprintln(stderr, usageLine(bad))
		return exitUsage
	default:
		fmt.Fprintln(stderr, "wirefs:", err)
		return exitFailure
	}
}

// usageLine is the one line a bad command line prints.
func usageLine(e *usageError) string {
	prefix := "wirefs: "
	if e.cmd.HasParent() {
		prefix += e.cmd.Name() + ": "
	}
	return fmt.Sprintf("%s%v; see '%s --help'", prefix, e.err, e.cmd.CommandPath())
}

// newRoot builds the command tree. args is the whole command line, which
// mount passes again to the daemon it starts. The protocol registry is
// built here, once, and handed to the commands that serve remote files.
func newRoot(args []string) *cobra.Command {
	reg := protocols.Remote()
	root := &cobra.Command{
		Use:           "wirefs",
		Short:         "the network as a file system",
		Long:          rootLong(reg),
		SilenceErrors: true,
		SilenceUsage:  true,
		// wirefs alone prints the usage on stderr and exits 2.
		RunE: func(c *cobra.Command, _ []string) error {
			if v, _ := c.Flags().GetBool("version"); v {
				return printVersion(c)
			}
			fmt.Fprint(c.ErrOrStderr(), rootUsage(c))
			return exitStatus(exitUsage)
		},
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				return usageErrorf(c, "unknown command %q (did you mean %q?)", args[0], s[0])
			}
			return usageErrorf(c, "unknown command %q", args[0])
		},
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.Flags().Bool("version", false, "print the version")
	root.SetGlobalNormalizationFunc(normalizeName)
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// A bad -o item is named alone, not with the whole -o list.
		var opt *optionError
		if errors.As(err, &opt) {
			err = opt
		}
		return &usageError{cmd: c, err: err}
	})
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if c == root {
			fmt.Fprint(c.OutOrStdout(), rootUsage(c))
			return
		}
		fmt.Fprint(c.OutOrStdout(), commandUsage(c))
	})
	root.AddCommand(
		mountCommand(&mountOptions{protocols: reg}, args),
		umountCommand(),
		runCommand(reg),
		attachCommand(reg),
		spliceCommand(reg),
		niceCommand(),
		versionCommand(),
		completionCommand(),
	)
	return root
}

// rootLong is the text under the root's usage: what the namespace shows,
// with the roots of reg's protocols.
func rootLong(reg *protocols.Registry) string {
	roots := reg.Schemes()
	for i := range roots {
		roots[i] += "/"
	}
	if n := len(roots); n > 1 {
		roots = append(roots[:n-2], roots[n-2]+" and "+roots[n-1])
	}
	text := `Under MOUNTPOINT: tcp/ and udp/ (open = connect, bind or accept; names are
addresses as in "host:port" or "host+port", "8000", "[::1]:80"), dns/NAME (addresses),
remote files in ` + strings.Join(roots, ", ") + ` (as in "sftp/me@host/home/me/src"),
vif/IFACE/ and proc/PID/IFACE (virtual network interfaces: rates, attached
processes), and the prefixes of ~/.config/wirefs/mounts. Manual:
docs/wirefs.md.`
	return strings.Join(wrap(text, helpWidth-4), "\n") + "\n"
}

// normalizeName lets options be spelled with _ as in -o (--allow_other),
// and keeps the old spelling --v of --verbose.
func normalizeName(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	name = strings.ReplaceAll(name, "_", "-")
	if name == "v" {
		name = "verbose"
	}
	return pflag.NormalizedName(name)
}

// exactArgs wants n arguments named what (a usage error otherwise).
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf(c, "want %s, got %s", what, arguments(len(args)))
		}
		return nil
	}
}

// arguments says "1 argument", "2 arguments".
func arguments(n int) string {
	if n == 1 {
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", n)
}

// mountHelperArgs turns the command line mount.fuse3 runs for an fstab
// line or "mount -t fuse.wirefs" — "wirefs SOURCE MOUNTPOINT -o OPTIONS"
// — into "mount MOUNTPOINT -o OPTIONS". Anything else is left alone.
// SOURCE, the first field of the fstab line, must be "wirefs" or "none",
// or empty ("mount -t fuse wirefs# DIR"), or either name made absolute:
// mount(8) makes a source absolute when a file of that name is in its
// working directory. When mount(8) is given an empty source, mount.fuse3
// passes no SOURCE at all, and the first argument is the absolute
// MOUNTPOINT.
func mountHelperArgs(args []string) []string {
	if len(args) == 0 || isCommand(args[0]) {
		return args
	}
	first := args[0]
	if base := filepath.Base(first); len(args) >= 2 && !strings.HasPrefix(args[1], "-") &&
		(first == "" || (base == "wirefs" || base == "none") && (base == first || filepath.IsAbs(first))) {
		return append([]string{"mount"}, args[1:]...)
	}
	if filepath.IsAbs(first) {
		return append([]string{"mount"}, args...)
	}
	return args
}

// isCommand reports whether s is a first word wirefs takes as a command,
// not as a mount source: a command of newRoot or an alias (a test keeps
// the two equal), help, or cobra's completion requests.
func isCommand(s string) bool {
	switch s {
	case "mount", "umount", "unmount", "run", "attach", "splice", "nice", "version", "completion", "help",
		cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
		return true
	}
	return false
}

// singleDashLongOptions rewrites the single-dash spelling of long options
// that wirefs accepted before it used GNU-style options (-foreground,
// -cache-dir=DIR) to the double-dash one. Shorthand options (-v, -f,
// -o OPTS, -fv) and arguments are left as they are.
func singleDashLongOptions(root *cobra.Command, args []string) []string {
	if len(args) == 0 {
		return args
	}
	var cmd *cobra.Command
	for _, c := range root.Commands() {
		if c.Name() == args[0] || c.HasAlias(args[0]) {
			cmd = c
		}
	}
	if cmd == nil {
		return args
	}
	fs := cmd.Flags()
	out := append([]string{}, args...)
	interspersed := cmd.Annotations[annotationNoInterspersed] == ""
	for i := 1; i < len(out); i++ {
		a := out[i]
		switch {
		case a == "--":
			return out
		case len(a) < 2 || a[0] != '-':
			if !interspersed {
				return out
			}
			continue
		case a[1] == '-':
			name, _, hasValue := strings.Cut(a[2:], "=")
			if f := fs.Lookup(name); f != nil && f.NoOptDefVal == "" && !hasValue {
				i++ // its value
			}
			continue
		}
		name, _, hasValue := strings.Cut(a[1:], "=")
		if len(name) > 1 {
			if f := fs.Lookup(name); f != nil || name == "help" {
				out[i] = "-" + a
				if f != nil && f.NoOptDefVal == "" && !hasValue {
					i++
				}
				continue
			}
		}
		// A shorthand cluster: the last one may take the next argument.
		if !hasValue && name != "" && allShorthands(fs, name) && fs.ShorthandLookup(name[len(name)-1:]).NoOptDefVal == "" {
			i++
		}
	}
	return out
}

// allShorthands: every letter of s is a shorthand flag of fs, so -s is a
// cluster of them whose last one takes the next argument.
func allShorthands(fs *pflag.FlagSet, s string) bool {
	for i := range len(s) {
		f := fs.ShorthandLookup(s[i : i+1])
		if f == nil {
			return false
		}
		if f.NoOptDefVal == "" && i != len(s)-1 {
			return false // takes the rest of s as its value
		}
	}
	return true
}

// annotationNoInterspersed marks a command whose options end at its first
// argument (run: the rest is the command to run).
const annotationNoInterspersed = "wirefs:no-interspersed"
