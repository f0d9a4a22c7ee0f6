package sftp

import (
	"cmp"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"
)

// A large store is spread over the connection's streams (conn.streams),
// as large reads are: OpenSSH gives the channel of every SFTP session a
// 2 MiB window, so one session uploads at most 2 MiB per round trip
// (40 MB/s at 50 ms, whatever the link). The data go out in chunks, each
// written at its offset by whichever session is free: the main one from
// the start, and the streams as soon as they are started (at the dial of
// a distant server, else by the first large store) and have opened the
// file too.
// Each session is its own sftp-server process on the server, writing to
// the same file; the store closes every handle, and so has every answer,
// before the file is renamed into place.
//
// Only from spreadRTT up, where the window bounds one session and the
// streams are started at the dial (64 MiB on 2 vCPUs: at 10 ms 0.64 s
// through one session, 0.59 s spread; at 50 ms 2.24 s and 1.11 s).
// Started only at the store itself, the streams came too late at 10 ms
// (0.81 s) and still halved nothing at 50 ms (1.68 s). Near the server
// one session's encryption, not its window, bounds it.
const (
	spreadRTT   = 5 * time.Millisecond
	spreadStore = 8 << 20 // stores of at least this many bytes are spread
	spreadChunk = 1 << 20 // the bytes of one WriteAt
	// writersPerFile chunks are in flight on each session's handle:
	// pkg/sftp sends a chunk's packets at once, so two fill the window.
	writersPerFile = 2
)

// spreadTo writes size bytes of src (size < 0: all of it) to f, and to
// f's file opened again on each stream, and returns how many were written
// and a function that closes the streams' handles (sent at once, waited
// for when called).
func (b *backend) spreadTo(c *conn, p string, f *sftp.File, src *source, size int64) (int64, func() error, error) {
	u := &spread{src: src, size: size, chunks: make(chan spreadPiece), free: make(chan []byte, writersPerFile*(1+streamCount)),
		failed: make(chan struct{}), produced: make(chan struct{})}
	var writers sync.WaitGroup
	write := func(file *sftp.File) {
		for range writersPerFile {
			writers.Go(func() { u.write(file) })
		}
	}
	write(f)
	// The streams join when they are ready, unless the data are all
	// handed out by then.
	ready, streams := c.readyStreams()
	var extraMu sync.Mutex
	var extra []*sftp.File // the file opened on the streams
	joined := make(chan struct{})
	go func() {
		defer close(joined)
		select {
		case <-ready:
		case <-u.produced:
			return
		}
		more := streams()
		b.log.Debug("sftp: a large store spreads over the streams", "path", p, "streams", len(more))
		var opening sync.WaitGroup
		for _, cl := range more {
			opening.Go(func() { // each open is a round trip: all at once
				sf, err := cl.OpenFile(f.Name(), os.O_WRONLY)
				if err != nil {
					b.log.Debug("sftp: a stream cannot open the file of a store; the others carry it", "path", p, "err", err)
					return
				}
				extraMu.Lock()
				extra = append(extra, sf)
				extraMu.Unlock()
				write(sf)
			})
		}
		opening.Wait()
	}()
	u.produce()
	<-joined // no writer is added after this
	writers.Wait()
	closed := make(chan error, len(extra))
	for _, sf := range extra {
		go func() { closed <- sf.Close() }()
	}
	closeStreams := func() error {
		var err error
		for range extra {
			err = cmp.Or(err, <-closed)
		}
		return err
	}
	return u.written.Load(), closeStreams, u.failure.get()
}

// spread is one spread store's data: read from src in chunks, written by
// the sessions' writers.
type spread struct {
	src      *source
	size     int64
	chunks   chan spreadPiece // to the writers; closed when all are handed out, or on failure
	free     chan []byte      // buffers the writers are done with
	written  atomic.Int64
	produced chan struct{} // closed when produce returns

	failure  firstError
	failOnce sync.Once
	failed   chan struct{} // closed at the first error
}

// spreadPiece is a chunk of the data and its offset in the file.
type spreadPiece struct {
	data []byte
	off  int64
}

// produce reads the data into chunks and hands each to a writer, until
// the end (size < 0: of the source) or the first error.
func (u *spread) produce() {
	defer close(u.produced)
	defer close(u.chunks)
	for off := int64(0); u.size < 0 || off < u.size; {
		var buf []byte
		select {
		case buf = <-u.free:
		default: // as many as chunks held at once: one per writer, and this one
			buf = make([]byte, spreadChunk)
		}
		n := int64(spreadChunk)
		if u.size >= 0 {
			n = min(n, u.size-off)
		}
		got, err := io.ReadFull(u.src, buf[:n])
		ended := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !ended {
			u.fail(err)
			return
		}
		if got > 0 {
			select {
			case u.chunks <- spreadPiece{buf[:got], off}:
			case <-u.failed:
				return
			}
			off += int64(got)
		}
		if ended {
			return // a short store's: fill says so
		}
	}
}

// write writes chunks to file until there are none; after a failure it
// only drains them.
func (u *spread) write(file *sftp.File) {
	for c := range u.chunks {
		select {
		case <-u.failed:
		default:
			if n, err := file.WriteAt(c.data, c.off); err != nil {
				u.fail(err)
			} else {
				u.written.Add(int64(n))
			}
		}
		select {
		case u.free <- c.data[:cap(c.data)]:
		default:
		}
	}
}

func (u *spread) fail(err error) {
	u.failure.set(err)
	u.failOnce.Do(func() { close(u.failed) })
}
