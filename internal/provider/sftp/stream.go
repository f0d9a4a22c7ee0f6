package sftp

import (
	"context"
	"io"
	"os"

	"wirefs/internal/remote"
)

var _ remote.StreamStorer = (*backend)(nil)

// StoreStream is Store for data a program is still writing
// (remote.StreamStorer): the bytes go out as r yields them, spread over
// the streams of a distant server as a large store's (upload.go), and
// take p's name, through the temporary, once r has ended. r's waits for
// the program are kept out of the connection's watchdog (source.pause).
func (b *backend) StoreStream(ctx context.Context, p string, r io.Reader, perm os.FileMode) error {
	return b.store(ctx, p, r, -1, perm, false)
}
