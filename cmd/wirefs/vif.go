package main

import (
	"context"
	"log/slog"

	"github.com/hanwen/go-fuse/v2/fuse"

	"wirefs/internal/ns"
	"wirefs/internal/provider/vif"
)

// newVIF is the vif/ and proc/ provider (seed 003's virtual network
// interfaces). Who makes a change is the FUSE request's caller: both
// doors reach these nodes through FUSE (the catcher through its private
// FUSE door).
func newVIF(log *slog.Logger) *vif.Provider {
	return vif.New(vif.Options{Log: log, Caller: fuseCaller})
}

func fuseCaller(ctx context.Context) (ns.Caller, bool) {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return ns.Caller{}, false
	}
	return ns.Caller{Pid: c.Pid, Uid: c.Uid, Gid: c.Gid}, true
}
