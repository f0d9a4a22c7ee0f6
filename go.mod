module wirefs

go 1.26.0

require (
	github.com/cilium/ebpf v0.20.0
	github.com/google/shlex v0.0.0-20191202100458-e7afc7fbc510
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/hugelgupf/p9 v0.3.0
	github.com/jlaffaye/ftp v0.2.4
	github.com/kevinburke/ssh_config v1.6.0
	github.com/pkg/sftp v1.13.12
	github.com/schollz/progressbar/v3 v3.19.1
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.10
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	golang.org/x/crypto v0.58.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
	golang.org/x/time v0.16.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/kr/fs v0.1.0 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/u-root/uio v0.0.0-20230305220412-3e8cd9d6bf63 // indirect
)

replace github.com/hanwen/go-fuse/v2 => ./third_party/go-fuse

replace github.com/pkg/sftp => ./third_party/pkg-sftp
replace github.com/hugelgupf/p9 => ./third_party/p9
replace github.com/jlaffaye/ftp => ./third_party/jlaffaye-ftp
