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
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

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

// stateConfig makes `git --git-dir=ROOT/.state` find its work tree by
// itself; go-git never reads it.
const stateConfig = `[core]
	repositoryformatversion = 0
	filemode = true
	bare = false
	worktree = ..
	logallrefupdates = false
`

// treeFile is a file of a commit's tree: its blob and mode.
type treeFile struct {
	hash plumbing.Hash
	mode filemode.FileMode
}

// statKey is the stat data that says a file is unchanged since it was
// hashed. ctime is in it because it moves on every write and chmod, even
// when mtime is set back.
type statKey struct {
	size, mtime, ctime int64
	ino                uint64
	mode               os.FileMode
}

type cachedHash struct {
	key  statKey
	hash plumbing.Hash
}

// stateRepo is the open history. It is only used under Server.stateMu.
type stateRepo struct {
	dir      *os.Root // the .state directory
	dev, ino uint64   // .state's identity when opened, to notice it replaced
	fs       *rootFS
	st       *filesystem.Storage

	head  plumbing.Hash       // refs/heads/main as last read; zero before the first commit
	files map[string]treeFile // head's tree, flattened
	// hashes maps a work tree path to its blob while its stat data holds.
	hashes map[string]cachedHash
	// known holds objects certainly in the store, so they are neither
	// looked up nor written again.
	known map[plumbing.Hash]struct{}
}

// openState returns the history, opening or (with create) initialising
// it. Without create and without a repository it returns nil. The caller
// holds stateMu.
func (s *Server) openState(op string, create bool) (*stateRepo, error) {
	fi, err := s.root.Lstat(protocol.StateDir)
	if errors.Is(err, fs.ErrNotExist) {
		s.dropState()
		if !create {
			return nil, nil
		}
		if err := s.root.Mkdir(protocol.StateDir, 0o755); err != nil {
			return nil, fsError(op, protocol.StateDir, err)
		}
		fi, err = s.root.Lstat(protocol.StateDir)
	}
	if err != nil {
		return nil, fsError(op, protocol.StateDir, err)
	}
	if !fi.IsDir() {
		s.dropState()
		return nil, errs.E(errs.Conflict, "%s: %s is not a directory", op, protocol.StateDir)
	}
	sys := fi.Sys().(*syscall.Stat_t)
	if r := s.state; r != nil && r.dev == uint64(sys.Dev) && r.ino == sys.Ino {
		if err := r.refresh(); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		return r, nil
	}
	// New, or replaced behind the runtime's back (rm -rf .state): start
	// from what is on disk.
	s.dropState()
	dir, err := s.root.OpenRoot(protocol.StateDir)
	if err != nil {
		return nil, fsError(op, protocol.StateDir, err)
	}
	r := &stateRepo{
		dir:    dir,
		dev:    uint64(sys.Dev),
		ino:    sys.Ino,
		fs:     &rootFS{root: dir},
		hashes: map[string]cachedHash{},
		known:  map[plumbing.Hash]struct{}{},
	}
	r.st = filesystem.NewStorage(r.fs, cache.NewObjectLRUDefault())
	if _, err := dir.Lstat("HEAD"); errors.Is(err, fs.ErrNotExist) {
		if !create {
			_ = dir.Close()
			return nil, nil
		}
		err = r.init()
		if err != nil {
			_ = dir.Close()
			return nil, fmt.Errorf("%s: init %s: %w", op, protocol.StateDir, err)
		}
	} else if err != nil {
		_ = dir.Close()
		return nil, fsError(op, protocol.StateDir+"/HEAD", err)
	}
	if err := r.refresh(); err != nil {
		_ = dir.Close()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	s.state = r
	return r, nil
}

// dropState forgets the open history and its caches.
func (s *Server) dropState() {
	if s.state != nil {
		_ = s.state.dir.Close()
		s.state = nil
	}
}

// init lays out an empty repository whose HEAD is main.
func (r *stateRepo) init() error {
	if err := r.st.Init(); err != nil {
		return err
	}
	if err := r.writeFile("config", stateConfig); err != nil {
		return err
	}
	// The git CLI, pointed at the work tree, would list .state as untracked.
	if err := r.writeFile("info/exclude", "/"+protocol.StateDir+"/\n"); err != nil {
		return err
	}
	// HEAD last: its presence is what makes the directory a repository.
	return r.writeFile("HEAD", "ref: "+stateBranch.String()+"\n")
}

// writeFile replaces a file of the repository atomically, so a crash never
// leaves a ref half written.
func (r *stateRepo) writeFile(name, content string) error {
	f, err := r.fs.TempFile(".", "tmp_")
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(content))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.fs.Rename(f.Name(), name)
	}
	if err != nil {
		_ = r.fs.Remove(f.Name())
	}
	return err
}

// refresh reads refs/heads/main and, if it moved, the files of its tree.
// A branch that moved or vanished behind the runtime's back (a command ran
// git on .state, or replaced it) may come with objects gone too: then
// nothing is assumed stored any more.
func (r *stateRepo) refresh() error {
	ref, err := r.st.Reference(stateBranch)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		if !r.head.IsZero() {
			r.known = map[plumbing.Hash]struct{}{}
		}
		r.head, r.files = plumbing.ZeroHash, map[string]treeFile{}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", stateBranch, err)
	}
	if ref.Hash() == r.head && r.files != nil {
		return nil
	}
	if r.files != nil {
		r.known = map[plumbing.Hash]struct{}{}
	}
	c, err := object.GetCommit(r.st, ref.Hash())
	if err != nil {
		return fmt.Errorf("read head commit %s: %w", ref.Hash(), err)
	}
	files := map[string]treeFile{}
	if err := r.flatten(c.TreeHash, "", files); err != nil {
		return fmt.Errorf("read head commit %s: %w", ref.Hash(), err)
	}
	r.head, r.files = ref.Hash(), files
	return nil
}

// flatten adds the files of tree h, under prefix, to out.
func (r *stateRepo) flatten(h plumbing.Hash, prefix string, out map[string]treeFile) error {
	t, err := object.GetTree(r.st, h)
	if err != nil {
		return fmt.Errorf("tree %s: %w", h, err)
	}
	r.known[h] = struct{}{}
	for _, e := range t.Entries {
		p := path.Join(prefix, e.Name)
		switch e.Mode {
		case filemode.Dir:
			if err := r.flatten(e.Hash, p, out); err != nil {
				return err
			}
		case filemode.Submodule:
		default:
			out[p] = treeFile{hash: e.Hash, mode: e.Mode}
		}
	}
	return nil
}

// store writes an object unless the store has it.
func (r *stateRepo) store(h plumbing.Hash, typ plumbing.ObjectType, data []byte) error {
	if _, ok := r.known[h]; ok {
		return nil
	}
	err := r.st.HasEncodedObject(h)
	if err != nil && !errors.Is(err, plumbing.ErrObjectNotFound) {
		return fmt.Errorf("look up object %s: %w", h, err)
	}
	if err != nil {
		o := r.st.NewEncodedObject()
		o.SetType(typ)
		o.SetSize(int64(len(data)))
		w, err := o.Writer()
		if err == nil {
			_, err = w.Write(data)
		}
		if err != nil {
			return fmt.Errorf("write object %s: %w", h, err)
		}
		if _, err := r.st.SetEncodedObject(o); err != nil {
			return fmt.Errorf("write object %s: %w", h, err)
		}
	}
	r.known[h] = struct{}{}
	return nil
}

// commit reads commit h; a missing one is errs.NotFound.
func (r *stateRepo) commit(op string, h plumbing.Hash) (*object.Commit, error) {
	c, err := object.GetCommit(r.st, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, errs.E(errs.NotFound, "%s: commit %s not found", op, h)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read commit %s: %w", op, h, err)
	}
	return c, nil
}

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

func (s *Server) stateCommit(req *protocol.Request) (any, error) {
	const op = "state.commit"
	sig, msg, err := signature(op, req)
	if err != nil {
		return nil, err
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	r, err := s.openState(op, true)
	if err != nil {
		return nil, err
	}
	return s.record(op, r, sig, msg)
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

// scanner hashes the work tree into trees: with write it stores what the
// repository lacks (a commit), without it only computes hashes (restore
// comparing the work tree with a commit).
type scanner struct {
	s       *Server
	r       *stateRepo
	write   bool
	racy    int64 // files with mtime or ctime after this (ns) are not cached
	files   map[string]treeFile
	hashes  map[string]cachedHash
	skipped []string
}

// dir hashes directory d (at rel in the work tree) into a tree. An empty
// directory gives no tree: git cannot hold one.
func (sc *scanner) dir(d *os.Root, rel string) (plumbing.Hash, bool, error) {
	names, err := readNames(d)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return plumbing.ZeroHash, true, nil
		}
		sc.skip(rel + "/")
		return plumbing.ZeroHash, true, nil
	}
	ents := make([]object.TreeEntry, 0, len(names))
	for _, name := range names {
		if rel == "" && name == protocol.StateDir {
			continue
		}
		p := path.Join(rel, name)
		fi, err := d.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while scanning
		}
		if err != nil {
			sc.skip(p)
			continue
		}
		var e object.TreeEntry
		switch m := fi.Mode(); {
		case m.IsDir():
			sub, err := d.OpenRoot(name)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					sc.skip(p + "/")
				}
				continue
			}
			h, empty, err := sc.dir(sub, p)
			_ = sub.Close()
			if err != nil {
				return plumbing.ZeroHash, false, err
			}
			if empty {
				continue
			}
			e = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
		case m&fs.ModeSymlink != 0:
			target, err := d.Readlink(name)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					sc.skip(p)
				}
				continue
			}
			h, err := sc.blob([]byte(target))
			if err != nil {
				return plumbing.ZeroHash, false, err
			}
			e = object.TreeEntry{Name: name, Mode: filemode.Symlink, Hash: h}
		case m.IsRegular():
			h, mode, ok, err := sc.file(d, name, p, fi)
			if err != nil {
				return plumbing.ZeroHash, false, err
			}
			if !ok {
				continue
			}
			e = object.TreeEntry{Name: name, Mode: mode, Hash: h}
		default:
			sc.skip(p) // socket, FIFO, device: git cannot hold them
			continue
		}
		if e.Mode != filemode.Dir {
			sc.files[p] = treeFile{hash: e.Hash, mode: e.Mode}
		}
		ents = append(ents, e)
	}
	if len(ents) == 0 {
		return plumbing.ZeroHash, true, nil
	}
	slices.SortFunc(ents, compareTreeEntries)
	data := encodeTree(ents)
	h := plumbing.ComputeHash(plumbing.TreeObject, data)
	if sc.write {
		if err := sc.r.store(h, plumbing.TreeObject, data); err != nil {
			return plumbing.ZeroHash, false, err
		}
	}
	return h, false, nil
}

func (sc *scanner) skip(p string) { sc.skipped = append(sc.skipped, p) }

func (sc *scanner) blob(data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(plumbing.BlobObject, data)
	if sc.write {
		return h, sc.r.store(h, plumbing.BlobObject, data)
	}
	return h, nil
}

// file hashes regular file name of d, reading it only when its stat data
// changed since it was last hashed. ok is false for a file the history
// cannot hold (over the size limit, unreadable) or that vanished.
func (sc *scanner) file(d *os.Root, name, p string, fi fs.FileInfo) (h plumbing.Hash, mode filemode.FileMode, ok bool, err error) {
	mode = filemode.Regular
	if fi.Mode()&0o100 != 0 {
		mode = filemode.Executable
	}
	if fi.Size() > sc.s.maxFile {
		sc.skip(p)
		return h, mode, false, nil
	}
	key := statKeyOf(fi)
	if c, hit := sc.r.hashes[p]; hit && c.key == key {
		_, stored := sc.r.known[c.hash]
		if stored || !sc.write {
			sc.hashes[p] = c
			return c.hash, mode, true, nil
		}
	}
	// O_NOFOLLOW: a file swapped for a symlink since the lstat is not
	// read through it. O_NONBLOCK: nor does a swapped-in FIFO hang.
	f, err := d.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			sc.skip(p)
		}
		return h, mode, false, nil
	}
	defer f.Close()
	fi, err = f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		sc.skip(p)
		return h, mode, false, nil
	}
	if mode = filemode.Regular; fi.Mode()&0o100 != 0 {
		mode = filemode.Executable
	}
	data, err := readLimited(f, fi.Size(), sc.s.maxFile)
	if err != nil {
		sc.skip(p)
		return h, mode, false, nil
	}
	if h, err = sc.blob(data); err != nil {
		return h, mode, false, err
	}
	// The key of what was read: the fstat of the open file.
	if key = statKeyOf(fi); key.mtime < sc.racy && key.ctime < sc.racy {
		sc.hashes[p] = cachedHash{key: key, hash: h}
	}
	return h, mode, true, nil
}

func statKeyOf(fi fs.FileInfo) statKey {
	k := statKey{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.ctime = st.Ctim.Nano()
		k.ino = st.Ino
	}
	return k
}

// readNames lists a directory's entries, unsorted.
func readNames(d *os.Root) ([]string, error) {
	f, err := d.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// compareTreeEntries orders entries as git does: by name, a directory's
// name compared as if it ended in "/".
func compareTreeEntries(a, b object.TreeEntry) int {
	an, bn := a.Name, b.Name
	n := min(len(an), len(bn))
	if c := strings.Compare(an[:n], bn[:n]); c != 0 {
		return c
	}
	ac, bc := nextTreeByte(a, n), nextTreeByte(b, n)
	switch {
	case ac < bc:
		return -1
	case ac > bc:
		return 1
	}
	return 0
}

// nextTreeByte is the byte of e's sort name at i: '/' just past a
// directory's name, 0 past a file's.
func nextTreeByte(e object.TreeEntry, i int) int {
	if i < len(e.Name) {
		return int(e.Name[i])
	}
	if i == len(e.Name) && e.Mode == filemode.Dir {
		return '/'
	}
	return -1
}

// encodeTree is git's tree object: "<octal mode> <name>\0<20-byte hash>"
// per entry.
func encodeTree(ents []object.TreeEntry) []byte {
	n := 0
	for _, e := range ents {
		n += 7 + len(e.Name) + 1 + len(e.Hash)
	}
	b := make([]byte, 0, n)
	for _, e := range ents {
		b = strconv.AppendUint(b, uint64(e.Mode), 8)
		b = append(b, ' ')
		b = append(b, e.Name...)
		b = append(b, 0)
		b = append(b, e.Hash[:]...)
	}
	return b
}

func (s *Server) stateLog(req *protocol.Request) (any, error) {
	const op = "state.log"
	if req.Limit < 0 {
		return nil, errs.Field("limit", "%s: limit must not be negative", op)
	}
	if req.TrailerKey == "" && req.TrailerValue != "" {
		return nil, errs.Field("trailer_key", "%s: trailer_value needs a trailer_key", op)
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	r, err := s.openState(op, false)
	if err != nil {
		return nil, err
	}
	out := []protocol.StateCommit{}
	if r == nil {
		return protocol.StateLogResult{Commits: out}, nil
	}
	for h := r.head; !h.IsZero(); {
		c, err := r.commit(op, h)
		if err != nil {
			return nil, err
		}
		trailers := parseTrailers(c.Message)
		if req.TrailerKey == "" || hasTrailer(trailers, req.TrailerKey, req.TrailerValue) {
			out = append(out, commitInfo(c, trailers))
			if req.Limit > 0 && len(out) == req.Limit {
				break
			}
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return protocol.StateLogResult{Commits: out}, nil
}

func commitInfo(c *object.Commit, trailers []trailer) protocol.StateCommit {
	parents := make([]string, len(c.ParentHashes))
	for i, p := range c.ParentHashes {
		parents[i] = p.String()
	}
	var tm map[string]string
	for _, t := range trailers {
		if tm == nil {
			tm = map[string]string{}
		}
		if _, dup := tm[t.key]; !dup {
			tm[t.key] = t.value
		}
	}
	return protocol.StateCommit{
		Commit:      c.Hash.String(),
		Parents:     parents,
		AuthorName:  c.Author.Name,
		AuthorEmail: c.Author.Email,
		Time:        c.Author.When,
		Message:     strings.TrimRight(c.Message, "\n"),
		Trailers:    tm,
	}
}

type trailer struct{ key, value string }

// parseTrailers reads the trailers of a commit message the way git
// interpret-trailers does for the common case: the last paragraph, if it
// is not also the first (the subject), made only of "Key: value" lines
// (a line starting with blank space continues the previous value).
func parseTrailers(msg string) []trailer {
	lines := strings.Split(strings.TrimRight(msg, " \t\r\n"), "\n")
	start := len(lines)
	for start > 0 && strings.TrimSpace(lines[start-1]) != "" {
		start--
	}
	if start == 0 {
		return nil // one paragraph: the subject, not trailers
	}
	var out []trailer
	for _, l := range lines[start:] {
		l = strings.TrimRight(l, "\r")
		if (l[0] == ' ' || l[0] == '\t') && len(out) > 0 {
			out[len(out)-1].value += " " + strings.TrimSpace(l)
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		k = strings.TrimRight(k, " \t")
		if !ok || !isTrailerKey(k) {
			return nil
		}
		out = append(out, trailer{key: k, value: strings.TrimSpace(v)})
	}
	return out
}

func isTrailerKey(k string) bool {
	if k == "" || k[0] == '-' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// hasTrailer matches the key without case, as git does, and the value
// exactly; an empty value matches any.
func hasTrailer(ts []trailer, key, value string) bool {
	for _, t := range ts {
		if strings.EqualFold(t.key, key) && (value == "" || t.value == value) {
			return true
		}
	}
	return false
}

// bytesOf reads a blob's content.
func (r *stateRepo) bytesOf(h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(r.st, h)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	defer rd.Close()
	var buf bytes.Buffer
	buf.Grow(int(b.Size))
	if _, err := buf.ReadFrom(rd); err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	return buf.Bytes(), nil
}
