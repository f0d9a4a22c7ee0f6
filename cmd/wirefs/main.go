// Command wirefs shows the network as a file system. See docs/wirefs.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

const usage = `wirefs: the network as a file system.

Usage:
  wirefs mount [options] MOUNTPOINT   mount the namespace (daemonizes)
  wirefs umount MOUNTPOINT            unmount it
  wirefs run [options] -- CMD [ARGS...]
                                      run CMD with the namespace at /net
                                      (no mount, no root)
  wirefs attach [options] PID         the same for a running process
  wirefs version                      print the version
  wirefs COMMAND --help               options of a command

Under MOUNTPOINT: tcp/ and udp/ (open = connect, bind or accept; names are
addresses as in "host:port", "8000", "[::1]:80"), dns/NAME (addresses),
remote files in http/, https/, ftp/, ftps/, sftp/ and 9p/ (as in
"sftp/me@host/home/me/src"), and the prefixes of ~/.config/wirefs/mounts.
Manual: docs/wirefs.md.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "mount":
		err = cmdMount(args)
	case "run":
		err = cmdRun(args)
	case "attach":
		err = cmdAttach(args)
	case "umount", "unmount":
		err = cmdUmount(args)
	case "version", "--version":
		err = cmdVersion(args)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "wirefs: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wirefs:", err)
		os.Exit(1)
	}
}

// parseFlags parses a command's args; help is true when --help was asked
// for, and printed: the command then does nothing and succeeds.
func parseFlags(fl *flag.FlagSet, args []string) (help bool, err error) {
	err = fl.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return true, nil
	}
	return false, err
}
