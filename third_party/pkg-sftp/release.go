//go:build !debug
// +build !debug

package sftp

func debug(fmt string, args ...any) {}
