package main

import (
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The manual shows what the binary prints; this test keeps the two equal.
// After a change of the command line, regenerate the manual's copies with
//
//	go test ./cmd/wirefs -run TestManual -update
//
// and read the diff: the SYNOPSIS of docs/wirefs.md, and every fenced
// block that follows a line "<!-- wirefs ARGS -->" (the output of wirefs
// ARGS, as --help prints it).
var update = flag.Bool("update", false, "rewrite docs/wirefs.md's SYNOPSIS and help texts from the binary")

const manual = "../../docs/wirefs.md"

func TestManual(t *testing.T) {
	b, err := os.ReadFile(manual)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	doc = checkSynopsis(t, doc)
	doc = checkHelpBlocks(t, doc)
	if *update && doc != string(b) {
		if err := os.WriteFile(manual, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("updated %s", manual)
	}
}

// checkSynopsis compares the SYNOPSIS section (a code block indented by
// four spaces) with synopsis(); it returns doc, updated if asked to.
func checkSynopsis(t *testing.T, doc string) string {
	t.Helper()
	const head = "## SYNOPSIS\n\n"
	i := strings.Index(doc, head)
	if i < 0 {
		t.Fatalf("%s has no %q", manual, head)
	}
	start := i + len(head)
	end := start
	for end < len(doc) && strings.HasPrefix(doc[end:], "    ") {
		end += strings.IndexByte(doc[end:], '\n') + 1
	}
	var got strings.Builder
	for _, l := range strings.SplitAfter(doc[start:end], "\n") {
		got.WriteString(strings.TrimPrefix(l, "    "))
	}
	want := synopsis(newRoot(nil))
	if got.String() == want {
		return doc
	}
	if !*update {
		t.Errorf("the SYNOPSIS of %s differs from the usage of wirefs (go test -run TestManual -update)\n--- manual:\n%s--- usage:\n%s",
			manual, got.String(), want)
		return doc
	}
	var block strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimSuffix(want, "\n"), "\n") {
		block.WriteString("    " + l)
	}
	block.WriteString("\n")
	return doc[:start] + block.String() + doc[end:]
}

var helpMarker = regexp.MustCompile("(?m)^<!-- (wirefs(?: [^>]*)?) -->\n```\n")

// checkHelpBlocks compares each fenced block after a marker with the
// output of the command line in the marker.
func checkHelpBlocks(t *testing.T, doc string) string {
	t.Helper()
	var out strings.Builder
	rest := doc
	n := 0
	for {
		m := helpMarker.FindStringSubmatchIndex(rest)
		if m == nil {
			break
		}
		n++
		blockStart, blockEnd := m[1], m[1] // an empty block: the fence follows
		if !strings.HasPrefix(rest[blockStart:], "```\n") {
			i := strings.Index(rest[blockStart:], "\n```\n")
			if i < 0 {
				t.Fatalf("%s: the block after %q does not end", manual, rest[m[2]:m[3]])
			}
			blockEnd = blockStart + i + 1
		}
		args := strings.Fields(rest[m[2]:m[3]])[1:]
		code, stdout, stderr := wirefs(args...)
		text := stdout + stderr
		if code != 0 && !(len(args) == 0 && code == exitUsage) {
			t.Errorf("wirefs %q: exit %d", args, code)
		}
		if got := rest[blockStart:blockEnd]; got != text {
			if !*update {
				t.Errorf("%s: the block after <!-- %s --> differs from what it prints (go test -run TestManual -update)\n--- manual:\n%s--- wirefs:\n%s",
					manual, rest[m[2]:m[3]], got, text)
			}
		}
		out.WriteString(rest[:blockStart] + text)
		rest = rest[blockEnd:]
	}
	if n == 0 {
		t.Errorf("%s has no help blocks (<!-- wirefs ARGS --> before a fenced block)", manual)
	}
	out.WriteString(rest)
	return out.String()
}

// synopsis is the SYNOPSIS of the manual, made from the commands: one
// entry per command, with its visible options spelled out, wrapped at 80
// columns under the command's first argument.
func synopsis(root *cobra.Command) string {
	var b strings.Builder
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		var words []string
		for _, w := range strings.Fields(c.UseLine()) {
			if w == "[options]" {
				words = append(words, optionWords(c.Flags())...)
				continue
			}
			words = append(words, w)
		}
		indent := strings.Repeat(" ", len(words[0])+1+len(words[1])+1)
		line := words[0]
		for _, w := range words[1:] {
			if len(line)+1+len(w) > helpWidth-4 { // the manual indents by 4
				b.WriteString(line + "\n")
				line = indent + w
				continue
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	b.WriteString(root.Name() + " COMMAND --help\n")
	return b.String()
}

// optionWords are "[-f]", "[--allow-other]", "[--log FILE]"...: the
// options with a short name first, by it.
func optionWords(fs *pflag.FlagSet) []string {
	var short, long []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		w := "--" + f.Name
		if f.Shorthand != "" {
			w = "-" + f.Shorthand
		}
		if name, _ := pflag.UnquoteUsage(f); name != "" {
			w += " " + name
		}
		if f.Shorthand != "" {
			short = append(short, "["+w+"]")
		} else {
			long = append(long, "["+w+"]")
		}
	})
	slices.Sort(short)
	return append(short, long...)
}
