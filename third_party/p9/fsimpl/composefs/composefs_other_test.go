//go:build !unix

package composefs

func setUmask() {}
