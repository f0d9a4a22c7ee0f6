package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// helpWidth is the width help texts are wrapped to.
const helpWidth = 80

func init() {
	cobra.EnableCommandSorting = false // the usage lists commands in the order added
}

// rootUsage is what wirefs --help prints: one line per command, made from
// the commands themselves (docs/wirefs.md shows it; a test keeps the two
// equal).
func rootUsage(root *cobra.Command) string {
	type row struct{ use, short string }
	var rows []row
	width := 0
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		rows = append(rows, row{c.UseLine(), c.Short})
	}
	rows = append(rows, row{root.Name() + " COMMAND --help", "options of a command"})
	for _, r := range rows {
		width = max(width, len(r.use))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s.\n\nUsage:\n", root.Name(), root.Short)
	for _, r := range rows {
		lines := wrap(r.short, helpWidth-width-4)
		fmt.Fprintf(&b, "  %-*s  %s\n", width, r.use, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "  %-*s  %s\n", width, "", l)
		}
	}
	fmt.Fprintf(&b, "\n%s", root.Long)
	return b.String()
}

// commandUsage is what wirefs COMMAND --help prints.
func commandUsage(c *cobra.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n%s", c.UseLine(), c.Long)
	if c.HasAvailableFlags() {
		fmt.Fprintf(&b, "\nOptions:\n%s", c.Flags().FlagUsagesWrapped(helpWidth))
	}
	return b.String()
}

// wrap breaks text into lines of at most width characters at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// setup gives a command what every wirefs command has: a help option of
// the same wording, usage errors for bad arguments, no [flags] added to
// its usage line.
func setup(c *cobra.Command) *cobra.Command {
	c.Flags().BoolP("help", "h", false, "print this help")
	c.DisableFlagsInUseLine = true
	return c
}
