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
	have, err := c.remoteSHA256(ctx, remotePath)
	if err != nil {
		return false, fmt.Errorf("ensure file %s: %w", remotePath, err)
	}

	sc, stop, err := c.sftpClient(ctx)
	if err != nil {
		return false, fmt.Errorf("ensure file %s: %w", remotePath, err)
	}
	defer stop()

	if have == want {
		// Same content: only the mode may need fixing.
		st, err := sc.Stat(remotePath)
		if err != nil {
			return false, sftpErr(ctx, c.addr, "ensure file "+remotePath+": stat", err)
		}
		if st.Mode().Perm() != mode.Perm() {
			if err := sc.Chmod(remotePath, mode.Perm()); err != nil {
				return false, sftpErr(ctx, c.addr, "ensure file "+remotePath+": chmod", err)
			}
		}
		return false, nil
	}

	if err := sc.MkdirAll(path.Dir(remotePath)); err != nil {
		return false, sftpErr(ctx, c.addr, "ensure file "+remotePath+": mkdir", err)
	}
	tmp := remotePath + ".upload-" + randomSuffix()
	committed := false
	defer func() {
		if !committed {
			_ = sc.Remove(tmp)
		}
	}()
	f, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return false, sftpErr(ctx, c.addr, "ensure file "+remotePath+": create", err)
	}
	if _, err := f.ReadFrom(bytes.NewReader(data)); err != nil {
		_ = f.Close()
		return false, sftpErr(ctx, c.addr, "ensure file "+remotePath+": upload", err)
	}
	if err := f.Chmod(mode.Perm()); err != nil {
		_ = f.Close()
		return false, sftpErr(ctx, c.addr, "ensure file "+remotePath+": chmod", err)
	}
	if err := f.Close(); err != nil {
		return false, sftpErr(ctx, c.addr, "ensure file "+remotePath+": close", err)
	}
	got, err := c.remoteSHA256(ctx, tmp)
	if err != nil {
		return false, fmt.Errorf("ensure file %s: verify: %w", remotePath, err)
	}
	if got != want {
		return false, errs.E(errs.Unavailable, "ensure file %s on %s: the uploaded file's sha256 is %s, want %s", remotePath, c.addr, got, want)
	}
	if err := sc.PosixRename(tmp, remotePath); err != nil {
		return false, sftpErr(ctx, c.addr, "ensure file "+remotePath+": rename", err)
	}
	committed = true
	return true, nil
}

// remoteSHA256 returns the sha256 of the host's file p, or "" when there is
// no such file.
func (c *Client) remoteSHA256(ctx context.Context, p string) (string, error) {
	q := shellQuote(p)
	out, stderr, code, err := c.Run(ctx, "if [ -f "+q+" ]; then sha256sum -b -- "+q+"; fi", nil)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", errs.E(errs.Unavailable, "sha256sum %s on %s: exit %d: %s", p, c.addr, code, strings.TrimSpace(string(stderr)))
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		return "", nil
	}
	return fields[0], nil
}

// sftpClient opens an SFTP session on the current connection; stop closes
// it. It is closed too when ctx ends, which ends any transfer in progress.
func (c *Client) sftpClient(ctx context.Context) (*sftp.Client, func(), error) {
	for attempt := 0; ; attempt++ {
		k, err := c.live(ctx)
		if err != nil {
			return nil, nil, err
		}
		sc, err := sftp.NewClient(k.ssh, sftp.UseConcurrentWrites(true))
		if err == nil {
			cancel := context.AfterFunc(ctx, func() { _ = sc.Close() })
			return sc, func() { cancel(); _ = sc.Close() }, nil
		}
		if !k.alive() && attempt == 0 && ctx.Err() == nil {
			c.broken(k)
			continue
		}
		return nil, nil, errs.E(errs.Unavailable, "sftp %s: %w", c.addr, err)
	}
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
