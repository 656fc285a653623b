package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/primerhq/primer/errs"
)

// runMachine runs the provider's create or destroy command for a workspace
// on the platform's host: the id is its last argument and in
// PRIMER_WORKSPACE_ID, and the run is bounded by the provider's timeout.
func (b *Backend) runMachine(ctx context.Context, what string, argv []string, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Machines.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], append(append([]string(nil), argv[1:]...), id)...)
	cmd.Env = append(os.Environ(), workspaceEnv+"="+id)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	msg := strings.TrimSpace(stderr.String())
	if len(msg) > 2000 {
		msg = "..." + msg[len(msg)-2000:]
	}
	if ctx.Err() != nil {
		return nil, errs.E(errs.Unavailable, "workspace %s: machines.%s %s: timed out after %s: %s", id, what, argv[0], b.cfg.Machines.timeout, msg)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return nil, errs.E(errs.Unavailable, "workspace %s: machines.%s %s: exit code %d: %s", id, what, argv[0], exitErr.ExitCode(), msg)
	}
	return nil, errs.E(errs.Invalid, "workspace %s: machines.%s %s: %w", id, what, argv[0], err)
}

// createMachine runs machines.create and returns the machine's address.
// The command is idempotent on the id: a retry gets the same machine.
func (b *Backend) createMachine(ctx context.Context, id string) (string, error) {
	out, err := b.runMachine(ctx, "create", b.cfg.Machines.Create, id)
	if err != nil {
		return "", err
	}
	// The last line holding a JSON object is the answer; a CLI may print
	// progress before it.
	var doc struct {
		Address string `json:"address"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), &doc) == nil {
			break
		}
	}
	if err := checkAddress("address", doc.Address); err != nil {
		return "", errs.E(errs.Invalid, "workspace %s: machines.create printed no {\"address\": \"host[:port]\"} (got %q)", id, strings.TrimSpace(string(out)))
	}
	return doc.Address, nil
}

// destroyMachine runs machines.destroy; destroying a machine that is gone
// is the command's to accept.
func (b *Backend) destroyMachine(ctx context.Context, id string) error {
	_, err := b.runMachine(ctx, "destroy", b.cfg.Machines.Destroy, id)
	return err
}
