package ftp

import (
	"context"
	"os"
	"strings"

	"wirefs/internal/remote"
	"wirefs/internal/remote/session"
)

var _ remote.Creator = (*Backend)(nil)

// CreateIfMissing makes p with an APPE of nothing when SIZE finds no file:
// APPE creates a missing file and never cuts an existing one, so a file
// another client made between the two is left as it is. Only a file SIZE
// found missing gets perm (SITE CHMOD, where the server has it); one made
// by another client in that gap may get it too, and counts as made here.
func (b *Backend) CreateIfMissing(ctx context.Context, p string, perm os.FileMode) (created bool, err error) {
	b.dropStreams(p)
	pc, err := b.use(ctx, true, "create", p, session.Always, func(pc *pconn) error {
		sp := b.serverPath(p)
		_, serr := pc.sc.FileSize(sp)
		switch {
		case serr == nil:
			created = false
			return nil
		case isConnLoss(serr):
			return serr
		}
		pc.disarm() // jlaffaye asks for a data connection of its own
		created = true
		return pc.sc.Append(sp, strings.NewReader(""))
	})
	if err != nil {
		return false, err
	}
	if created {
		pc.chmodQuietly(p, perm)
	}
	b.put(pc)
	return created, nil
}
