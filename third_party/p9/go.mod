module github.com/hugelgupf/p9

go 1.20

require (
	github.com/hugelgupf/socketpair v0.0.0-20190730060125-05d35a94e714
	github.com/hugelgupf/vmtest v0.0.0-20230810222836-f8c8e381617c
	github.com/u-root/u-root v0.11.1-0.20230807200058-f87ad7ccb594
	github.com/u-root/uio v0.0.0-20230305220412-3e8cd9d6bf63
	golang.org/x/exp v0.0.0-20230810033253-352e893a4cad
	golang.org/x/sys v0.11.0
	google.golang.org/grpc v1.53.0
)

require (
	github.com/Netflix/go-expect v0.0.0-20220104043353-73e0943537d2 // indirect
	github.com/creack/pty v1.1.18 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/google/goterm v0.0.0-20200907032337-555d40f16ae2 // indirect
	github.com/hashicorp/errwrap v1.1.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/insomniacslk/dhcp v0.0.0-20230731140434-0f9eb93a696c // indirect
	github.com/josharian/native v1.1.0 // indirect
	github.com/klauspost/compress v1.16.7 // indirect
	github.com/klauspost/pgzip v1.2.6 // indirect
	github.com/mattn/go-isatty v0.0.19 // indirect
	github.com/mdlayher/packet v1.1.2 // indirect
	github.com/mdlayher/socket v0.4.1 // indirect
	github.com/pierrec/lz4/v4 v4.1.18 // indirect
	github.com/spf13/pflag v1.0.5 // indirect
	github.com/u-root/gobusybox/src v0.0.0-20230806212452-e9366a5b9fdc // indirect
	github.com/ulikunitz/xz v0.5.11 // indirect
	github.com/vishvananda/netlink v1.2.1-beta.2 // indirect
	github.com/vishvananda/netns v0.0.4 // indirect
	golang.org/x/mod v0.12.0 // indirect
	golang.org/x/net v0.14.0 // indirect
	golang.org/x/sync v0.3.0 // indirect
	golang.org/x/tools v0.12.0 // indirect
	src.elv.sh v0.16.0-rc1.0.20220116211855-fda62502ad7f // indirect
)
