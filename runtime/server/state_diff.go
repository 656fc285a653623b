package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

const (
	// patchLimit caps state.diff's patch; past it the patch is cut at a
	// line end and marked truncated.
	patchLimit = 4 << 20
	// patchBlobLimit: a file larger than this on either side is named in
	// the patch like a binary file, not diffed line by line.
	patchBlobLimit = 1 << 20
	// patchTimeout bounds the line diffs of one state.diff; the patch is
	// marked truncated when it runs out.
	patchTimeout = 20 * time.Second
)

func (s *Server) stateDiff(ctx context.Context, req *protocol.Request) (any, error) {
	const op = "state.diff"
	var from, to plumbing.Hash
	var err error
	if req.To != "" {
		if to, err = parseCommitID(op, "to", req.To); err != nil {
			return nil, err
		}
	}
	if req.From != "" {
		if from, err = parseCommitID(op, "from", req.From); err != nil {
			return nil, err
		}
	}
	unlock, err := s.lockState(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, err := s.openState(op, false)
	if err != nil {
		return nil, err
	}
	if r == nil || r.head.IsZero() {
		if req.To == "" {
			return nil, errs.E(errs.NotFound, "%s: no commits yet", op)
		}
		return nil, errs.E(errs.NotFound, "%s: commit %s not found", op, to)
	}
	if to.IsZero() {
		to = r.head
	}
	toC, err := r.commit(op, to)
	if err != nil {
		return nil, err
	}
	if from.IsZero() && len(toC.ParentHashes) > 0 {
		from = toC.ParentHashes[0]
	}
	var fromTree *object.Tree // nil: the empty tree
	if !from.IsZero() {
		fromC, err := r.commit(op, from)
		if err != nil {
			return nil, err
		}
		if fromTree, err = fromC.Tree(); err != nil {
			return nil, fmt.Errorf("%s: tree of %s: %w", op, from, err)
		}
	}
	toTree, err := toC.Tree()
	if err != nil {
		return nil, fmt.Errorf("%s: tree of %s: %w", op, to, err)
	}
	changes, err := object.DiffTree(fromTree, toTree)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	slices.SortFunc(changes, func(a, b *object.Change) int { return strings.Compare(changeName(a), changeName(b)) })
	res := protocol.StateDiffResult{To: to.String(), Files: make([]protocol.StateChange, 0, len(changes))}
	if !from.IsZero() {
		res.From = from.String()
	}
	for _, c := range changes {
		kind, err := changeKind(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		res.Files = append(res.Files, protocol.StateChange{Path: changeName(c), Change: kind})
	}
	if res.Patch, res.Truncated, err = r.patch(changes); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return res, nil
}

func changeName(c *object.Change) string {
	if c.To.Name != "" {
		return c.To.Name
	}
	return c.From.Name
}

func changeKind(c *object.Change) (string, error) {
	a, err := c.Action()
	if err != nil {
		return "", err
	}
	switch a {
	case merkletrie.Insert:
		return protocol.ChangeAdded, nil
	case merkletrie.Delete:
		return protocol.ChangeDeleted, nil
	}
	return protocol.ChangeModified, nil
}

// patch renders changes as one unified diff, file by file, stopping at
// patchLimit or patchTimeout.
func (r *stateRepo) patch(changes object.Changes) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), patchTimeout)
	defer cancel()
	var out, one bytes.Buffer
	for _, c := range changes {
		fp, err := r.filePatch(ctx, c)
		if errors.Is(err, object.ErrCanceled) || ctx.Err() != nil {
			return out.String(), true, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("patch %s: %w", changeName(c), err)
		}
		one.Reset()
		if err := fdiff.NewUnifiedEncoder(&one, fdiff.DefaultContextLines).Encode(filePatches{fp}); err != nil {
			return "", false, fmt.Errorf("patch %s: %w", changeName(c), err)
		}
		if out.Len()+one.Len() > patchLimit {
			rest := one.Bytes()[:patchLimit-out.Len()]
			if i := bytes.LastIndexByte(rest, '\n'); i >= 0 {
				out.Write(rest[:i+1])
			}
			return out.String(), true, nil
		}
		out.Write(one.Bytes())
	}
	return out.String(), false, nil
}

// filePatch diffs one change line by line, or names it as binary when a
// side is too large to diff.
func (r *stateRepo) filePatch(ctx context.Context, c *object.Change) (fdiff.FilePatch, error) {
	large := false
	for _, e := range []object.ChangeEntry{c.From, c.To} {
		if e.Name == "" || !e.TreeEntry.Mode.IsFile() {
			continue
		}
		n, err := r.st.EncodedObjectSize(e.TreeEntry.Hash)
		if err != nil {
			return nil, fmt.Errorf("blob %s: %w", e.TreeEntry.Hash, err)
		}
		large = large || n > patchBlobLimit
	}
	if large {
		bp := binaryPatch{}
		if c.From.Name != "" {
			bp.from = patchFile{c.From.Name, c.From.TreeEntry}
		}
		if c.To.Name != "" {
			bp.to = patchFile{c.To.Name, c.To.TreeEntry}
		}
		return bp, nil
	}
	p, err := c.PatchContext(ctx)
	if err != nil {
		return nil, err
	}
	fps := p.FilePatches()
	if len(fps) != 1 {
		return nil, fmt.Errorf("got %d file patches for one change", len(fps))
	}
	return fps[0], nil
}

// filePatches is an fdiff.Patch of given file patches.
type filePatches []fdiff.FilePatch

func (p filePatches) FilePatches() []fdiff.FilePatch { return p }
func (filePatches) Message() string                  { return "" }

// binaryPatch names a change without its lines.
type binaryPatch struct {
	from, to fdiff.File // nil for a side that does not exist
}

func (p binaryPatch) IsBinary() bool                  { return true }
func (p binaryPatch) Files() (fdiff.File, fdiff.File) { return p.from, p.to }
func (binaryPatch) Chunks() []fdiff.Chunk             { return nil }

type patchFile struct {
	path string
	e    object.TreeEntry
}

func (f patchFile) Hash() plumbing.Hash     { return f.e.Hash }
func (f patchFile) Mode() filemode.FileMode { return f.e.Mode }
func (f patchFile) Path() string            { return f.path }
