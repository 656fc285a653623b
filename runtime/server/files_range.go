package server

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// Ranged file operations (read.range, write.range) move a file one chunk
// per request, so neither side ever holds more than a chunk of it: this is
// how the platform streams downloads and uploads of any size. They are not
// bounded by the server's MaxFileBytes, which exists to bound what one frame
// holds in memory; the platform bounds the whole file by its own configured
// limit.

// chunkPool recycles read.range buffers of the default chunk size: a
// download of a large file would otherwise allocate a chunk per request.
var chunkPool = sync.Pool{New: func() any {
	b := make([]byte, protocol.DefaultChunkBytes)
	return &b
}}

// chunkBuf returns a buffer of n bytes and the function that gives it back.
func chunkBuf(n int64) ([]byte, func()) {
	if n != protocol.DefaultChunkBytes {
		return make([]byte, n), func() {}
	}
	bp := chunkPool.Get().(*[]byte)
	return *bp, func() { chunkPool.Put(bp) }
}

// chunkLength checks a ranged request's offset and length (0: the default).
func chunkLength(op string, req *protocol.Request, n int64) (int64, error) {
	if req.Offset < 0 {
		return 0, errs.Field("offset", "%s %s: negative offset %d", op, req.Path, req.Offset)
	}
	if n == 0 {
		n = protocol.DefaultChunkBytes
	}
	if n < 0 || n > protocol.MaxChunkBytes {
		return 0, errs.Field("length", "%s %s: chunk of %d bytes: want 1 to %d", op, req.Path, n, protocol.MaxChunkBytes)
	}
	return n, nil
}

// readRange answers read.range. The returned release gives the result's
// buffer back once the reply is written.
func (s *Server) readRange(ctx context.Context, req *protocol.Request) (protocol.ReadRangeResult, func(), error) {
	none := func() {}
	t, err := s.resolve("read", "path", req.Path)
	if err != nil {
		return protocol.ReadRangeResult{}, none, err
	}
	p := t.name
	n, err := chunkLength("read", req, req.Length)
	if err != nil {
		return protocol.ReadRangeResult{}, none, err
	}
	f, err := t.fs.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return protocol.ReadRangeResult{}, none, fsError("read", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return protocol.ReadRangeResult{}, none, fsError("read", p, err)
	}
	if fi.IsDir() {
		return protocol.ReadRangeResult{}, none, errs.E(errs.Invalid, "read %s: is a directory", p)
	}
	if !fi.Mode().IsRegular() {
		return protocol.ReadRangeResult{}, none, errs.E(errs.Invalid, "read %s: not a regular file", p)
	}
	buf, release := chunkBuf(n)
	got, err := f.ReadAt(buf[:n], req.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		release()
		return protocol.ReadRangeResult{}, none, fsError("read", p, err)
	}
	return protocol.ReadRangeResult{Size: fi.Size(), Data: buf[:got]}, release, nil
}

// writeRange answers write.range: it writes the chunk at its offset,
// creating the file (and its parents, on the chunk at offset 0) when
// missing. The final chunk truncates the file after its data, applies an
// explicit mode and answers with the file's description. Chunks may arrive
// in any order, but the one at offset 0 must be answered before others are
// sent (it makes the parents) and the final one must be sent last.
func (s *Server) writeRange(ctx context.Context, req *protocol.Request) (any, error) {
	t, owner, err := s.writeTarget("write", req)
	if err != nil {
		return nil, err
	}
	p := t.name
	if _, err := chunkLength("write", req, max(int64(len(req.Data)), 1)); err != nil {
		return nil, err
	}
	// The final chunk truncates, as write does.
	f, err := s.openForWrite(t, req.Mode, req.Offset == 0, owner)
	if err != nil {
		return nil, err
	}
	var fi os.FileInfo
	if len(req.Data) > 0 {
		_, err = f.WriteAt(req.Data, req.Offset)
	}
	if req.Final {
		if err == nil {
			err = f.Truncate(req.Offset + int64(len(req.Data)))
		}
		if req.Mode != 0 && err == nil {
			err = f.Chmod(os.FileMode(req.Mode & 0o7777))
		}
		if err == nil {
			fi, err = f.Stat()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fsError("write", p, err)
	}
	if !req.Final {
		return nil, nil
	}
	return s.owners().name(infoOf(p, fi), fi), nil
}
