package api

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/sessiontool"
	"github.com/primerhq/primer/wire"
)

// FileModeHeader carries a file's permission bits, in octal, on GET (the
// file's mode) and PUT (the mode to create it with).
const FileModeHeader = "X-Primer-File-Mode"

// runtimeClient returns the runtime connection of the workspace in the path,
// which must be running: files and exec go to the runtime, never to the
// backend directly.
func (s *server) runtimeClient(c *gin.Context) (*wire.Workspace, *client.Client, error) {
	return s.runtimeFor(c, c.Param("id"))
}

// runtimeFor returns the workspace id, if the caller may see it, and its
// runtime connection; the workspace must be running (409 naming its phase
// otherwise).
func (s *server) runtimeFor(c *gin.Context, id string) (*wire.Workspace, *client.Client, error) {
	ctx := c.Request.Context()
	w, err := s.workspaceOf(c, id)
	if err != nil {
		return nil, nil, err
	}
	if err := hostWorkspace(c, w); err != nil {
		return nil, nil, err
	}
	return s.runtimeOf(ctx, w)
}

// runtimeOf returns the runtime connection of w, which must be running,
// and counts the call as the workspace's activity. The caller has checked
// who may reach w.
func (s *server) runtimeOf(ctx context.Context, w *wire.Workspace) (*wire.Workspace, *client.Client, error) {
	if w.Phase != wire.PhaseRunning {
		return nil, nil, errs.E(errs.Precondition, "workspace %s: is %s, not running", w.ID, w.Phase)
	}
	cl, err := s.cfg.Connector.Client(ctx, w)
	if err != nil {
		if errs.Is(err, errs.NotFound) {
			// The workspace exists; what is missing is its sandbox. A 404
			// here would read as "no such workspace" or "no such file".
			err = errs.Wrap(errs.Unavailable, errs.Within("workspace "+w.ID+": runtime unreachable", err))
		}
		return nil, nil, err
	}
	s.touch(ctx, w)
	return w, cl, nil
}

// filePath returns the path of a files request: gin's *path without its
// one leading "/", cleaned. "" is the workspace root. A path that still
// starts with "/" (files//etc/hosts) is absolute: it goes to the runtime
// as it is, which serves it on isolated backends and refuses it on others
// (see absPath). Escapes of relative paths are refused here for a clear
// message; the runtime refuses them again, together with symlinks that
// lead out, which only it can see.
func filePath(c *gin.Context) (string, error) {
	raw := strings.TrimPrefix(c.Param("path"), "/")
	if p, abs, err := absPath("path", raw); abs || err != nil {
		return p, err
	}
	return cleanPath("path", raw)
}

// absPath cleans raw when it is absolute (abs true). The API cannot tell
// whether the workspace's runtime serves the whole sandbox; the runtime
// does, and refuses an absolute path with invalid (a 400) where it serves
// the workspace's directory only (local, worktree, a vm fleet host). It
// also refuses, with forbidden, a change of the history by absolute path,
// which notHistory checks for relative ones.
func absPath(field, raw string) (string, bool, error) {
	if !strings.HasPrefix(raw, "/") {
		return "", false, nil
	}
	if strings.IndexByte(raw, 0) >= 0 {
		return "", true, errs.Field(field, "%s %q: contains a NUL byte", field, raw)
	}
	return path.Clean(raw), true, nil
}

// checkUserName refuses a user that cannot be a name of the sandbox's
// /etc/passwd, before any runtime sees it. Whether it exists there only
// the runtime knows (an unknown user is a 400 from it).
func checkUserName(name string) error {
	if len(name) > 64 || strings.ContainsAny(name, ":/\n\x00") {
		return errs.Field("user", "user %q: not a user name", name)
	}
	return nil
}

// cleanPath checks and cleans a workspace-relative path given in field;
// "" is the workspace root. The session tools check paths alike.
func cleanPath(field, raw string) (string, error) { return sessiontool.CleanPath(field, raw) }

// fileError names the workspace in a runtime error, keeping its kind.
func fileError(ws *wire.Workspace, err error) error {
	return fmt.Errorf("workspace %s: %w", ws.ID, err)
}

func (s *server) getFile(c *gin.Context) {
	p, err := filePath(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ws, cl, err := s.runtimeClient(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	fi, err := cl.Stat(ctx, p)
	if err != nil {
		s.fail(c, fileError(ws, err))
		return
	}
	if boolQuery(c, "stat") {
		c.JSON(http.StatusOK, fi)
		return
	}
	if fi.IsDir {
		s.list(c, ws, cl, p)
		return
	}
	if !fi.IsSymlink && fi.Size > s.cfg.MaxFileBytes {
		s.fail(c, fileError(ws, errs.E(errs.TooLarge, "file %s: %d bytes is over the limit of %d", p, fi.Size, s.cfg.MaxFileBytes)))
		return
	}
	// The file streams from the runtime a few chunks at a time: memory per
	// download is constant whatever the file's size.
	r, err := cl.OpenFile(ctx, p)
	if err != nil && fi.IsSymlink && errs.Is(err, errs.Invalid) {
		// A symlink to a directory inside the workspace lists like one; a
		// symlink that leads out fails the listing the same way it failed
		// the read, and that first error is the one to report.
		if entries, lerr := cl.List(ctx, p); lerr == nil {
			c.JSON(http.StatusOK, wire.DirListing{Path: p, Items: nonNil(entries)})
			return
		}
	}
	if err != nil {
		s.fail(c, fileError(ws, err))
		return
	}
	defer r.Close()
	if r.Size() > s.cfg.MaxFileBytes {
		s.fail(c, fileError(ws, errs.E(errs.TooLarge, "file %s: %d bytes is over the limit of %d", p, r.Size(), s.cfg.MaxFileBytes)))
		return
	}
	c.Header(FileModeHeader, fmt.Sprintf("%04o", fi.Mode))
	c.Header("Last-Modified", fi.ModTime.UTC().Format(http.TimeFormat))
	c.Header("Content-Type", "application/octet-stream")
	c.Header("Content-Length", strconv.FormatInt(r.Size(), 10))
	c.Status(http.StatusOK)
	if _, err := r.WriteTo(c.Writer); err != nil && ctx.Err() == nil {
		// The status is sent: the response ends short of its
		// Content-Length, which the client sees as a broken download.
		s.log.Warn("files: download broken off", "workspace_id", ws.ID, "path", p, "error", err.Error())
	}
}

func (s *server) list(c *gin.Context, ws *wire.Workspace, cl *client.Client, p string) {
	entries, err := cl.List(c.Request.Context(), p)
	if err != nil {
		s.fail(c, fileError(ws, err))
		return
	}
	c.JSON(http.StatusOK, wire.DirListing{Path: p, Items: nonNil(entries)})
}

func nonNil(v []protocol.FileInfo) []protocol.FileInfo {
	if v == nil {
		return []protocol.FileInfo{}
	}
	return v
}

// boolQuery reads a boolean query flag: present as true or 1.
func boolQuery(c *gin.Context, name string) bool {
	v := c.Query(name)
	return v == "true" || v == "1"
}

// fileMode parses the optional mode header of a PUT.
func fileMode(c *gin.Context) (os.FileMode, error) {
	v := c.GetHeader(FileModeHeader)
	if v == "" {
		return 0, nil // the runtime's default: 0644 for files, 0755 for directories
	}
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil || n > 0o777 {
		return 0, errs.Field(FileModeHeader, "%s: %q is not an octal permission between 0 and 0777", FileModeHeader, v)
	}
	return os.FileMode(n), nil
}

func (s *server) putFile(c *gin.Context) {
	p, err := filePath(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if p == "" {
		s.fail(c, errs.Field("path", "path: required; the workspace root itself cannot be written"))
		return
	}
	if err := notHistory(p); err != nil {
		s.fail(c, err)
		return
	}
	mode, err := fileMode(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	mkdir := boolQuery(c, "mkdir")
	// ?user= owns what the write creates (a user of the sandbox).
	user := c.Query("user")
	if err := checkUserName(user); err != nil {
		s.fail(c, err)
		return
	}
	limit := s.cfg.MaxFileBytes
	if !mkdir && c.Request.ContentLength > limit {
		s.fail(c, errs.E(errs.TooLarge, "file %s: %d bytes is over the limit of %d", p, c.Request.ContentLength, limit))
		return
	}
	ws, cl, err := s.runtimeClient(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	var fi protocol.FileInfo
	if mkdir {
		if err = cl.MkdirAs(ctx, p, true, user); err == nil {
			fi, err = cl.Stat(ctx, p)
		}
	} else {
		release, ok := s.openUpload(c)
		if !ok {
			return
		}
		defer release()
		var up *spooled
		up, err = s.spool(c, p, limit)
		if err != nil {
			s.fail(c, err)
			return
		}
		defer up.Close()
		fi, err = cl.WriteFileWith(ctx, p, up, up.size, client.WriteOptions{Mode: mode, User: user})
	}
	if err != nil {
		s.fail(c, fileError(ws, err))
		return
	}
	c.JSON(http.StatusOK, fi)
}

func (s *server) deleteFile(c *gin.Context) {
	p, err := filePath(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if p == "" {
		s.fail(c, errs.Field("path", "path: required; delete the workspace to remove its root"))
		return
	}
	if err := notHistory(p); err != nil {
		s.fail(c, err)
		return
	}
	ws, cl, err := s.runtimeClient(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := cl.Remove(c.Request.Context(), p, boolQuery(c, "recursive")); err != nil {
		s.fail(c, fileError(ws, err))
		return
	}
	c.Status(http.StatusNoContent)
}

// notHistory refuses writes and deletes under .state: it is the sessions'
// git history, written only by the runtime's state operations, and a file
// changed there by hand would corrupt it. Reading it is allowed.
func notHistory(p string) error {
	if p == protocol.StateDir || strings.HasPrefix(p, protocol.StateDir+"/") {
		return errs.E(errs.Forbidden, "path %s: %s holds the session history and is written only through session tools", p, protocol.StateDir)
	}
	return nil
}
