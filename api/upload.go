package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
)

// spooled is an upload's body on disk, read back from its start. Its file
// has no name (unlinked as soon as it was made), so nothing is left behind
// however the request ends, the platform's crash included.
type spooled struct {
	*os.File
	size int64
}

// prepareUploadDir makes sure uploads can be spooled in dir.
func prepareUploadDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("upload dir %s: %w", dir, err)
	}
	return nil
}

// spool copies the request body of the upload to path into a file in
// Config.UploadDir, at most limit bytes: past it the copy stops and the
// error is TooLarge, before a byte reaches the workspace. Memory use is
// one copy buffer whatever the body's size. The caller closes the result.
func (s *server) spool(c *gin.Context, path string, limit int64) (*spooled, error) {
	f, err := os.CreateTemp(s.cfg.UploadDir, "primer-upload-*")
	if err != nil {
		return nil, errs.E(errs.Unavailable, "file %s: spool upload: %w", path, err)
	}
	// Unlinked at once: the open file keeps its data until it is closed.
	_ = os.Remove(f.Name())
	w := &diskWriter{f: f}
	n, err := io.Copy(w, http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	if err != nil {
		_ = f.Close()
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return nil, errs.E(errs.TooLarge, "file %s: over the limit of %d bytes", path, limit)
		case w.err != nil:
			// The platform's disk, not the client: full, or gone.
			return nil, errs.E(errs.Unavailable, "file %s: spool upload: %w", path, w.err)
		}
		return nil, errs.E(errs.Invalid, "file %s: read request body: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, errs.E(errs.Unavailable, "file %s: spool upload: %w", path, err)
	}
	return &spooled{File: f, size: n}, nil
}

// diskWriter remembers a write error, so spool can tell the disk failing
// from the client's body failing.
type diskWriter struct {
	f   *os.File
	err error
}

func (w *diskWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}
