package main

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// wirefs runs a command line in process.
func wirefs(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = execute(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestUsageErrors: a bad command line prints one line that names the
// problem and the help to read, and exits 2; nothing reaches stdout.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string // in the line
		help string // the --help it points at
	}{
		{[]string{"mount", "--no-such-flag", dir}, "unknown flag: --no-such-flag", "wirefs mount"},
		{[]string{"mount", dir, "-o", "allow_other,no_such_option"}, "-o no_such_option: unknown option", "wirefs mount"},
		{[]string{"mount", dir, "-o", "t_read=soon"}, `-o t_read=soon: time: invalid duration "soon"`, "wirefs mount"},
		{[]string{"mount", dir, "-o", "t_read"}, "-o t_read: needs a value", "wirefs mount"},
		{[]string{"mount", dir, "-o", "_netdev=1"}, "-o _netdev=1: unknown option", "wirefs mount"},
		{[]string{"mount", dir, "-o", "options=ro"}, "-o options=ro: unknown option", "wirefs mount"},
		{[]string{"mount", dir, "--dns-ttl"}, "flag needs an argument: --dns-ttl", "wirefs mount"},
		{[]string{"mount", "--dns-ttl", "x", dir}, `invalid argument "x" for "--dns-ttl" flag`, "wirefs mount"},
		{[]string{"mount"}, "want one MOUNTPOINT, got 0 arguments", "wirefs mount"},
		// Options spelled --allow_other, --v and -dns-ttl are understood.
		{[]string{"mount", "--allow_other", "--v", "-dns-ttl=5s", "-foreground"}, "want one MOUNTPOINT, got 0 arguments", "wirefs mount"},
		{[]string{"mount", dir, dir}, "want one MOUNTPOINT, got 2 arguments", "wirefs mount"},
		{[]string{"umount"}, "want one MOUNTPOINT", "wirefs umount"},
		{[]string{"run"}, "no command given", "wirefs run"},
		{[]string{"run", "-o", "ro", "--", "true"}, "-o ro: unknown option", "wirefs run"},
		{[]string{"attach", "me"}, `"me" is not a process id`, "wirefs attach"},
		{[]string{"version", "x"}, "want no arguments, got 1 argument", "wirefs version"},
		{[]string{"completion", "tcsh"}, `no completion for shell "tcsh"`, "wirefs completion"},
		{[]string{"no-such-command"}, `unknown command "no-such-command"`, "wirefs"},
		{[]string{"mout", dir}, `unknown command "mout" (did you mean "mount"?)`, "wirefs"},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag", "wirefs"},
	} {
		code, stdout, stderr := wirefs(tc.args...)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 ||
			!strings.Contains(stderr, tc.want) || !strings.HasSuffix(stderr, "; see '"+tc.help+" --help'\n") {
			t.Errorf("wirefs %q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q and \"see '%s --help'\"",
				tc.args, code, stdout, stderr, tc.want, tc.help)
		}
	}
	// wirefs alone prints the usage on stderr.
	code, stdout, stderr := wirefs()
	if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "wirefs: the network as a file system.\n\nUsage:\n") {
		t.Errorf("wirefs: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr", code, stdout, stderr)
	}
}

// TestRuntimeError: a failure after the command line was understood exits
// 1 with "wirefs: REASON".
func TestRuntimeError(t *testing.T) {
	file := t.TempDir() + "/file"
	os.WriteFile(file, nil, 0o600)
	code, stdout, stderr := wirefs("mount", file)
	if code != exitFailure || stdout != "" || stderr != "wirefs: mount: "+file+" is not a directory\n" {
		t.Errorf("mount on a file: exit %d, %q, %q", code, stdout, stderr)
	}
	code, _, stderr = wirefs("mount", "/dev/fd/3", "-o", "allow_other")
	if code != exitFailure || !strings.Contains(stderr, "drop_privileges is not supported") {
		t.Errorf("mount on /dev/fd/3 (mount.fuse3 drop_privileges): exit %d, %q", code, stderr)
	}
}

// TestHelp: --help, -h, help COMMAND print the usage on stdout and exit 0;
// user help shows --allow-other and hides the measurement switches.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"mount", "--help"}, {"mount", "-h"}, {"help", "mount"},
		{"mount", "/net", "--help"}, {"umount", "--help"}, {"unmount", "-h"}, {"run", "--help"}, {"attach", "--help"},
		{"version", "--help"}, {"completion", "--help"}, {"mount", "-help"}} {
		code, stdout, stderr := wirefs(args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage") {
			t.Errorf("wirefs %q: exit %d, stderr %q, stdout %q; want exit 0 and a usage on stdout", args, code, stderr, stdout)
		}
	}
	_, mount, _ := wirefs("mount", "--help")
	for _, want := range []string{"--allow-other", "-o, --options OPT[,OPT...]", "-f, --foreground", "-v, --verbose", "--t-read DURATION"} {
		if !strings.Contains(mount, want) {
			t.Errorf("wirefs mount --help does not show %q:\n%s", want, mount)
		}
	}
	_, run, _ := wirefs("run", "--help")
	if strings.Contains(run, "sync-wake-up") {
		t.Errorf("wirefs run --help shows the measurement switch --sync-wake-up:\n%s", run)
	}
	_, root, _ := wirefs("--help")
	for _, want := range []string{"wirefs mount [options] MOUNTPOINT", "wirefs completion bash|zsh|fish"} {
		if !strings.Contains(root, want) {
			t.Errorf("wirefs --help does not show %q:\n%s", want, root)
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, _ := wirefs(args...)
		if code != 0 || !strings.HasPrefix(stdout, "wirefs ") || strings.Count(stdout, "\n") != 1 {
			t.Errorf("wirefs %q: exit %d, %q; want one line \"wirefs VERSION\"", args, code, stdout)
		}
	}
}

// TestCompletion: a script for each shell, and completions of -o names.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "complete -o default -F __start_wirefs wirefs",
		"zsh": "#compdef wirefs", "fish": "complete -c wirefs"} {
		code, stdout, stderr := wirefs("completion", shell)
		if code != 0 || stderr != "" || !strings.Contains(stdout, want) {
			t.Errorf("completion %s: exit %d, stderr %q, script without %q", shell, code, stderr, want)
		}
	}
	_, stdout, _ := wirefs("__complete", "mount", "/net", "-o", "")
	for _, want := range []string{"allow_other\n", "t_read=\n", "cache_size=\n", "ro\n", "_netdev\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("completion of -o does not offer %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "sync_wake_up") || strings.Contains(stdout, "options") {
		t.Errorf("completion of -o offers hidden or recursive names:\n%s", stdout)
	}
	_, stdout, _ = wirefs("__complete", "")
	for _, want := range []string{"mount\t", "umount\t", "run\t", "completion\t"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("completion of commands does not offer %q:\n%s", want, stdout)
		}
	}
}

// TestOptions: -o sets the options of the command by their _ names, in
// command-line order with the other options; generic mount options set
// ro and noexec or are ignored.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want func(o *mountOptions) bool
	}{
		{[]string{"-o", "allow_other,t_read=10s,cache_size=2g"}, func(o *mountOptions) bool {
			return o.allowOther && o.ns.tRead.String() == "10s" && o.ns.cacheSize == "2g"
		}},
		{[]string{"-oallow_other,foreground,verbose"}, func(o *mountOptions) bool { return o.allowOther && o.foreground && o.verbose }},
		{[]string{"-o", "allow_other=false", "--allow-other"}, func(o *mountOptions) bool { return o.allowOther }},
		{[]string{"--allow-other", "-o", "allow_other=false"}, func(o *mountOptions) bool { return !o.allowOther }},
		{[]string{"--t-read", "1s", "-o", "t_read=2s", "--t-read=3s"}, func(o *mountOptions) bool { return o.ns.tRead.String() == "3s" }},
		{[]string{"-o", "t-read=4s,log=/x/y,config=/c,accept_new_host_keys,debug_fuse"}, func(o *mountOptions) bool {
			return o.ns.tRead.String() == "4s" && o.logFile == "/x/y" && o.ns.configFile == "/c" && o.ns.acceptNewKeys && o.debugFUSE
		}},
		{[]string{"-o", "rw,ro"}, func(o *mountOptions) bool { return o.flags.readOnly && !o.flags.noExec }},
		{[]string{"-o", "ro,rw,noexec"}, func(o *mountOptions) bool { return !o.flags.readOnly && o.flags.noExec }},
		{[]string{"-o", "noexec", "-o", "exec"}, func(o *mountOptions) bool { return !o.flags.noExec }},
		// What mount(8) and mount.fuse3 pass, and what they might.
		{[]string{"-o", "rw,allow_other,dev,suid"}, func(o *mountOptions) bool { return o.allowOther && !o.flags.readOnly }},
		{[]string{"-o", "rw,noexec,nosuid,nodev,allow_other"}, func(o *mountOptions) bool { return o.flags.noExec }},
		{[]string{"-o", "defaults,_netdev,noauto,auto,nofail,user,users,nouser,owner,group,,comment=systemd.x,x-systemd.automount,x-systemd.requires=a.target,X-mount.mkdir=0755,async,noatime,relatime,nodiratime,lazytime"},
			func(o *mountOptions) bool { return !o.allowOther && !o.flags.readOnly }},
	} {
		var o mountOptions
		c := mountCommand(&o, nil)
		if err := c.ParseFlags(append(tc.args, "/net")); err != nil {
			t.Errorf("mount %q: %v", tc.args, err)
		} else if !tc.want(&o) {
			t.Errorf("mount %q: options %+v", tc.args, o)
		}
	}
}

// TestMountHelperArgs: the command lines mount.fuse3 runs become mount
// commands; other command lines are left alone.
func TestMountHelperArgs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"wirefs", "/net", "-o", "rw,allow_other,dev,suid"}, []string{"mount", "/net", "-o", "rw,allow_other,dev,suid"}},
		{[]string{"none", "/net"}, []string{"mount", "/net"}},
		{[]string{"", "/net", "-o", "rw"}, []string{"mount", "/net", "-o", "rw"}},
		{[]string{"/home/me/wirefs", "/net", "-o", "rw"}, []string{"mount", "/net", "-o", "rw"}}, // made absolute by mount(8)
		{[]string{"/net", "-o", "rw"}, []string{"mount", "/net", "-o", "rw"}},                    // no source
		{[]string{"mount", "/net"}, []string{"mount", "/net"}},
		{[]string{"umount", "/net"}, []string{"umount", "/net"}},
		{[]string{"help", "mount"}, []string{"help", "mount"}},
		{[]string{"umout", "/net"}, []string{"umout", "/net"}},     // a typo is not a source
		{[]string{"wirefs2", "/net"}, []string{"wirefs2", "/net"}}, // nor another name
		{[]string{"home/wirefs", "/net"}, []string{"home/wirefs", "/net"}},
		{[]string{"wirefs", "--help"}, []string{"wirefs", "--help"}},
		{[]string{"wirefs"}, []string{"wirefs"}},
		{[]string{"--help"}, []string{"--help"}},
		{nil, nil},
	} {
		if got := mountHelperArgs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("mountHelperArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSingleDashLongOptions: the old spelling -foreground still works and
// nothing else is changed.
func TestSingleDashLongOptions(t *testing.T) {
	root := newRoot(nil)
	for _, tc := range []struct{ in, want []string }{
		{[]string{"mount", "-foreground", "-allow-other", "-dns-ttl=5s", "/net"}, []string{"mount", "--foreground", "--allow-other", "--dns-ttl=5s", "/net"}},
		{[]string{"mount", "-log", "-v", "-cache-dir", "/c", "/net"}, []string{"mount", "--log", "-v", "--cache-dir", "/c", "/net"}},
		{[]string{"mount", "-o", "-foreground", "/net", "-v", "-help"}, []string{"mount", "-o", "-foreground", "/net", "-v", "--help"}},
		{[]string{"mount", "-fo", "-foreground", "-fv", "-oallow_other", "/net"}, []string{"mount", "-fo", "-foreground", "-fv", "-oallow_other", "/net"}},
		{[]string{"mount", "/net", "--", "-foreground"}, []string{"mount", "/net", "--", "-foreground"}},
		{[]string{"run", "-prefix", "/n", "cat", "-prefix"}, []string{"run", "--prefix", "/n", "cat", "-prefix"}},
		{[]string{"unmount", "-help"}, []string{"unmount", "--help"}},
		{[]string{"nosuch", "-foreground"}, []string{"nosuch", "-foreground"}},
	} {
		if got := singleDashLongOptions(root, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("singleDashLongOptions(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestUnmountFallback: umount(2), then fusermount3, then fusermount.
func TestUnmountFallback(t *testing.T) {
	var ran []string
	fake := func(umountErr error, installed ...string) unmounter {
		ran = nil
		return unmounter{
			umount: func(string) error { ran = append(ran, "umount(2)"); return umountErr },
			lookPath: func(f string) (string, error) {
				if slices.Contains(installed, f) {
					return "/usr/bin/" + f, nil
				}
				return "", errors.New("not found")
			},
			run: func(prog string, args ...string) ([]byte, error) {
				ran = append(ran, prog+" "+strings.Join(args, " "))
				if slices.Contains(installed, "busy") {
					return []byte("fusermount3: failed to unmount /net: Device or resource busy\n"), errors.New("exit status 1")
				}
				return nil, nil
			},
		}
	}
	for _, tc := range []struct {
		umountErr error
		installed []string
		wantErr   string
		wantRan   []string
	}{
		{nil, []string{"fusermount3"}, "", []string{"umount(2)"}},
		{unix.EBUSY, []string{"fusermount3"}, "umount /net: device or resource busy", []string{"umount(2)"}},
		{unix.EPERM, []string{"fusermount3", "fusermount"}, "", []string{"umount(2)", "/usr/bin/fusermount3 -u /net"}},
		{unix.EPERM, []string{"fusermount"}, "", []string{"umount(2)", "/usr/bin/fusermount -u /net"}},
		{unix.EPERM, nil, "umount /net: operation not permitted (and neither fusermount3 nor fusermount is installed)", []string{"umount(2)"}},
		{unix.EPERM, []string{"fusermount3", "busy"}, "umount /net: fusermount3: failed to unmount /net: Device or resource busy",
			[]string{"umount(2)", "/usr/bin/fusermount3 -u /net"}},
	} {
		err := fake(tc.umountErr, tc.installed...).unmount("/net")
		if (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr || !slices.Equal(ran, tc.wantRan) {
			t.Errorf("unmount: %v after %q; want %q after %q", err, ran, tc.wantErr, tc.wantRan)
		}
	}
}
