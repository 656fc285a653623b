package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// ErrIsDirectory is wrapped by ReadFile and OpenFile when the path is a
// directory; ErrNotDirectory by ListFiles when it is a file.
var (
	ErrIsDirectory  = errors.New("is a directory")
	ErrNotDirectory = errors.New("not a directory")
)

// FileModeHeader carries a file's octal permission bits: in GET responses,
// and in PUT requests to set them.
const FileModeHeader = "X-Primer-File-Mode"

// FileInfo describes a file or directory in a workspace, as the files
// endpoints return it: the runtime's own description, passed through.
type FileInfo = protocol.FileInfo

// File is an open file of a workspace being read. Close it.
type File struct {
	io.ReadCloser
	Size int64  // -1 when the server did not say
	Mode uint32 // from X-Primer-File-Mode; 0 when absent
}

// filePath is the URL path of a file in workspace id; each segment of p is
// escaped, and "", "." and "/" name the root. A leading "/" is kept so the
// server, not the client, refuses absolute paths.
func filePath(id, p string) string {
	if p == "." || p == "/" {
		p = ""
	}
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return "/v1/workspaces/" + seg(id) + "/files/" + strings.Join(parts, "/")
}

// isJSON reports whether resp carries JSON, which the files endpoint
// returns for directories (files are application/octet-stream).
func isJSON(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "application/json"
}

// OpenFile starts reading the file at path in workspace id. The transfer has
// no timeout; ctx bounds it. A directory gives an error wrapping
// ErrIsDirectory.
func (c *Client) OpenFile(ctx context.Context, id, path string) (*File, error) {
	resp, err := c.send(ctx, c.stream, request{method: http.MethodGet, path: filePath(id, path)})
	if err != nil {
		return nil, err
	}
	if isJSON(resp) {
		resp.Body.Close()
		return nil, wrap(errs.Invalid, ErrIsDirectory, "workspace %s: read %s", id, path)
	}
	f := &File{ReadCloser: resp.Body, Size: resp.ContentLength}
	if m, err := strconv.ParseUint(resp.Header.Get(FileModeHeader), 8, 32); err == nil {
		f.Mode = uint32(m)
	}
	return f, nil
}

// ReadFile returns the contents of the file at path in workspace id.
func (c *Client) ReadFile(ctx context.Context, id, path string) ([]byte, error) {
	f, err := c.OpenFile(ctx, id, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, wrap(errs.Unavailable, err, "workspace %s: read %s", id, path)
	}
	return b, nil
}

// WriteFile writes r to the file at path in workspace id, creating parent
// directories, and returns the written file's info. The transfer has no
// timeout; ctx bounds it.
func (c *Client) WriteFile(ctx context.Context, id, path string, r io.Reader) (*FileInfo, error) {
	return c.writeFile(ctx, id, path, r, "")
}

// WriteFileMode is WriteFile that also sets the file's permission bits.
func (c *Client) WriteFileMode(ctx context.Context, id, path string, r io.Reader, mode os.FileMode) (*FileInfo, error) {
	return c.writeFile(ctx, id, path, r, fmt.Sprintf("%04o", mode.Perm()))
}

func (c *Client) writeFile(ctx context.Context, id, path string, r io.Reader, mode string) (*FileInfo, error) {
	req := request{
		method: http.MethodPut, path: filePath(id, path), body: r,
		contentType: "application/octet-stream", accept: "application/json",
	}
	if mode != "" {
		req.header = http.Header{FileModeHeader: {mode}}
	}
	resp, err := c.send(ctx, c.stream, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var fi FileInfo
	if err := decodeBody(resp, &fi); err != nil {
		return nil, err
	}
	return &fi, nil
}

// Mkdir creates the directory path (and its parents) in workspace id.
func (c *Client) Mkdir(ctx context.Context, id, path string) (*FileInfo, error) {
	var fi FileInfo
	if err := c.doJSON(ctx, http.MethodPut, filePath(id, path), url.Values{"mkdir": {"true"}}, nil, &fi); err != nil {
		return nil, err
	}
	return &fi, nil
}

// StatFile returns the info of path in workspace id without reading it.
func (c *Client) StatFile(ctx context.Context, id, path string) (*FileInfo, error) {
	var fi FileInfo
	if err := c.doJSON(ctx, http.MethodGet, filePath(id, path), url.Values{"stat": {"true"}}, nil, &fi); err != nil {
		return nil, err
	}
	return &fi, nil
}

// ListFiles lists the directory path ("" for the root) in workspace id. A
// file gives an error wrapping ErrNotDirectory, without downloading it.
func (c *Client) ListFiles(ctx context.Context, id, path string) (*wire.DirListing, error) {
	resp, err := c.send(ctx, c.hc, request{method: http.MethodGet, path: filePath(id, path), accept: "application/json"})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if !isJSON(resp) {
		return nil, wrap(errs.Invalid, ErrNotDirectory, "workspace %s: list %s", id, path)
	}
	var d wire.DirListing
	if err := decodeBody(resp, &d); err != nil {
		return nil, err
	}
	if d.Items == nil {
		d.Items = []FileInfo{}
	}
	return &d, nil
}

// RemoveFile removes path in workspace id; a non-empty directory needs
// recursive.
func (c *Client) RemoveFile(ctx context.Context, id, path string, recursive bool) error {
	var q url.Values
	if recursive {
		q = url.Values{"recursive": {"true"}}
	}
	return c.doJSON(ctx, http.MethodDelete, filePath(id, path), q, nil, nil)
}
