package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParsePortals(t *testing.T) {
	tab, err := Parse(`
# prefix    provider  argument
portal jump/    exec  ssh -W %s bastion       # /net/jump/db1:5432
portal sorted   exec  sort -t, -k2
portal db       tcp   db.internal:5432
portal logs/    fs    /var/log
	portal /a/b/  exec sh -c 'printf "%s\n" "$1" # not a comment' sh %s
src sftp://h/x
portal q/ exec grep "a b" --label=x%s "#" \# %s%s
portal pf/ exec printf '<%%s>\n' %s
`, testSchemes())
	if err != nil {
		t.Fatal(err)
	}
	want := []Portal{
		{Prefix: "jump", Dir: true, Provider: "exec", Args: []string{"ssh", "-W", "%s", "bastion"}, Line: 3},
		{Prefix: "sorted", Provider: "exec", Args: []string{"sort", "-t,", "-k2"}, Line: 4},
		{Prefix: "db", Provider: "tcp", Args: []string{"db.internal:5432"}, Line: 5},
		{Prefix: "logs", Dir: true, Provider: "fs", Args: []string{"/var/log"}, Line: 6},
		{Prefix: "a/b", Dir: true, Provider: "exec", Args: []string{"sh", "-c", `printf "%s\n" "$1" # not a comment`, "sh", "%s"}, Line: 7},
		{Prefix: "q", Dir: true, Provider: "exec", Args: []string{"grep", "a b", "--label=x%s", "#", "#", "%s%s"}, Line: 9},
		{Prefix: "pf", Dir: true, Provider: "exec", Args: []string{"printf", `<%%s>\n`, "%s"}, Line: 10},
	}
	if !reflect.DeepEqual(tab.Portals, want) {
		t.Errorf("portals:\n got %+v\nwant %+v", tab.Portals, want)
	}
	if len(tab.Mounts) != 1 || tab.Mounts[0].Line != 8 {
		t.Errorf("the mount line among portals: %+v", tab.Mounts)
	}
	if got := tab.Portals[0].Argv("a;touch x"); !slices.Equal(got, []string{"ssh", "-W", "a;touch x", "bastion"}) {
		t.Errorf("argv %q", got)
	}
	if got := tab.Portals[6].Argv("%s%%"); !slices.Equal(got, []string{"printf", `<%s>\n`, "%s%%"}) {
		t.Errorf("argv %q", got)
	}
	if got := tab.Portals[5].Argv("$(id)"); !slices.Equal(got, []string{"grep", "a b", "--label=x$(id)", "#", "#", "$(id)$(id)"}) {
		t.Errorf("argv %q", got)
	}
}

// TestParsePortalErrors: a bad portal line fails the whole file, naming
// the line and why.
func TestParsePortalErrors(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"portal", "want portal PREFIX PROVIDER ARG"},
		{"portal x exec", "want portal PREFIX PROVIDER ARG"},
		{"portal / exec sort", "cannot be the root"},
		{"portal x pipe sort", `unknown portal provider "pipe" (known: exec, tcp, udp, fs)`},
		{"portal x exec ssh -W %s h", "must end in /"},
		{"portal x exec printf %%s", ""}, // a literal "%s": fine

		{"portal x exec 'unterminated", "portal line: "},
		{"portal x/ tcp h:1", "a tcp portal is one file"},
		{"portal x udp h:1 h:2", "a udp portal is one file"},
		{"portal x/ fs relative", "an fs portal is a directory"},
		{"portal x/ fs /a /b", "an fs portal is a directory"},
		{"portal x tcp %s", "is for exec portals"},
	} {
		_, err := Parse("# first\n\n"+tc.line+"\n", testSchemes())
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.line, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), "line 3: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want line 3: ...%s...", tc.line, err, tc.want)
		}
	}
	// "portal" is a keyword only as a whole word.
	tab, err := Parse("portals sftp://h/x\n", testSchemes())
	if err != nil || len(tab.Mounts) != 1 || tab.Mounts[0].Prefix != "portals" {
		t.Errorf("portals as a prefix: %+v %v", tab, err)
	}
}

func FuzzParsePortal(f *testing.F) {
	f.Add("portal jump/ exec ssh -W %s bastion # c")
	f.Add("portal sorted exec sort -t, -k2")
	f.Add("portal db tcp db.internal:5432")
	f.Add("portal logs/ fs /var/log")
	f.Add(`portal a/ exec sh -c 'echo "$1"' sh %s`)
	f.Fuzz(func(t *testing.T, line string) {
		if !isPortalLine(line) {
			return
		}
		p, err := parsePortal(line)
		if err != nil {
			return
		}
		if p.Prefix == "" || strings.HasPrefix(p.Prefix, "/") || strings.HasSuffix(p.Prefix, "/") || len(p.Args) == 0 ||
			!slices.Contains(PortalProviders, p.Provider) {
			t.Fatalf("bad portal %+v from %q", p, line)
		}
		if p.Provider != "exec" {
			if len(p.Args) != 1 || HasNameArg(p.Args[0]) {
				t.Fatalf("%s portal %+v from %q", p.Provider, p, line)
			}
			return
		}
		// %s is replaced inside words, never splitting or joining them.
		if argv := p.Argv("a b;$(x)"); len(argv) != len(p.Args) {
			t.Fatalf("argv %q from %q", argv, line)
		}
		if !p.Dir && slices.ContainsFunc(p.Args, HasNameArg) {
			t.Fatalf("%%s in a file portal %+v from %q", p, line)
		}
	})
}
