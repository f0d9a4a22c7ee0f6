package config

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/google/shlex"
)

// Portal is a "portal PREFIX PROVIDER ARG..." line (seed 004 §4.6): a
// namespace path whose open is served by a provider.
//
//	portal jump/    exec  ssh -W %s bastion
//	portal sorted   exec  sort
//	portal db       tcp   db.internal:5432
//	portal logs/    fs    /var/log
//
// A portal line is split into words as a shell would split them (quotes,
// backslashes, '#' comments; see github.com/google/shlex) but never runs
// a shell: no expansion of any kind. Commas are part of words here, unlike
// in mount lines, since a program's arguments may hold them.
type Portal struct {
	Prefix string // clean, without leading or trailing slash
	// Dir: the prefix ended in "/", so every name below it is the
	// portal with %s standing for that name.
	Dir      bool
	Provider string   // one of PortalProviders
	Args     []string // the words after the provider, %s unexpanded
	Line     int
}

// PortalProviders are the providers a portal line may name.
var PortalProviders = []string{"exec", "tcp", "udp", "fs"}

// NameArg, in an exec portal's words, stands for the name opened below a
// prefix that ends in "/"; "%%" stands for "%".
const NameArg = "%s"

// HasNameArg reports whether word of an exec portal has a %s (not %%s,
// a literal "%s").
func HasNameArg(word string) bool {
	return strings.Contains(strings.ReplaceAll(word, "%%", ""), NameArg)
}

// isPortalLine reports whether line is a portal line: its first word is
// "portal".
func isPortalLine(line string) bool {
	rest, ok := strings.CutPrefix(strings.TrimLeft(line, " \t"), "portal")
	return ok && (rest == "" || strings.ContainsAny(rest[:1], " \t\r"))
}

// parsePortal parses a portal line (its first word is "portal").
func parsePortal(line string) (Portal, error) {
	words, err := shlex.Split(line)
	if err != nil {
		return Portal{}, fmt.Errorf("portal line: %v", err)
	}
	if len(words) < 4 {
		return Portal{}, fmt.Errorf("want portal PREFIX PROVIDER ARG... (PROVIDER one of %s)", strings.Join(PortalProviders, ", "))
	}
	raw, provider, args := words[1], words[2], words[3:]
	p := Portal{Prefix: strings.Trim(path.Clean("/"+raw), "/"), Dir: strings.HasSuffix(raw, "/"), Provider: provider, Args: args}
	if p.Prefix == "" {
		return Portal{}, fmt.Errorf("the portal prefix cannot be the root")
	}
	if !slices.Contains(PortalProviders, provider) {
		return Portal{}, fmt.Errorf("unknown portal provider %q (known: %s)", provider, strings.Join(PortalProviders, ", "))
	}
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return Portal{}, fmt.Errorf("a NUL byte in %q", a)
		}
	}
	names := slices.ContainsFunc(args, HasNameArg)
	switch provider {
	case "exec":
		if names && !p.Dir {
			return Portal{}, fmt.Errorf("%s stands for the name below the prefix: the prefix %q must end in /", NameArg, raw)
		}
	case "tcp", "udp":
		if len(args) != 1 || p.Dir {
			return Portal{}, fmt.Errorf("a %s portal is one file: portal PREFIX %s NAME (a name of /net/%s, no trailing /)", provider, provider, provider)
		}
	case "fs":
		if len(args) != 1 || !path.IsAbs(args[0]) {
			return Portal{}, fmt.Errorf("an fs portal is a directory: portal PREFIX/ fs /ABSOLUTE/PATH")
		}
		p.Dir = true
	}
	if names && provider != "exec" {
		return Portal{}, fmt.Errorf("%s is for exec portals", NameArg)
	}
	return p, nil
}

// Argv is an exec portal's words for the name opened below its prefix:
// every %s replaced by name and every %% by %, each word staying one
// argument however name reads (no shell ever sees it).
func (p Portal) Argv(name string) []string {
	// A Replacer works left to right and never rereads what it
	// wrote: "%%s" is "%s", a name holding "%s" stays as it is.
	r := strings.NewReplacer("%%", "%", NameArg, name)
	argv := make([]string, len(p.Args))
	for i, a := range p.Args {
		argv[i] = r.Replace(a)
	}
	return argv
}
