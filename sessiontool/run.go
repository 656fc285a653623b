package sessiontool

import (
	"context"
	"encoding/base64"
	"fmt"
	"unicode/utf8"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/wire"
)

func (p *Prepared) runExec(ctx context.Context, t Target) (any, string, error) {
	a := p.exec
	stdout, stderr := NewCapped(p.lim.MaxOutput), NewCapped(p.lim.MaxOutput)
	res, err := t.Client.Exec(ctx, p.req, stdout, stderr)
	if err != nil {
		// A program or cwd that does not exist is the call's fault.
		if errs.Is(err, errs.NotFound) {
			return nil, "", errs.E(errs.Invalid, "workspace %s: %w", t.Workspace.ID, err)
		}
		return nil, "", fmt.Errorf("workspace %s: %w", t.Workspace.ID, err)
	}
	rec := map[string]any{}
	if len(a.Args) > 0 {
		rec["args"] = a.Args
	} else {
		rec["command"] = a.Command
	}
	if a.Cwd != "" {
		rec["cwd"] = a.Cwd
	}
	if len(a.Env) > 0 {
		env := make(map[string]string, len(a.Env))
		for k := range a.Env {
			env[k] = redacted
		}
		rec["env"] = env
	}
	if a.Timeout != "" {
		rec["timeout"] = a.Timeout
	}
	if a.Stdin != "" {
		rec["stdin_bytes"] = len(a.Stdin)
		rec["stdin_sha256"] = SHA256([]byte(a.Stdin))
	}
	result := map[string]any{
		"exit_code":    res.ExitCode,
		"timed_out":    res.TimedOut,
		"stdout_bytes": stdout.Total(),
		"stderr_bytes": stderr.Total(),
		"duration_ms":  res.Duration.Milliseconds(),
	}
	if res.Signal != "" {
		result["signal"] = res.Signal
	}
	// A failing command (exit code not 0) is recorded like any other: it
	// ran, and it may have changed files.
	commit, err := Record(ctx, t, Exec, Exec+": "+ShellJoin(p.argv), rec, result)
	if err != nil {
		return nil, "", err
	}
	return &wire.ToolExecResult{
		ExitCode:   res.ExitCode,
		Stdout:     stdout.String(),
		Stderr:     stderr.String(),
		TimedOut:   res.TimedOut,
		DurationMS: res.Duration.Milliseconds(),
		Signal:     res.Signal,
		Truncated:  stdout.Truncated() || stderr.Truncated(),
		Commit:     commit,
	}, commit, nil
}

func (p *Prepared) runWrite(ctx context.Context, t Target) (any, string, error) {
	fi, err := t.Client.WriteFileInfo(ctx, p.path, p.data, p.mode)
	if err != nil {
		return nil, "", fmt.Errorf("workspace %s: %w", t.Workspace.ID, err)
	}
	// Never the content: its size and digest say what was written.
	rec := map[string]any{"path": p.path, "content_bytes": len(p.data), "content_sha256": SHA256(p.data)}
	if p.write.Mode != "" {
		rec["mode"] = p.write.Mode
	}
	if p.write.Encoding != "" {
		rec["encoding"] = p.write.Encoding
	}
	summary := fmt.Sprintf("%s: %s (%d bytes)", Write, p.path, len(p.data))
	commit, err := Record(ctx, t, Write, summary, rec, map[string]any{"bytes_written": fi.Size})
	if err != nil {
		return nil, "", err
	}
	return &wire.ToolWriteResult{Path: p.path, Size: fi.Size, Commit: commit}, commit, nil
}

func (p *Prepared) runRead(ctx context.Context, t Target) (any, string, error) {
	fi, err := t.Client.Stat(ctx, p.path)
	if err != nil {
		return nil, "", fmt.Errorf("workspace %s: %w", t.Workspace.ID, err)
	}
	if fi.IsDir {
		return nil, "", errs.Field("path", "path %q: is a directory; %s reads files (list with %s: ls)", p.path, Read, Exec)
	}
	if p.lim.MaxFileBytes > 0 && fi.Size > p.lim.MaxFileBytes {
		return nil, "", errs.E(errs.TooLarge, "file %s: %d bytes is over the limit of %d", p.path, fi.Size, p.lim.MaxFileBytes)
	}
	data, err := t.Client.ReadFile(ctx, p.path)
	if err != nil {
		return nil, "", fmt.Errorf("workspace %s: %w", t.Workspace.ID, err)
	}
	out := &wire.ToolReadResult{Path: p.path, Size: int64(len(data)), Encoding: "utf-8"}
	if utf8.Valid(data) {
		out.Content = string(data)
	} else {
		out.Content, out.Encoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	if out.Commit, err = Record(ctx, t, Read, Read+": "+p.path, map[string]any{"path": p.path}, map[string]any{"bytes_read": len(data)}); err != nil {
		return nil, "", err
	}
	return out, out.Commit, nil
}

// FileSHA256 is the digest of a workspace file, "" if it does not exist.
func FileSHA256(ctx context.Context, cl *client.Client, p string) (string, error) {
	data, err := cl.ReadFile(ctx, p)
	if errs.Is(err, errs.NotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return SHA256(data), nil
}
