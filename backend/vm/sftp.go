package vm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/pkg/sftp"

	"github.com/primerhq/primer/errs"
)

// EnsureFile makes remotePath on the host hold exactly data with mode. It
// uploads over SFTP only when the file's sha256 differs from data's (so a
// runtime binary is sent once per host and version), to a temporary file
// that is checked by checksum on the host and then renamed over remotePath,
// so a reader never sees a partial file. changed reports an upload.
func (c *Client) EnsureFile(ctx context.Context, remotePath string, data []byte, mode os.FileMode) (changed bool, err error) {
	if !path.IsAbs(remotePath) {
		return false, errs.E(errs.Invalid, "ensure file %s: the path must be absolute", remotePath)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	perm := fmt.Sprintf("%o", mode.Perm())
	have, haveMode, err := c.remoteSHA256(ctx, remotePath)
	if err != nil {
		return false, fmt.Errorf("ensure file %s: %w", remotePath, err)
	}
	if have == want {
		if haveMode != perm {
			// Same content: only the mode needs fixing.
			if err := c.runOK(ctx, "chmod "+perm+" -- "+shellQuote(remotePath)); err != nil {
				return false, fmt.Errorf("ensure file %s: %w", remotePath, err)
			}
		}
		return false, nil
	}

	tmp := remotePath + ".upload-" + randomSuffix()
	committed := false
	defer func() {
		if !committed {
			// Best effort, on a context of its own: the caller's may be over.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.d.conn.timeout())
			defer cancel()
			_ = c.runOK(cctx, "rm -f -- "+shellQuote(tmp))
		}
	}()
	if err := c.upload(ctx, tmp, data, mode); err != nil {
		return false, fmt.Errorf("ensure file %s: %w", remotePath, err)
	}
	got, _, err := c.remoteSHA256(ctx, tmp)
	if err != nil {
		return false, fmt.Errorf("ensure file %s: verify: %w", remotePath, err)
	}
	if got != want {
		return false, errs.E(errs.Unavailable, "ensure file %s on %s: the uploaded file's sha256 is %s, want %s", remotePath, c.addr, got, want)
	}
	if err := c.runOK(ctx, "mv -f -- "+shellQuote(tmp)+" "+shellQuote(remotePath)); err != nil {
		return false, fmt.Errorf("ensure file %s: %w", remotePath, err)
	}
	committed = true
	return true, nil
}

// upload writes data to the new file p with mode over SFTP, making its
// directory first. The file is opened with O_EXCL (SSH_FXF_EXCL), which
// follows no link: a name taken by anything fails the upload.
func (c *Client) upload(ctx context.Context, p string, data []byte, mode os.FileMode) error {
	sc, stop, err := c.sftpClient(ctx)
	if err != nil {
		return err
	}
	defer stop()
	if err := sc.MkdirAll(path.Dir(p)); err != nil {
		return sftpErr(ctx, c.addr, "mkdir "+path.Dir(p), err)
	}
	f, err := sc.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return sftpErr(ctx, c.addr, "create "+p, err)
	}
	if _, err := f.ReadFrom(bytes.NewReader(data)); err != nil {
		_ = f.Close()
		return sftpErr(ctx, c.addr, "write "+p, err)
	}
	if err := f.Chmod(mode.Perm()); err != nil {
		_ = f.Close()
		return sftpErr(ctx, c.addr, "chmod "+p, err)
	}
	if err := f.Close(); err != nil {
		return sftpErr(ctx, c.addr, "close "+p, err)
	}
	return nil
}

// remoteSHA256 returns the sha256 and octal mode of the host's file p, or
// "" when there is no such file. A link is no such file: the upload then
// renames a new file over the link, and chmod never follows it.
func (c *Client) remoteSHA256(ctx context.Context, p string) (sum, mode string, err error) {
	q := shellQuote(p)
	out, stderr, code, err := c.Run(ctx, "if [ -f "+q+" ] && [ ! -L "+q+" ]; then sha256sum -b -- "+q+" && stat -c %a -- "+q+"; fi", nil)
	if err != nil {
		return "", "", err
	}
	if code != 0 {
		return "", "", errs.E(errs.Unavailable, "sha256sum %s on %s: exit %d: %s", p, c.addr, code, strings.TrimSpace(string(stderr)))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		return "", "", nil
	}
	fields := strings.Fields(lines[0])
	if len(fields) == 0 {
		return "", "", nil
	}
	return fields[0], strings.TrimSpace(lines[len(lines)-1]), nil
}

// runOK runs cmd and turns a non-zero exit into an error quoting stderr.
func (c *Client) runOK(ctx context.Context, cmd string) error {
	_, stderr, code, err := c.Run(ctx, cmd, nil)
	if err != nil {
		return err
	}
	if code != 0 {
		return errs.E(errs.Unavailable, "ssh %s: %s: exit %d: %s", c.addr, cmd, code, strings.TrimSpace(string(stderr)))
	}
	return nil
}

// sftpClient opens an SFTP session on the current connection; stop closes
// it. It is closed too when ctx ends, which ends any transfer in progress.
func (c *Client) sftpClient(ctx context.Context) (*sftp.Client, func(), error) {
	s, end, err := c.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	fail := func(what string, err error) (*sftp.Client, func(), error) {
		end()
		return nil, nil, errs.E(errs.Unavailable, "sftp %s: %s: %w", c.addr, what, err)
	}
	if err := s.RequestSubsystem("sftp"); err != nil {
		return fail("start the sftp subsystem", err)
	}
	w, err := s.StdinPipe()
	if err != nil {
		return fail("stdin", err)
	}
	r, err := s.StdoutPipe()
	if err != nil {
		return fail("stdout", err)
	}
	sc, err := sftp.NewClientPipe(r, w, sftp.UseConcurrentWrites(true))
	if err != nil {
		return fail("handshake", err)
	}
	cancel := context.AfterFunc(ctx, func() { _ = sc.Close() })
	return sc, func() { cancel(); _ = sc.Close(); end() }, nil
}

// sftpErr gives an SFTP failure its kind: the caller's context ending, or
// the host being unavailable.
func sftpErr(ctx context.Context, addr, what string, err error) error {
	if ctx.Err() != nil {
		return errs.E(errs.KindOf(ctxErr(ctx)), "sftp %s: %s: %w", addr, what, context.Cause(ctx))
	}
	return errs.E(errs.Unavailable, "sftp %s: %s: %w", addr, what, err)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
