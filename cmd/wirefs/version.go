package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func versionCommand() *cobra.Command {
	return setup(&cobra.Command{
		Use:   "version",
		Short: "print the version",
		Long:  "Print the version of wirefs.\n",
		Args:  exactArgs(0, "no arguments"),
		RunE:  func(c *cobra.Command, _ []string) error { return printVersion(c) },
	})
}

func printVersion(c *cobra.Command) error {
	fmt.Fprintln(c.OutOrStdout(), "wirefs", version())
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
