package server

// The history's integrity and size. The platform keeps, outside the
// sandbox, the last commit each session recorded and sends it with the
// session's next commit: if it is no longer on the history's line, a
// command rewrote the history (git reset, commit --amend on .state) and
// the platform reports it. The history is packed every gcEvery commits,
// dropping what no ref reaches, so its growth is bounded by what it holds.

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/primerhq/primer/runtime/protocol"
)

const (
	// defaultGCEvery is how many commits pass between two packs of the
	// history: loose objects of as many tool calls at most.
	defaultGCEvery = 100
	// maxLineWalk bounds the first-parent walk looking for an expected
	// commit: the platform's last commit of a session is at most as many
	// commits behind the head as calls ran in parallel since.
	maxLineWalk = 10000
)

// onLine reports whether h is the head or an ancestor of it along first
// parents, within maxLineWalk commits.
func (r *stateRepo) onLine(h plumbing.Hash) bool {
	c := r.head
	for range maxLineWalk {
		if c.IsZero() {
			return false
		}
		if c == h {
			return true
		}
		co, err := object.GetCommit(r.st, c)
		if err != nil || len(co.ParentHashes) == 0 {
			return false
		}
		c = co.ParentHashes[0]
	}
	return false
}

// afterCommit packs the history when gcEvery commits passed since the last
// pack, then measures it into res.Bytes. A failed pack costs nothing but
// space: it is retried on the next commit.
func (s *Server) afterCommit(r *stateRepo, res *protocol.StateCommitResult) {
	s.stateCommits++
	every := s.gcEvery
	if every <= 0 {
		every = defaultGCEvery
	}
	gc := s.stateCommits >= every
	if gc && r.gc() == nil {
		s.stateCommits = 0
	}
	res.Bytes = dirBytes(r.dir.FS())
	if gc {
		// The storage caches its pack index: reopen it on the next use.
		s.dropState()
	}
}

// gc writes every object the head reaches into one new pack, then removes
// the old packs and every loose object (reachable ones are in the pack,
// the rest is what a rewrite left behind). Only main is a ref of the
// history, so what main does not reach is garbage.
func (r *stateRepo) gc() (err error) {
	if r.head.IsZero() {
		return nil
	}
	old, err := r.st.ObjectPacks()
	if err != nil {
		return fmt.Errorf("list packs: %w", err)
	}
	objs, err := revlist.Objects(r.st, []plumbing.Hash{r.head}, nil)
	if err != nil {
		return fmt.Errorf("list reachable objects: %w", err)
	}
	w, err := r.st.PackfileWriter()
	if err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	nh, err := packfile.NewEncoder(w, r.st, false).Encode(objs, 10)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	for _, h := range old {
		if h != nh {
			if err := r.st.DeleteOldObjectPackAndIndex(h, time.Time{}); err != nil {
				return fmt.Errorf("remove pack %s: %w", h, err)
			}
		}
	}
	var loose []plumbing.Hash
	if err := r.st.ForEachObjectHash(func(h plumbing.Hash) error {
		loose = append(loose, h)
		return nil
	}); err != nil {
		return fmt.Errorf("list loose objects: %w", err)
	}
	var errList []error
	for _, h := range loose {
		if err := r.st.DeleteLooseObject(h); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errList = append(errList, err)
		}
	}
	r.known = map[plumbing.Hash]struct{}{}
	return errors.Join(errList...)
}

// dirBytes is the total size of the regular files under fsys.
func dirBytes(fsys fs.FS) int64 {
	var n int64
	_ = fs.WalkDir(fsys, ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n
}
