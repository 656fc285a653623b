package server

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/primerhq/primer/runtime/protocol"
)

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
