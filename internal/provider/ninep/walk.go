package ninep

import (
	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"
)

// maxWalk is the most names one Twalk may carry (MAXWELEM).
const maxWalk = 16

// walk returns a new fid for the file names below from (a clone when names
// is empty), in Twalks of at most maxWalk names.
func walk(from p9.File, names []string) (p9.File, error) {
	f, _, err := walkQID(from, names)
	return f, err
}

// walkQID is walk that also returns the qid of the last name walked (zero
// for a clone).
func walkQID(from p9.File, names []string) (p9.File, p9.QID, error) {
	f := from
	var last p9.QID
	for first := true; first || len(names) > 0; first = false {
		n := min(len(names), maxWalk)
		qids, nf, err := f.Walk(names[:n])
		if f != from {
			f.Close()
		}
		if err != nil {
			return nil, last, err
		}
		if len(qids) < n {
			// A partial walk: a later name is missing, and the new fid
			// was not created (clunking it just returns an error).
			// Below a file, it is missing because that is no directory.
			nf.Close()
			if len(qids) > 0 && qids[len(qids)-1].Type&p9.TypeDir == 0 {
				return nil, last, linux.ENOTDIR
			}
			return nil, last, linux.ENOENT
		}
		if n > 0 {
			last = qids[n-1]
		}
		f, names = nf, names[n:]
	}
	return f, last, nil
}

// withFile runs fn on the file names below root. Operations that leave a
// fid as it is (getattr, setattr) use the root itself when names is empty.
func withFile(root p9.File, names []string, fn func(p9.File) error) error {
	if len(names) == 0 {
		return fn(root)
	}
	f, err := walk(root, names)
	if err != nil {
		return err
	}
	defer f.Close()
	return fn(f)
}
