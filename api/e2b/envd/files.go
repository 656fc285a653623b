package envd

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
)

// memSpoolBytes is how much of an upload of unknown size is held in memory
// before the rest goes to a temporary file.
const memSpoolBytes = 8 << 20

// filesError is envd's error body on /files: {"message", "code"} with the
// HTTP status as code.
func filesError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch errs.KindOf(err) {
	case errs.Invalid:
		status = http.StatusBadRequest
	case errs.NotFound:
		status = http.StatusNotFound
	case errs.Forbidden, errs.Unauthenticated:
		status = http.StatusUnauthorized
	case errs.TooLarge, errs.Exhausted:
		status = http.StatusInsufficientStorage
	case errs.Conflict, errs.Precondition:
		status = http.StatusConflict
	case errs.Unavailable:
		status = http.StatusBadGateway
	case errs.Timeout:
		status = http.StatusGatewayTimeout
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"message": err.Error(), "code": status})
}

// filesEntry is envd.yaml's EntryInfo of an upload answer.
type filesEntry struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// files serves GET (download) and POST (upload) /files.
func (h *handler) files(w http.ResponseWriter, r *http.Request) {
	sb, ok := SandboxFrom(r.Context())
	if !ok {
		filesError(w, errs.E(errs.Unauthenticated, "no sandbox resolved for this request"))
		return
	}
	user := r.URL.Query().Get("username")
	if user == "" {
		user = defaultUser(sb)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.download(w, r, sb, user)
	case http.MethodPost:
		h.upload(w, r, sb, user)
	default:
		w.Header().Set("Allow", "GET, POST")
		filesError(w, errs.E(errs.Invalid, "files: method %s not allowed", r.Method))
	}
}

// pathErr makes a path refusal an errs.Invalid error for /files.
func pathErr(err error) error {
	if err == nil {
		return nil
	}
	return errs.E(errs.Invalid, "%s", strings.TrimPrefix(err.Error(), "invalid_argument: "))
}

func (h *handler) download(w http.ResponseWriter, r *http.Request, sb *Sandbox, user string) {
	ctx := r.Context()
	p, err := h.resolve(sb, user, r.URL.Query().Get("path"))
	if err != nil {
		filesError(w, pathErr(err))
		return
	}
	cl, err := h.rt.Client(ctx, sb.Workspace)
	if err != nil {
		filesError(w, err)
		return
	}
	fi, err := cl.Stat(ctx, p)
	if err != nil {
		filesError(w, err)
		return
	}
	if fi.IsDir {
		filesError(w, errs.E(errs.Invalid, "path '%s' is a directory", p))
		return
	}
	fr, err := cl.OpenFile(ctx, p)
	if err != nil {
		filesError(w, err)
		return
	}
	defer fr.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	w.Header().Set("Content-Length", strconv.FormatInt(fr.Size(), 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	// A failure midway can only cut the body short: the status is sent.
	_, _ = io.Copy(w, fr)
}

func (h *handler) upload(w http.ResponseWriter, r *http.Request, sb *Sandbox, user string) {
	ctx := r.Context()
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-metadata-") {
			filesError(w, errs.E(errs.Invalid, "file metadata (%s) is not supported by Primer's sandboxes", k))
			return
		}
	}
	cl, err := h.rt.Client(ctx, sb.Workspace)
	if err != nil {
		filesError(w, err)
		return
	}
	body := io.Reader(r.Body)
	size := r.ContentLength
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			filesError(w, errs.E(errs.Invalid, "upload: malformed gzip body: %w", err))
			return
		}
		body, size = zr, -1
	default:
		filesError(w, errs.E(errs.Invalid, "upload: Content-Encoding %q is not supported (identity, gzip)", enc))
		return
	}
	query := r.URL.Query().Get("path")
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var out []filesEntry
	switch mt {
	case "multipart/form-data":
		mr, err := multipartReader(body, params["boundary"])
		if err != nil {
			filesError(w, err)
			return
		}
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				filesError(w, errs.E(errs.Invalid, "upload: malformed multipart body: %w", err))
				return
			}
			if part.FormName() != "file" {
				continue
			}
			target := query
			if target == "" {
				// Go's FileName keeps only the base name; the SDK sends the
				// whole path there when it writes several files at once.
				_, dp, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
				target = dp["filename"]
			}
			e, err := h.writeFile(r, cl, sb, user, target, part, -1)
			if err != nil {
				filesError(w, err)
				return
			}
			out = append(out, e)
		}
		if len(out) == 0 {
			filesError(w, errs.E(errs.Invalid, "upload: no part named file"))
			return
		}
	case "application/octet-stream", "":
		if query == "" {
			filesError(w, errs.E(errs.Invalid, "upload: the path query parameter is required with application/octet-stream"))
			return
		}
		e, err := h.writeFile(r, cl, sb, user, query, body, size)
		if err != nil {
			filesError(w, err)
			return
		}
		out = append(out, e)
	default:
		filesError(w, errs.E(errs.Invalid, "upload: Content-Type %q: want multipart/form-data or application/octet-stream", mt))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(out)
}

// writeFile writes one uploaded file; size is -1 when unknown, and the
// content is then spooled (in memory up to memSpoolBytes, then on disk) to
// learn it.
func (h *handler) writeFile(r *http.Request, cl *client.Client, sb *Sandbox, user, target string, src io.Reader, size int64) (filesEntry, error) {
	p, err := h.resolve(sb, user, target)
	if err != nil {
		return filesEntry{}, pathErr(err)
	}
	if size < 0 {
		sp, err := spool(src, h.opts.MaxFileBytes)
		if err != nil {
			return filesEntry{}, fmt.Errorf("upload %s: %w", p, err)
		}
		defer sp.close()
		src, size = sp.r, sp.size
	} else if h.opts.MaxFileBytes > 0 && size > h.opts.MaxFileBytes {
		return filesEntry{}, errs.E(errs.TooLarge, "upload %s: %d bytes is over the limit of %d", p, size, h.opts.MaxFileBytes)
	}
	if _, err := cl.WriteFileWith(r.Context(), p, src, size, client.WriteOptions{User: user}); err != nil {
		return filesEntry{}, err
	}
	return filesEntry{Path: p, Name: path.Base(p), Type: "file"}, nil
}

// spooled is an upload of unknown size, read to its end.
type spooled struct {
	r     io.Reader
	size  int64
	close func()
}

// spool reads src to its end, at most limit bytes when limit > 0.
func spool(src io.Reader, limit int64) (*spooled, error) {
	var buf bytes.Buffer
	n, err := io.CopyN(&buf, src, memSpoolBytes+1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errs.E(errs.Invalid, "read the body: %w", err)
	}
	if limit > 0 && n > limit {
		return nil, errs.E(errs.TooLarge, "over the limit of %d bytes", limit)
	}
	if n <= memSpoolBytes {
		return &spooled{r: &buf, size: n, close: func() {}}, nil
	}
	f, err := os.CreateTemp("", "primer-envd-upload-*")
	if err != nil {
		return nil, errs.E(errs.Unavailable, "spool: %w", err)
	}
	// Unlinked at once: nothing is left behind however the request ends.
	_ = os.Remove(f.Name())
	rest := src
	if limit > 0 {
		rest = io.LimitReader(src, limit-n+1)
	}
	m, err := io.Copy(f, io.MultiReader(&buf, rest))
	if err != nil {
		_ = f.Close()
		return nil, errs.E(errs.Invalid, "read the body: %w", err)
	}
	if limit > 0 && m > limit {
		_ = f.Close()
		return nil, errs.E(errs.TooLarge, "over the limit of %d bytes", limit)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, errs.E(errs.Unavailable, "spool: %w", err)
	}
	return &spooled{r: f, size: m, close: func() { _ = f.Close() }}, nil
}

// multipartReader reads a multipart body with boundary.
func multipartReader(body io.Reader, boundary string) (*multipart.Reader, error) {
	if boundary == "" {
		return nil, errs.E(errs.Invalid, "upload: multipart/form-data without a boundary")
	}
	return multipart.NewReader(body, boundary), nil
}
