package main

import (
	"flag"
	"fmt"
	"runtime/debug"
	"strings"
)

func cmdVersion(args []string) error {
	fl := flag.NewFlagSet("version", flag.ContinueOnError)
	fl.Usage = func() { fmt.Fprint(fl.Output(), "Usage: wirefs version\n\nPrint the version of wirefs.\n") }
	if help, err := parseFlags(fl, args); help || err != nil {
		return err
	}
	fmt.Println("wirefs", version())
	return nil
}

// version is the module version, or the VCS revision of a source build.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 && !strings.Contains(v, s.Value[:12]) {
			v += " (" + s.Value[:12] + ")"
		}
	}
	return v
}
