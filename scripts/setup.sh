#!/usr/bin/env bash
# Installs what wirefs needs to build, test and demo on Debian 12 and
# fetches the Go modules. Idempotent; needs root (or sudo) only to install
# missing packages.
set -euo pipefail
cd "$(dirname "$0")/.."

# The servers are the real peers the remote-file tests start on loopback
# (each with its own throwaway configuration); sshfs, rclone, httpdirfs and
# proot are the peers the benchmarks compare against. clang, llvm and
# libbpf-dev regenerate the VIF classifiers (go generate ./internal/provider/vif;
# the compiled programs are committed); iperf3 drives bench/vif, where
# trickle is the peer of wirefs nice.
pkgs=(fuse3 socat iproute2 gcc make python3 procps psmisc util-linux
	openssh-server openssh-client vsftpd nginx-light diod
	sshfs rclone httpdirfs proot
	clang llvm libbpf-dev iperf3 trickle)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	echo "setup: installing ${missing[*]}" >&2
	# Installing a server must not start it as a system service listening
	# on every address: tests start their own on loopback. policy-rc.d is
	# Debian's switch for that; ours is removed afterwards.
	policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' | $sudo tee $policy >/dev/null
		$sudo chmod 755 $policy
		trap '$sudo rm -f $policy' EXIT
	fi
	for try in 1 2 3; do
		$sudo apt-get update -qq &&
			DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null &&
			break
		[ "$try" = 3 ] && { echo "setup: apt-get failed" >&2; exit 1; }
		sleep 5
	done
fi

# Debian's udev rule gives /dev/fuse mode 0666 so ordinary users can mount
# through fusermount3; containers and minimal VMs without udev leave 0600.
if [ "$(id -u)" = 0 ] && [ -c /dev/fuse ] && [ "$(stat -c %a /dev/fuse)" != 666 ]; then
	chmod 0666 /dev/fuse
fi

if ! command -v go >/dev/null; then
	echo "setup: Go is not installed; wirefs needs Go $(sed -n 's/^go //p' go.mod) or newer (https://go.dev/doc/install)" >&2
	exit 1
fi
go mod download
go build -buildvcs=auto -o bin/wirefs ./cmd/wirefs
