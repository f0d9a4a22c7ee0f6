package ns

import (
	"context"
	"os"
	"strings"
	"syscall"
)

// Alias returns a directory that is path p inside dir, walked on every use
// rather than at mount time, so that a user's mount point of a remote root
// (config file: "/src → sftp://me@host/home/me/src") costs no connection
// until it is used and follows the server when it comes and goes.
func Alias(dir Dir, p string) Dir {
	return &alias{dir: dir, path: clean(p)}
}

type alias struct {
	dir  Dir
	path string
}

// Unalias returns the directory d stands for when d is an alias, else d:
// providers see their own nodes (a rename into an alias must reach the
// provider's directory).
func Unalias(ctx context.Context, d Dir) (Dir, error) {
	if a, ok := d.(*alias); ok {
		return a.target(ctx)
	}
	return d, nil
}

func (a *alias) target(ctx context.Context) (Dir, error) {
	var node Node = a.dir
	for _, name := range strings.Split(a.path, "/") {
		if name == "" {
			continue
		}
		d, ok := node.(Dir)
		if !ok {
			return nil, Errorf(syscall.ENOTDIR, "%s: not a directory", a.path)
		}
		var err error
		if node, err = d.Lookup(ctx, name); err != nil {
			return nil, err
		}
	}
	d, ok := node.(Dir)
	if !ok {
		return nil, Errorf(syscall.ENOTDIR, "%s: not a directory", a.path)
	}
	return d, nil
}

func (a *alias) Attr(ctx context.Context) (Attr, error) {
	d, err := a.target(ctx)
	if err != nil {
		return Attr{}, err
	}
	return d.Attr(ctx)
}

func (a *alias) Lookup(ctx context.Context, name string) (Node, error) {
	d, err := a.target(ctx)
	if err != nil {
		return nil, err
	}
	return d.Lookup(ctx, name)
}

func (a *alias) ReadDir(ctx context.Context) ([]DirEntry, error) {
	d, err := a.target(ctx)
	if err != nil {
		return nil, err
	}
	return d.ReadDir(ctx)
}

// as resolves the alias and asserts that its target implements T.
func as[T any](ctx context.Context, a *alias) (T, error) {
	var zero T
	d, err := a.target(ctx)
	if err != nil {
		return zero, err
	}
	t, ok := d.(T)
	if !ok {
		return zero, Errorf(syscall.EROFS, "%s: read-only", a.path)
	}
	return t, nil
}

func (a *alias) Create(ctx context.Context, c Caller, name string, flags int, perm os.FileMode) (Node, Handle, error) {
	t, err := as[Creator](ctx, a)
	if err != nil {
		return nil, nil, err
	}
	return t.Create(ctx, c, name, flags, perm)
}

func (a *alias) Mkdir(ctx context.Context, name string, perm os.FileMode) (Node, error) {
	t, err := as[Mkdirer](ctx, a)
	if err != nil {
		return nil, err
	}
	return t.Mkdir(ctx, name, perm)
}

func (a *alias) Remove(ctx context.Context, name string, dir bool) error {
	t, err := as[Remover](ctx, a)
	if err != nil {
		return err
	}
	return t.Remove(ctx, name, dir)
}

func (a *alias) Rename(ctx context.Context, name string, to Dir, toName string) error {
	t, err := as[Renamer](ctx, a)
	if err != nil {
		return err
	}
	return t.Rename(ctx, name, to, toName)
}
