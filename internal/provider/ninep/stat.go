package ninep

import (
	"context"
	"os"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"

	"wirefs/internal/remote"
)

// statParallel bounds the Tgetattr requests one listing has in flight.
const statParallel = 16

// statMask is what Tgetattr asks for.
var statMask = p9.AttrMask{Mode: true, Size: true, MTime: true, ATime: true, UID: true, GID: true, NLink: true}

// Stat returns the attributes of p.
func (b *Backend) Stat(ctx context.Context, p string) (remote.Info, error) {
	return call(ctx, b, "stat", p, true, func(s *conn) (remote.Info, error) {
		pl, err := b.locate(s, p)
		if err != nil {
			return remote.Info{}, err
		}
		if pl.root == nil {
			if _, err := b.above(s, "stat", p); err != nil {
				return remote.Info{}, err
			}
			return remote.Info{Name: path.Base(p), Mode: synthesizedMode}, nil
		}
		var info remote.Info
		err = withFile(pl.root, pl.names, func(f p9.File) error {
			info, err = statFile(f, path.Base(p))
			return err
		})
		return info, err
	}, nil)
}

// List returns the entries of directory p with their attributes: one
// Treaddir stream, then the Tgetattrs in parallel (9P2000.L's readdir
// gives only names and types).
func (b *Backend) List(ctx context.Context, p string) ([]remote.Info, error) {
	return call(ctx, b, "list", p, true, func(s *conn) ([]remote.Info, error) {
		pl, err := b.locate(s, p)
		if err != nil {
			return nil, err
		}
		if pl.root == nil {
			names, err := b.above(s, "list", p)
			infos := make([]remote.Info, len(names))
			for i, n := range names {
				infos[i] = remote.Info{Name: n, Mode: synthesizedMode}
			}
			return infos, err
		}
		dir, err := walk(pl.root, pl.names)
		if err != nil {
			return nil, err
		}
		defer dir.Close()
		ents, err := readdir(dir, s.payload())
		if err != nil {
			return nil, err
		}
		return statEntries(dir, ents)
	}, nil)
}

// readdir returns the entries of dir but "." and "..". It reads through
// a clone, because a fid that is open cannot be walked from.
func readdir(dir p9.File, count int) ([]p9.Dirent, error) {
	f, err := walk(dir, nil)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	qid, _, err := f.Open(p9.ReadOnly)
	if err != nil {
		return nil, err
	}
	if qid.Type&p9.TypeDir == 0 {
		return nil, linux.ENOTDIR
	}
	var ents []p9.Dirent
	var off uint64
	for {
		batch, err := f.Readdir(off, uint32(count))
		if err != nil {
			return nil, err
		}
		if len(batch) == 0 {
			return ents, nil
		}
		for _, e := range batch {
			if e.Name != "." && e.Name != ".." {
				ents = append(ents, e)
			}
		}
		off = batch[len(batch)-1].Offset
	}
}

// statEntries gets the attributes of the entries of dir, statParallel at
// a time over the one connection. An entry removed meanwhile is left
// out; one the server will not stat keeps the type readdir gave.
func statEntries(dir p9.File, ents []p9.Dirent) ([]remote.Info, error) {
	infos := make([]remote.Info, len(ents))
	keep := make([]bool, len(ents))
	errs := make([]error, len(ents))
	sem := make(chan struct{}, statParallel)
	var wg sync.WaitGroup
	for i, e := range ents {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := withFile(dir, []string{e.Name}, func(f p9.File) error {
				var err error
				infos[i], err = statFile(f, e.Name)
				return err
			})
			errno, refused := serverErrno(err)
			switch {
			case err == nil:
				keep[i] = true
			case refused && errno == syscall.ENOENT:
			case refused:
				infos[i] = remote.Info{Name: e.Name, Mode: direntMode(e.Type), Size: -1}
				keep[i] = true
			default:
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	out := infos[:0]
	for i := range infos {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if keep[i] {
			out = append(out, infos[i])
		}
	}
	return out, nil
}

func direntMode(t p9.QIDType) os.FileMode {
	switch {
	case t&p9.TypeDir != 0:
		return os.ModeDir
	case t&p9.TypeSymlink != 0:
		return os.ModeSymlink
	}
	return 0
}

// statFile returns the attributes of f itself: a walk never follows a
// symbolic link, so this is lstat.
func statFile(f p9.File, name string) (remote.Info, error) {
	_, valid, a, err := f.GetAttr(statMask)
	if err != nil {
		return remote.Info{}, err
	}
	info := remote.Info{
		Name:  name,
		Mode:  osMode(a.Mode),
		Size:  int64(a.Size),
		Mtime: time.Unix(int64(a.MTimeSeconds), int64(a.MTimeNanoSeconds)),
	}
	if valid.ATime {
		info.Atime = time.Unix(int64(a.ATimeSeconds), int64(a.ATimeNanoSeconds))
	}
	if valid.NLink {
		info.Nlink = uint32(a.NLink)
	}
	if valid.UID && valid.GID {
		info.Owner = &remote.Owner{Uid: uint32(a.UID), Gid: uint32(a.GID)}
	}
	return info, nil
}

// osMode converts a Linux st_mode to an os.FileMode.
func osMode(m p9.FileMode) os.FileMode {
	mode := os.FileMode(m & 0o777)
	for _, bit := range modeBits {
		if uint32(m)&bit.unix != 0 {
			mode |= bit.os
		}
	}
	switch {
	case m.IsDir():
		mode |= os.ModeDir
	case m.IsSymlink():
		mode |= os.ModeSymlink
	case m.IsNamedPipe():
		mode |= os.ModeNamedPipe
	case m.IsSocket():
		mode |= os.ModeSocket
	case m.IsCharacterDevice():
		mode |= os.ModeDevice | os.ModeCharDevice
	case m.IsBlockDevice():
		mode |= os.ModeDevice
	}
	return mode
}
