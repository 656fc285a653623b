package vm

// Snapshots and pause of vm workspaces.
//
// Snapshot archives the workspace's directory on its host with tar (modes,
// numeric owners, links; the directory's marker left out) into
// /var/lib/primer/snapshots/<snapshot id>.tar, root's only. The archive is
// written under a temporary name (.<snapshot id>.tar.partial-<pid>) and
// renamed once tar has finished, so a platform or a host that dies
// mid-capture leaves a partial file that no later call takes for the
// snapshot; the next Snapshot with that id removes it and archives afresh.
// The owner file (<snapshot id>.owner: the uid and gid of the source's
// user, whose files a workspace of another user made from the snapshot is
// given) is written before the rename, so a complete archive always has
// one.
//
// A workspace made from a snapshot is placed on the snapshot's host (the
// archive is there) and starts as the archive unpacked (startBody). In
// machines mode a workspace's machine goes with it, so there is nowhere a
// snapshot could outlive its source: the provider offers none.
//
// Pause runs the teardown's stop (the runtime, every process carrying the
// workspace's id, its cgroup or scope) and keeps the directory, the user
// and the record; Resume starts the runtime again with the root, user,
// tenant and caps the host recorded at its last start.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// snapshotsDir holds the snapshot archives on a host.
const snapshotsDir = "/var/lib/primer/snapshots"

const (
	snapshotsNote         = "filesystem: a tar archive of the workspace directory on its host (the host around it is not captured, and a reset or a fork restores the directory only); full: a host backend keeps no process state"
	machinesSnapshotsNote = "none: in machines mode a workspace's machine is removed with it, so a snapshot could not outlive its source"
)

var (
	_ backend.Snapshotter = (*Backend)(nil)
	_ backend.Pauser      = (*Backend)(nil)
)

// snapshotArchive is where snapshot id's archive lives on its host.
func snapshotArchive(snapshotID string) string { return snapshotsDir + "/" + snapshotID + ".tar" }

// checkSnapshotID refuses ids that are not plain names.
func checkSnapshotID(id string) error {
	if backend.CheckID(id) != nil {
		return errs.E(errs.Invalid, "snapshot %q: invalid snapshot id", id)
	}
	return nil
}

// snapshotBody archives the workspace's directory unless the archive is
// there, and prints "<bytes> <uid> <gid>".
const snapshotBody = `
mkdir -p "$snaps"; chmod 0700 "$snaps"
final="$snaps/$snap.tar"
if [ ! -f "$final" ]; then
  [ -d "$state" ] || { echo "workspace $id: this host has no record of it" >&2; exit 6; }
  root=$(cat "$state/root"); user=$(cat "$state/user"); dir="$root/$id"
  if [ -L "$dir" ] || [ ! -d "$dir" ]; then echo "workspace $id: directory $dir not found" >&2; exit 6; fi
  rm -f -- "$snaps/.$snap.tar.partial-"*
  tmp="$snaps/.$snap.tar.partial-$$"
  rc=0
  tar --numeric-owner --exclude=./.primer-workspace -C "$dir" -cpf "$tmp" . || rc=$?
  # 1 is "a file changed as it was read": the archive is whole, with that
  # file as tar found it.
  if [ "$rc" -gt 1 ]; then rm -f -- "$tmp"; echo "tar of $dir failed (exit $rc)" >&2; exit 1; fi
  printf '%s %s\n' "$(id -u "$user" 2>/dev/null || echo -)" "$(id -g "$user" 2>/dev/null || echo -)" > "$snaps/$snap.owner"
  sync "$tmp" 2>/dev/null || sync
  mv -f -- "$tmp" "$final"
fi
printf '%s %s\n' "$(stat -c %s -- "$final")" "$(cat "$snaps/$snap.owner" 2>/dev/null || echo '- -')"
`

// deleteSnapshotBody removes an archive, its owner file and partial copies.
const deleteSnapshotBody = `
rm -f -- "$snaps/$snap.tar" "$snaps/$snap.owner" "$snaps/.$snap.tar.partial-"*
`

func snapshotScript(id, snapID string) *script {
	s := &script{body: snapshotBody}
	commonVars(s, id)
	s.set("snaps", snapshotsDir)
	s.set("snap", snapID)
	return s
}

// Snapshot implements backend.Snapshotter: it archives the workspace's
// directory on its host. A retry finds the archive and returns it.
func (b *Backend) Snapshot(ctx context.Context, h backend.Handle, req backend.SnapshotRequest) (backend.SnapshotRef, error) {
	if err := b.checkHandle(h); err != nil {
		return backend.SnapshotRef{}, err
	}
	id, host := h.WorkspaceID, h.Attrs["host"]
	if b.cfg.Machines != nil {
		return backend.SnapshotRef{}, errs.E(errs.Invalid, "workspace %s: snapshot: %s", id, machinesSnapshotsNote)
	}
	if req.Mode != backend.SnapshotFilesystem {
		return backend.SnapshotRef{}, errs.E(errs.Invalid, "workspace %s: snapshot: mode %q: the vm backend takes %s snapshots only", id, req.Mode, backend.SnapshotFilesystem)
	}
	if err := checkSnapshotID(req.SnapshotID); err != nil {
		return backend.SnapshotRef{}, err
	}
	unlock := b.locks.Lock(id)
	defer unlock()
	c, err := b.dialer.Client(ctx, host)
	if err != nil {
		return backend.SnapshotRef{}, fmt.Errorf("workspace %s: snapshot: %w", id, err)
	}
	// Archiving a large directory takes longer than one SSH step.
	sctx, cancel := context.WithTimeout(ctx, 10*opTimeout)
	defer cancel()
	out, err := b.runScript(sctx, c, "workspace "+id+": snapshot "+req.SnapshotID, snapshotScript(id, req.SnapshotID))
	if err != nil {
		return backend.SnapshotRef{}, err
	}
	f := strings.Fields(out)
	if len(f) != 3 {
		return backend.SnapshotRef{}, errs.E(errs.Other, "workspace %s: snapshot on %s: unexpected output %q", id, host, out)
	}
	size, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return backend.SnapshotRef{}, errs.E(errs.Other, "workspace %s: snapshot on %s: unexpected size %q", id, host, f[0])
	}
	attrs := map[string]string{"host": host}
	if f[1] != "-" {
		attrs["uid"], attrs["gid"] = f[1], f[2]
	}
	b.logger.Info("vm workspace snapshot taken", "workspace_id", id, "snapshot_id", req.SnapshotID, "host", host, "bytes", size)
	return backend.SnapshotRef{Backend: Type, SnapshotID: req.SnapshotID, Mode: req.Mode, Ref: host + ":" + snapshotArchive(req.SnapshotID), Bytes: size, Attrs: attrs}, nil
}

// DeleteSnapshot implements backend.Snapshotter: it removes the archive
// from its host. An archive already gone is not an error; a host that
// cannot be reached is (the archive would be left).
func (b *Backend) DeleteSnapshot(ctx context.Context, ref backend.SnapshotRef) error {
	if ref.Backend != Type {
		return errs.E(errs.Invalid, "snapshot %s: is a %s snapshot, not a %s one", ref.SnapshotID, ref.Backend, Type)
	}
	if err := checkSnapshotID(ref.SnapshotID); err != nil {
		return err
	}
	host := ref.Attrs["host"]
	if host == "" {
		return errs.E(errs.Invalid, "snapshot %s: names no host", ref.SnapshotID)
	}
	c, err := b.dialer.Client(ctx, host)
	if err != nil {
		return fmt.Errorf("snapshot %s: delete: %w", ref.SnapshotID, err)
	}
	s := &script{body: deleteSnapshotBody}
	s.set("snaps", snapshotsDir)
	s.set("snap", ref.SnapshotID)
	if _, err := b.runOn(ctx, c, "snapshot "+ref.SnapshotID+": delete", s); err != nil {
		return err
	}
	b.logger.Info("vm snapshot deleted", "snapshot_id", ref.SnapshotID, "host", host)
	return nil
}

// snapshotHost checks a provision's snapshot and returns the host it lives
// on ("" without one), which must be a host of this provider's fleet.
func (b *Backend) snapshotHost(id string, s *backend.SnapshotRef) (string, error) {
	if s == nil {
		return "", nil
	}
	if s.Backend != Type {
		return "", errs.E(errs.Invalid, "workspace %s: snapshot %s is a %s snapshot, not a %s one", id, s.SnapshotID, s.Backend, Type)
	}
	if b.cfg.Machines != nil {
		return "", errs.E(errs.Invalid, "workspace %s: snapshot %s: %s", id, s.SnapshotID, machinesSnapshotsNote)
	}
	if err := checkSnapshotID(s.SnapshotID); err != nil {
		return "", err
	}
	host := s.Attrs["host"]
	for _, hc := range b.cfg.Hosts {
		if hc.Address == host {
			return host, nil
		}
	}
	return "", errs.E(errs.Invalid, "workspace %s: snapshot %s lives on host %q, which is not one of this provider's", id, s.SnapshotID, host)
}

// Pause implements backend.Pauser: it stops the runtime and every process
// of the workspace on its host and keeps its directory, user and record.
func (b *Backend) Pause(ctx context.Context, h backend.Handle, mode string) (backend.Handle, error) {
	if err := b.checkHandle(h); err != nil {
		return backend.Handle{}, err
	}
	if mode != "" && mode != backend.SnapshotFilesystem {
		return backend.Handle{}, errs.E(errs.Invalid, "workspace %s: pause: mode %q: the vm backend pauses in %s mode only", h.WorkspaceID, mode, backend.SnapshotFilesystem)
	}
	id, host := h.WorkspaceID, h.Attrs["host"]
	unlock := b.locks.Lock(id)
	defer unlock()
	b.dialer.CloseForward(id)
	c, err := b.dialer.Client(ctx, host)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: pause: %w", id, err)
	}
	st, err := b.inspect(ctx, c, id)
	if err != nil {
		return backend.Handle{}, err
	}
	if st.Gone {
		return backend.Handle{}, errs.E(errs.NotFound, "workspace %s: pause: host %s has no such workspace", id, host)
	}
	if _, err := b.runOn(ctx, c, "workspace "+id+": pause", stopScript(id)); err != nil {
		return backend.Handle{}, err
	}
	b.logger.Info("vm workspace paused", "workspace_id", id, "host", host)
	return b.handle(id, host, runtimeState{Root: st.Root, User: st.User, CreatedUser: st.CreatedUser}), nil
}

// resumeBody prints what the host recorded at the workspace's last start:
// "<root> <user> <tenant> <cpu quota> <memory max>" ("-" for none), or
// "gone".
const resumeBody = `
[ -d "$state" ] || { echo gone; exit 0; }
printf '%s %s %s %s %s\n' "$(cat "$state/root")" "$(cat "$state/user")" "$(cat "$state/tenant" 2>/dev/null || echo -)" "$(cat "$state/cpu_quota" 2>/dev/null || echo -)" "$(cat "$state/mem_max" 2>/dev/null || echo -)"
`

// Resume implements backend.Pauser: a workspace whose runtime answers to
// token is returned as it is; otherwise the runtime is started again on
// the directory, as the workspace's user, with the caps of its last start
// and env.
func (b *Backend) Resume(ctx context.Context, h backend.Handle, token string, env backend.EnvFunc) (backend.Handle, error) {
	if err := b.checkHandle(h); err != nil {
		return backend.Handle{}, err
	}
	id, host := h.WorkspaceID, h.Attrs["host"]
	bin, binPath, err := runtimeFile(b.opts.Runtime)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: %w", id, err)
	}
	unlock := b.locks.Lock(id)
	defer unlock()
	c, err := b.dialer.Client(ctx, host)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: resume: %w", id, err)
	}
	st, err := b.inspect(ctx, c, id)
	if err != nil {
		return backend.Handle{}, err
	}
	if st.Gone {
		return backend.Handle{}, errs.E(errs.NotFound, "workspace %s: resume: host %s has no such workspace", id, host)
	}
	if st.Running {
		rh := b.handle(id, host, st)
		if err := b.waitReady(ctx, rh, token); err == nil {
			return rh, nil
		}
		if _, err := b.runOn(ctx, c, "workspace "+id+": stop runtime", stopScript(id)); err != nil {
			return backend.Handle{}, err
		}
	}
	s := &script{body: resumeBody}
	commonVars(s, id)
	out, err := b.runOn(ctx, c, "workspace "+id+": read its record", s)
	if err != nil {
		return backend.Handle{}, err
	}
	f := strings.Fields(out)
	if len(f) == 1 && f[0] == "gone" {
		return backend.Handle{}, errs.E(errs.NotFound, "workspace %s: resume: host %s has no such workspace", id, host)
	}
	if len(f) != 5 {
		return backend.Handle{}, errs.E(errs.Other, "workspace %s: resume on %s: unexpected record %q", id, host, out)
	}
	t := Template{Root: f[0], User: f[1]}
	tenant := f[2]
	if tenant == "-" {
		tenant = ""
	}
	if q, err := strconv.ParseInt(f[3], 10, 64); err == nil && q > 0 {
		t.CPU = float64(q) / 100000
	}
	if m, err := strconv.ParseInt(f[4], 10, 64); err == nil && m > 0 {
		t.memBytes = m
	}
	var vars map[string]string
	if env != nil {
		if vars, err = env(ctx); err != nil {
			return backend.Handle{}, fmt.Errorf("workspace %s: resume: env: %w", id, err)
		}
	}
	uctx, cancel := context.WithTimeout(ctx, opTimeout)
	_, err = c.EnsureFile(uctx, binPath, bin, 0o755)
	cancel()
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: upload primer-runtime to %s: %w", id, host, err)
	}
	rh, err := b.start(ctx, c, host, id, binPath, t, t.User, backend.ProvisionRequest{WorkspaceID: id, TenantID: tenant, Token: token, Env: vars})
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: resume: %w", id, err)
	}
	b.logger.Info("vm workspace resumed", "workspace_id", id, "host", host)
	return rh, nil
}
