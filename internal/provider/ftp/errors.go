package ftp

import (
	"context"
	"errors"
	"net/textproto"
	"path"
	"strconv"
	"strings"
	"syscall"

	ftplib "github.com/jlaffaye/ftp"

	"wirefs/internal/ns"
)

// replyErrno maps an FTP error reply to an errno. RFC 959's codes say
// little: 550 is "file unavailable" whether it is missing, forbidden or a
// directory, and vsftpd's texts ("Failed to open file.", "Delete
// operation failed.") do not tell either. So the text is read for the
// words servers commonly use, and when it says nothing, ambiguous is true:
// the caller looks at the file to decide (see pconn.explain).
func replyErrno(code int, msg string) (errno syscall.Errno, ambiguous bool) {
	switch code {
	case ftplib.StatusNotLoggedIn, ftplib.StatusStorNeedAccount, ftplib.StatusInvalidCredentials:
		return syscall.EACCES, false
	case ftplib.StatusExceededStorage, ftplib.Status452:
		return syscall.ENOSPC, false
	case ftplib.StatusBadCommand, ftplib.StatusNotImplemented, ftplib.StatusNotImplementedParameter:
		return syscall.ENOTSUP, false
	case ftplib.StatusBadArguments:
		return syscall.EINVAL, false
	case ftplib.StatusFileUnavailable, ftplib.StatusBadFileName, ftplib.StatusFileActionIgnored, ftplib.StatusPageTypeUnknown:
		if e, ok := errnoFromText(msg); ok {
			return e, false
		}
		if code == ftplib.StatusBadFileName {
			// 553 "file name not allowed": refused, unless the
			// look at the file finds a better reason.
			return syscall.EACCES, true
		}
		return syscall.EIO, true
	}
	return syscall.EIO, false
}

// errnoFromText reads a reply's text for the reasons servers spell out.
func errnoFromText(msg string) (syscall.Errno, bool) {
	m := strings.ToLower(msg)
	for _, w := range []struct {
		words []string
		errno syscall.Errno
	}{
		{[]string{"quota", "disk full", "no space", "not enough space", "insufficient storage"}, syscall.ENOSPC},
		{[]string{"not empty"}, syscall.ENOTEMPTY},
		{[]string{"not a directory"}, syscall.ENOTDIR},
		{[]string{"is a directory"}, syscall.EISDIR},
		{[]string{"already exists", "file exists", "directory exists"}, syscall.EEXIST},
		{[]string{"no such file", "no such directory", "not found", "does not exist", "doesn't exist", "cannot find", "can't find"}, syscall.ENOENT},
		{[]string{"permission denied", "access denied", "access is denied", "not allowed", "forbidden", "read-only", "read only"}, syscall.EACCES},
	} {
		for _, word := range w.words {
			if strings.Contains(m, word) {
				return w.errno, true
			}
		}
	}
	return 0, false
}

// tooManyConnections reports whether err is the server refusing a
// connection or login because the client has too many already: 421 at
// the greeting or login (vsftpd's max_per_ip, pyftpdlib's
// max_cons_per_ip, Pure-FTPd), or a refused login whose text says so
// (ProFTPD's MaxClientsPerHost answers 530 "Sorry, the maximum number of
// clients (N) from your host are already connected."; jlaffaye passes a
// refused USER on as its text alone).
func tooManyConnections(err error) bool {
	var reply *textproto.Error
	if errors.As(err, &reply) && reply.Code == ftplib.StatusNotAvailable {
		return true
	}
	if !errors.As(err, &reply) && !isRefusalText(err) {
		return false // the connection failed
	}
	m := strings.ToLower(err.Error())
	for _, w := range []string{"too many", "maximum number of", "already connected", "connections from"} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

// isConnLoss reports whether err means the control connection is no
// longer usable (as opposed to the server refusing one request on a
// healthy connection).
func isConnLoss(err error) bool {
	if err == nil {
		return false
	}
	var nsErr *ns.Error
	if errors.As(err, &nsErr) || errors.Is(err, ftplib.ErrInvalidCommand) {
		return false
	}
	var reply *textproto.Error
	if errors.As(err, &reply) {
		// vsftpd's "500 OOPS: ..." is its session dying (a killed
		// helper process: "child died"); the connection closes next.
		return reply.Code == ftplib.StatusNotAvailable ||
			reply.Code == ftplib.StatusBadCommand && strings.HasPrefix(reply.Msg, "OOPS")
	}
	return true
}

// explain turns the server's refusal of op on p into an errno, looking at
// the file through the same connection when the reply is ambiguous.
func (pc *pconn) explain(op, p string, err error) error {
	var nsErr *ns.Error
	if errors.As(err, &nsErr) {
		return err
	}
	if errors.Is(err, ftplib.ErrInvalidCommand) {
		return pc.b.srv.Errorf(syscall.EINVAL, op, strconv.Quote(p), "FTP cannot carry a name with a line break")
	}
	var reply *textproto.Error
	if !errors.As(err, &reply) {
		return pc.b.srv.Failure(context.Background(), op, p, err, false)
	}
	errno, ambiguous := replyErrno(reply.Code, reply.Msg)
	if ambiguous {
		errno = pc.lookAt(op, p, errno)
	}
	return pc.b.srv.Errorf(errno, op, p, "the server said %d %s", reply.Code, strings.TrimSpace(reply.Msg))
}

// lookAt decides an ambiguous refusal from what exists: a missing file is
// ENOENT, the wrong kind of file its own errno, anything else was refused
// (EACCES). guess is kept when the server's listing does not answer.
func (pc *pconn) lookAt(op, p string, guess syscall.Errno) syscall.Errno {
	if guess == syscall.EIO {
		guess = syscall.EACCES
	}
	info, found, err := pc.find(p)
	if err != nil {
		pc.broken = pc.broken || isConnLoss(err)
		return guess
	}
	isDir := found && info.Mode.IsDir()
	switch op {
	case "mkdir", "store":
		if op == "mkdir" && found {
			return syscall.EEXIST
		}
		if op == "store" && isDir {
			return syscall.EISDIR
		}
		if _, parentFound, err := pc.find(path.Dir(p)); err == nil && !parentFound {
			return syscall.ENOENT
		}
		return guess
	case "rename":
		if !found {
			return syscall.ENOENT
		}
		return guess
	}
	switch {
	case !found:
		return syscall.ENOENT
	case op == "remove" && isDir:
		return syscall.EISDIR
	case op == "read" && isDir:
		return syscall.EISDIR
	case (op == "rmdir" || op == "list") && !isDir:
		return syscall.ENOTDIR
	case op == "rmdir":
		if entries, _, err := pc.list(p); err == nil && len(entries) > 0 {
			return syscall.ENOTEMPTY
		}
	}
	return guess
}
