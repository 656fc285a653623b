package server

// The workspace's history: the platform records every tool call as one
// commit of a git repository kept at <root>/.state, whose work tree is the
// root without .state. Everything is plain go-git plumbing (objects and
// refs), not its worktree and index layer: a commit walks the root once,
// stores the blobs and trees it does not have yet and moves refs/heads/main.
// A hash cache keyed by each file's stat data spares re-reading files that
// did not change, so an unchanged workspace costs one lstat per file.
//
// Every state operation holds Server.stateMu, so parallel tool calls give a
// linear history and never lose a commit.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

const (
	// stateBranch is the one branch of the history.
	stateBranch = plumbing.ReferenceName("refs/heads/main")
	// racyWindow: file timestamps are coarse (a few milliseconds, a second
	// on some filesystems), so a file changed this shortly before a scan
	// could change again without its stat data changing. Its hash is not
	// cached; the next scan reads it again.
	racyWindow = time.Second

	defaultAuthorName  = "primer"
	defaultAuthorEmail = "primer@localhost"
)

// parseCommitID checks a commit id from a request: 40 hex digits.
func parseCommitID(op, field, id string) (plumbing.Hash, error) {
	if !plumbing.IsHash(id) {
		return plumbing.ZeroHash, errs.Field(field, "%s: %s %q: want a commit id of 40 hex digits", op, field, id)
	}
	return plumbing.NewHash(id), nil
}

// signature builds the author and committer of a new commit from the
// request, refusing what would corrupt the commit object.
func signature(op string, req *protocol.Request) (object.Signature, string, error) {
	sig := object.Signature{Name: req.AuthorName, Email: req.AuthorEmail, When: req.Time}
	if sig.Name == "" {
		sig.Name = defaultAuthorName
	}
	if sig.Email == "" {
		sig.Email = defaultAuthorEmail
	}
	if sig.When.IsZero() {
		sig.When = time.Now()
	}
	if strings.ContainsAny(sig.Name, "<>\n\x00") {
		return sig, "", errs.Field("author_name", "%s: author name %q: must not contain <, >, a newline or NUL", op, sig.Name)
	}
	if strings.ContainsAny(sig.Email, "<>\n\x00") {
		return sig, "", errs.Field("author_email", "%s: author email %q: must not contain <, >, a newline or NUL", op, sig.Email)
	}
	msg := req.Message
	if strings.IndexByte(msg, 0) >= 0 {
		return sig, "", errs.Field("message", "%s: message contains a NUL byte", op)
	}
	if msg != "" && !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	return sig, msg, nil
}

func (s *Server) stateCommit(ctx context.Context, req *protocol.Request) (any, error) {
	const op = "state.commit"
	sig, msg, err := signature(op, req)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lockState(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, err := s.openState(op, true)
	if err != nil {
		return nil, err
	}
	var expect plumbing.Hash
	if req.Expect != "" {
		if expect, err = parseCommitID(op, "expect", req.Expect); err != nil {
			return nil, err
		}
	}
	missing := !expect.IsZero() && !r.onLine(expect)
	res, err := s.record(op, r, sig, msg)
	if err != nil {
		return nil, err
	}
	res.ExpectMissing = missing
	s.afterCommit(r, &res)
	return res, nil
}

// record commits the work tree on top of the head.
func (s *Server) record(op string, r *stateRepo, sig object.Signature, msg string) (protocol.StateCommitResult, error) {
	sc := &scanner{
		s:      s,
		r:      r,
		write:  true,
		racy:   time.Now().Add(-racyWindow).UnixNano(),
		files:  map[string]treeFile{},
		hashes: make(map[string]cachedHash, len(r.hashes)),
	}
	tree, empty, err := sc.dir(s.root, "")
	if err == nil && empty {
		// The root is a tree even when there is nothing in it.
		tree = plumbing.ComputeHash(plumbing.TreeObject, nil)
		err = r.store(tree, plumbing.TreeObject, nil)
	}
	if err != nil {
		return protocol.StateCommitResult{}, fmt.Errorf("%s: %w", op, err)
	}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree}
	parent := ""
	if !r.head.IsZero() {
		c.ParentHashes = []plumbing.Hash{r.head}
		parent = r.head.String()
	}
	o := r.st.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return protocol.StateCommitResult{}, fmt.Errorf("%s: encode commit: %w", op, err)
	}
	h, err := r.st.SetEncodedObject(o)
	if err != nil {
		return protocol.StateCommitResult{}, fmt.Errorf("%s: write commit: %w", op, err)
	}
	if err := r.writeFile(stateBranch.String(), h.String()+"\n"); err != nil {
		return protocol.StateCommitResult{}, fmt.Errorf("%s: update %s: %w", op, stateBranch, err)
	}
	changed := changesBetween(r.files, sc.files)
	r.head, r.files, r.hashes = h, sc.files, sc.hashes
	if sc.skipped == nil {
		sc.skipped = []string{}
	}
	slices.Sort(sc.skipped)
	return protocol.StateCommitResult{Commit: h.String(), Parent: parent, Changed: changed, Skipped: sc.skipped}, nil
}

// changesBetween lists what differs from old to new, sorted by path.
func changesBetween(old, new map[string]treeFile) []protocol.StateChange {
	out := []protocol.StateChange{}
	for p, n := range new {
		o, ok := old[p]
		switch {
		case !ok:
			out = append(out, protocol.StateChange{Path: p, Change: protocol.ChangeAdded})
		case o != n:
			out = append(out, protocol.StateChange{Path: p, Change: protocol.ChangeModified})
		}
	}
	for p := range old {
		if _, ok := new[p]; !ok {
			out = append(out, protocol.StateChange{Path: p, Change: protocol.ChangeDeleted})
		}
	}
	slices.SortFunc(out, func(a, b protocol.StateChange) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// lockState takes stateMu for a request of a connection whose context is
// ctx. The state operations and reset queue on it; one whose client left
// while it waited does not run (a commit's tree scan, a reset, for nobody).
func (s *Server) lockState(ctx context.Context) (unlock func(), err error) {
	s.stateMu.Lock()
	if err := ctx.Err(); err != nil {
		s.stateMu.Unlock()
		return nil, errs.E(errs.Unavailable, "runtime: connection closed: %w", err)
	}
	return s.stateMu.Unlock, nil
}
