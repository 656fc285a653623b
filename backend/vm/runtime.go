package vm

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/errs"
)

// Paths Primer keeps on every host.
const (
	// runtimeDir holds the uploaded primer-runtime binaries, one per
	// version (primer-runtime-<sha256[:12]>).
	runtimeDir = "/var/lib/primer/runtime"
	// stateDir holds one directory per workspace on the host
	// (stateDir/<workspace id>): its root, user, installation, the
	// runtime's pid, port and log. It is how the host tells which
	// workspaces it has (List, placement) and what to remove (Destroy).
	stateDir = "/var/lib/primer/ws"
	// usersDir records the users Primer made (usersDir/<user>/created,
	// which holds the tenant it was made for: only that tenant's workspaces
	// run as it) and which workspaces use them (usersDir/<user>/<workspace
	// id>), so a user is removed with the last of its workspaces, and only
	// if Primer made it.
	usersDir = "/var/lib/primer/users"
	// workspaceEnv is set in the runtime's environment and so in every
	// command's: Destroy finds the processes a workspace left behind
	// (daemons in sessions of their own) by it.
	workspaceEnv = "PRIMER_WORKSPACE_ID"
)

// runtimeFile reads the static primer-runtime out of the container
// backend's tar stream (the same binary every backend runs).
func runtimeFile(bin *container.RuntimeBinary) (data []byte, remotePath string, err error) {
	if bin == nil {
		return nil, "", errs.E(errs.Invalid, "vm backend: no primer-runtime binary configured")
	}
	digest, err := bin.Digest()
	if err != nil {
		return nil, "", err
	}
	r, err := bin.Tar()
	if err != nil {
		return nil, "", err
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, "", errs.E(errs.Other, "vm backend: primer-runtime missing from its tar stream")
		}
		if err != nil {
			return nil, "", err
		}
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			return data, runtimeDir + "/primer-runtime-" + digest[:12], err
		}
	}
}

// shquote quotes s for a POSIX shell.
func shquote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// script is a shell program sent on stdin to `sh -s` on a host, never on
// the command line: it may hold the runtime token and env values, which
// must not show in the host's process list. Variables come first, then the
// body.
type script struct {
	vars []string
	body string
}

func (s *script) set(name, value string) { s.vars = append(s.vars, name+"="+shquote(value)) }

func (s *script) bytes() []byte {
	return []byte("set -eu\n" + strings.Join(s.vars, "\n") + "\n" + s.body)
}

// runScript runs s on the host as root (through sudo -n when the
// connection's user is another), returning stdout. A non-zero exit is an
// error carrying stderr's last lines; exit codes the scripts use for
// conflicts and refusals get their kinds.
func (b *Backend) runScript(ctx context.Context, c *Client, what string, s *script) (string, error) {
	cmd := "sh -s"
	if b.cfg.Connection.User != "root" {
		cmd = "sudo -n sh -s"
	}
	out, stderr, code, err := c.Run(ctx, cmd, s.bytes())
	if err != nil {
		return "", err
	}
	msg := strings.TrimSpace(string(stderr))
	if len(msg) > 2000 {
		msg = "..." + msg[len(msg)-2000:]
	}
	switch code {
	case 0:
		return string(out), nil
	case exitConflict:
		return "", errs.E(errs.Conflict, "%s on %s: %s", what, c.Addr(), msg)
	case exitNoCaps:
		return "", errs.E(errs.Invalid, "%s: host %s supports no CPU/memory caps: %s", what, c.Addr(), msg)
	case exitPrivileged:
		return "", &errs.Error{Kind: errs.Forbidden, Field: "spec.backend.user", Msg: fmt.Sprintf("%s on %s: %s", what, c.Addr(), msg)}
	case exitNotFound:
		return "", errs.E(errs.NotFound, "%s on %s: %s", what, c.Addr(), msg)
	}
	return "", errs.E(errs.Unavailable, "%s on %s: exit code %d: %s", what, c.Addr(), code, msg)
}

// Exit codes of the scripts.
const (
	exitConflict   = 3
	exitNoCaps     = 4
	exitPrivileged = 5
	exitNotFound   = 6
)

// commonVars sets the paths every script uses.
func commonVars(s *script, id string) {
	s.set("id", id)
	s.set("state", stateDir+"/"+id)
	s.set("users", usersDir)
}

// surveyScript prints one line per workspace state directory on the host:
// id, installation, created (unix seconds), root. It also makes Primer's
// directories, so the runtime can be uploaded next.
const surveyScript = `
mkdir -p /var/lib/primer/ws /var/lib/primer/users /var/lib/primer/runtime
chmod 0755 /var/lib/primer /var/lib/primer/runtime
chmod 0711 /var/lib/primer/ws; chmod 0700 /var/lib/primer/users
if [ -n "${SUDO_USER:-}" ]; then chown "$SUDO_USER" /var/lib/primer/runtime; fi
for d in /var/lib/primer/ws/ws-*; do
  [ -d "$d" ] || continue
  printf '%s %s %s %s\n' "${d##*/}" "$(cat "$d/installation" 2>/dev/null || echo -)" "$(cat "$d/created" 2>/dev/null || echo 0)" "$(cat "$d/root" 2>/dev/null || echo -)"
done
`

// inspectBody prints "gone", or "running <pid> <port> <root> <user>
// <created_user>", or "stopped - - <root> <user> <created_user>".
const inspectBody = `
[ -d "$state" ] || { echo gone; exit 0; }
root=$(cat "$state/root"); user=$(cat "$state/user"); dir="$root/$id"
created=false; [ -f "$users/$user/created" ] && created=true
pid=$(cat "$state/pid" 2>/dev/null || true); port=$(cat "$state/port" 2>/dev/null || true)
# The pid is the runtime's only while it runs as the workspace's user with
# the workspace's directory (a pid reused by another user's process is not;
# /proc/<pid> of the runtime is root's, as it makes itself undumpable: the
# real uid is in status).
if [ -n "$pid" ] && [ -n "$port" ] && [ "$(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$pid/status" 2>/dev/null)" = "$(id -u "$user" 2>/dev/null)" ] &&
  tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "--root=$dir"; then
  echo "running $pid $port $root $user $created"
else
  echo "stopped - - $root $user $created"
fi
`

// killRuntimes defines kill_runtimes DIR, which kills every process whose
// command line holds --root=DIR: the workspace's runtimes, found without
// their pid file (command lines are readable by anyone).
//
// It also defines the helpers that keep root from following a link the
// workspace's user made (the user owns the workspace directory and, while a
// runtime starts, its token directory; root writes into neither):
//
//   - drop_tok removes the token directory: first made root's again, so the
//     user can add nothing while it goes, then removed by rm, which follows
//     no link.
//   - marked DIR reports whether DIR holds the workspace's marker, read as
//     the workspace's user ($asuser) for at most 5 s: a link there leads
//     nowhere the user could not read itself, and a FIFO cannot hang root.
const killRuntimes = `
kill_runtimes() {
  for p in $(grep -lzxF -- "--root=$1" /proc/[0-9]*/cmdline 2>/dev/null | sed 's,^/proc/\([0-9]*\)/cmdline$,\1,'); do
    [ "$p" = "$$" ] || kill -KILL "$p" 2>/dev/null || true
  done
}
drop_tok() {
  if [ -L "$state/tok" ]; then rm -f -- "$state/tok"; fi
  if [ -d "$state/tok" ]; then chown -h 0:0 "$state/tok"; chmod 0700 "$state/tok"; rm -rf -- "$state/tok"; fi
  return 0
}
marked() {
  [ -f "$1/.primer-workspace" ] && [ ! -L "$1/.primer-workspace" ] &&
    timeout -s KILL 5 $asuser head -c 4096 -- "$1/.primer-workspace" 2>/dev/null | grep -qxF "workspace=$id"
}
`

// stopBody kills the workspace's runtime (its process group), every
// process carrying the workspace's id in its environment, its cgroup or
// scope, and every process of its user when Primer made the user for this
// workspace alone. It keeps the directories.
const stopBody = killRuntimes + `
[ -d "$state" ] || exit 0
user=$(cat "$state/user" 2>/dev/null || echo -); root=$(cat "$state/root" 2>/dev/null || echo -)
kill_runtimes "$root/$id"
pid=$(cat "$state/pid" 2>/dev/null || true)
if [ -n "$pid" ] && tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "--root=$root/$id"; then
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  i=0; while [ $i -lt 50 ] && kill -0 "$pid" 2>/dev/null; do sleep 0.1; i=$((i+1)); done
  kill -KILL -- "-$pid" 2>/dev/null || true; kill -KILL "$pid" 2>/dev/null || true
fi
if [ -f "$state/scope" ] && command -v systemctl >/dev/null 2>&1; then
  systemctl kill --signal=KILL "$(cat "$state/scope")" >/dev/null 2>&1 || true
  systemctl stop "$(cat "$state/scope")" >/dev/null 2>&1 || true
fi
cg=/sys/fs/cgroup/primer/$id
if [ -d "$cg" ]; then
  echo 1 > "$cg/cgroup.kill" 2>/dev/null || for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
fi
# Root may lack CAP_SYS_PTRACE (a container as host) and then cannot read
# the environment of another user's processes: the user itself can.
asuser=
if [ "$user" != - ] && wuid=$(id -u "$user" 2>/dev/null) && [ "$wuid" != 0 ]; then
  asuser="setpriv --reuid=$wuid --regid=$(id -g "$user") --clear-groups --"
fi
exclusive=false
if [ "$user" != - ] && [ -f "$users/$user/created" ] && [ "$(ls -A "$users/$user" | grep -vx created | grep -vxF "$id" | wc -l)" = 0 ]; then
  exclusive=true; uid=$(id -u "$user" 2>/dev/null || echo)
fi
n=0
while [ $n -lt 20 ]; do
  left=$(grep -lzxF "PRIMER_WORKSPACE_ID=$id" /proc/[0-9]*/environ 2>/dev/null | sed 's,^/proc/\([0-9]*\)/environ$,\1,' || true)
  if [ -n "$asuser" ]; then
    left="$left $($asuser grep -lzxF "PRIMER_WORKSPACE_ID=$id" /proc/[0-9]*/environ 2>/dev/null | sed 's,^/proc/\([0-9]*\)/environ$,\1,' || true)"
  fi
  if [ "$exclusive" = true ] && [ -n "$uid" ]; then
    left="$left $(find /proc -maxdepth 1 -regex '/proc/[0-9]+' -uid "$uid" -printf '%f\n' 2>/dev/null || true)"
  fi
  left=$(echo $left | tr ' ' '\n' | grep -vx "$$" || true)
  [ -n "$left" ] || break
  kill -KILL $left 2>/dev/null || true
  sleep 0.05; n=$((n+1))
done
[ -d "$cg" ] && rmdir "$cg" 2>/dev/null || true
rm -f "$state/pid" "$state/port"
drop_tok
`

// destroyBody stops the workspace (stopBody first), then removes its
// directory (only one marked as the workspace's by its .primer-workspace
// file, which startBody writes), its state and, with its
// last workspace, a user Primer made.
const destroyBody = `
[ -d "$state" ] || exit 0
dir="$root/$id"
# What a restore from a snapshot cut off left (startBody); root's only.
if [ -d "$root/.primer-restore-$id" ] && [ ! -L "$root/.primer-restore-$id" ]; then rm -rf -- "$root/.primer-restore-$id"; fi
if [ -L "$dir" ]; then
  echo "$dir is a link, not the workspace's directory; left in place" >&2
elif [ -d "$dir" ]; then
  # rm follows no link, and the workspace's processes are gone (stopBody).
  if marked "$dir"; then
    rm -rf -- "$dir"
  else
    echo "directory $dir does not hold the workspace's marker; left in place" >&2
  fi
fi
if [ "$user" != - ]; then
  exec 9>"$users/.lock"; flock 9
  rm -f "$users/$user/$id"
  if [ -f "$users/$user/created" ] && [ "$(ls -A "$users/$user" | grep -vx created | wc -l)" = 0 ]; then
    userdel "$user" >/dev/null 2>&1 || { id -u "$user" >/dev/null 2>&1 && { echo "userdel $user failed" >&2; exit 1; }; }
    rm -rf -- "$users/$user"
  fi
  flock -u 9
fi
rm -rf -- "$state"
`

// startBody prepares the user, the directories and the caps, writes the
// token to a file only the workspace's user can read (the runtime removes
// it once read), starts the runtime detached in a session of its own and
// prints "<pid> <port> <created_user>" once it listens.
//
// It runs as root on a host whose other users include the workspace's own
// (which runs every command of the workspace) and other workspaces' users,
// so it never follows a link one of them could make: its state directory
// and every directory on the way to the workspace's are root's and only
// root's to write; root writes nothing into a directory the workspace's user
// owns (files go into a directory that is root's until they are in it, then
// change owner with chown -h); and a user as powerful as root (uid 0, a
// sudoer, a member of a group that gives root) runs the workspace only
// where the provider allows it ($allow_root).
const startBody = `
umask 022
mkdir -p /var/lib/primer/ws "$users"; chmod 0711 /var/lib/primer/ws; chmod 0700 "$users"
dir="$root/$id"

# A user the host has that is root in all but name is refused before
# anything of the workspace is made.
privileged() {
  [ "$(id -u "$1")" != 0 ] || { echo "uid 0"; return 0; }
  for g in $(id -G "$1"); do [ "$g" != 0 ] || { echo "in group 0"; return 0; }; done
  for g in $(id -Gn "$1" 2>/dev/null); do
    case "$g" in sudo|wheel|admin|docker|lxd|disk) echo "in group $g, which gives root"; return 0;; esac
  done
  if command -v sudo >/dev/null 2>&1 && sudo -n -l -U "$1" 2>/dev/null | grep -q 'may run the following'; then
    echo "allowed commands by sudo"; return 0
  fi
  return 1
}
if [ "$allow_root" != true ] && id -u "$user" >/dev/null 2>&1 && why=$(privileged "$user"); then
  echo "spec.backend.user: $user is $why on this host: a workspace runs as root, or as a user as powerful, only where its provider sets allow_root_user" >&2
  exit 5
fi
# A user Primer made runs one tenant's workspaces (its created file names
# the tenant): another tenant's naming it would share its files and
# processes. Checked again under the users lock.
other_tenant() {
  [ -f "$users/$user/created" ] || return 1
  owner=$(cat "$users/$user/created"); [ -n "$owner" ] && [ "$owner" != "$tenant" ]
}
refuse_other_tenant() {
  echo "spec.backend.user: $user runs another tenant's workspaces on this host (Primer made it for them); name another user" >&2
  exit 5
}
if other_tenant; then refuse_other_tenant; fi

if [ -d "$state" ] && [ "$(cat "$state/root" 2>/dev/null)" != "$root" ]; then
  echo "workspace $id already lives under $(cat "$state/root") on this host, not $root" >&2; exit 3
fi
mkdir -p "$state"; chmod 0711 "$state"
# One start of a workspace at a time: a start the platform was cut off in
# runs on, and a retry waits for it rather than race it for the pid file,
# the token file and the log. The runtime does not keep the lock (8>&-).
exec 8>"$state/start.lock"; flock 8
[ -f "$state/created" ] || date +%s > "$state/created"
printf '%s\n' "$root" > "$state/root"; printf '%s\n' "$user" > "$state/user"; printf '%s\n' "$installation" > "$state/installation"
# What a resume needs to start the runtime again as this start did.
printf '%s\n' "$tenant" > "$state/tenant"; printf '%s\n' "${cpu_quota:--}" > "$state/cpu_quota"; printf '%s\n' "${mem_max:--}" > "$state/mem_max"

# The user: made when missing, recorded as Primer's, referenced by workspace.
exec 9>"$users/.lock"; flock 9
if ! id -u "$user" >/dev/null 2>&1; then
  useradd --system --user-group --no-create-home --home-dir "$dir" --shell /bin/sh "$user"
  mkdir -p "$users/$user"; printf '%s\n' "$tenant" > "$users/$user/created"
fi
if other_tenant; then refuse_other_tenant; fi
# A user made before tenants were recorded goes to the first that uses it.
if [ -f "$users/$user/created" ] && [ ! -s "$users/$user/created" ]; then printf '%s\n' "$tenant" > "$users/$user/created"; fi
if [ -d "$users/$user" ]; then : > "$users/$user/$id"; fi
flock -u 9
created=false; [ -f "$users/$user/created" ] && created=true
uid=$(id -u "$user"); gid=$(id -g "$user")
asuser=
[ "$uid" = "$(id -u)" ] || asuser="setpriv --reuid=$uid --regid=$gid --init-groups --"

# The way to the directory: every directory on it root's, and writable by
# nobody else (no world-writable /tmp, no user's home, no other workspace's
# directory), so nobody can put a link where the workspace's directory
# goes. Missing ones are made by root.
p=
for c in $(echo "${root#/}" | tr / ' '); do
  p="$p/$c"
  if [ ! -e "$p" ] && [ ! -L "$p" ]; then mkdir -m 0755 "$p"; fi
  if [ -L "$p" ] || [ ! -d "$p" ]; then
    echo "spec.backend.root: $p is not a directory (a link?): the way to a workspace's directory must be root's directories only" >&2; exit 3
  fi
  set -- $(stat -c '%u %a' -- "$p")
  if [ "$1" != 0 ] || [ $((0$2 & 022)) != 0 ]; then
    echo "spec.backend.root: $p is owned by uid $1 with mode $2: the way to a workspace's directory must be root's and writable by root only" >&2; exit 3
  fi
done

# From a snapshot: a workspace whose directory does not exist yet starts as
# the snapshot's archive (snapshot.go), unpacked by root into a directory
# that is root's and only root's until it is complete (tar sets the
# directories' owners last; the top one keeps its owner with
# --no-overwrite-dir), then marked as this workspace's, given the files the
# source's user owned to this workspace's user, and renamed into place. A
# retry finds the directory and leaves it as its user keeps it.
if [ -n "$snapshot" ] && [ ! -e "$dir" ] && [ ! -L "$dir" ]; then
  [ -f "$snapshot" ] || { echo "snapshot archive $snapshot not found on this host" >&2; exit 6; }
  tmp="$root/.primer-restore-$id"
  rm -rf -- "$tmp"; mkdir -m 0700 "$tmp"
  tar --numeric-owner --no-overwrite-dir -xpf "$snapshot" -C "$tmp"
  rm -f -- "$tmp/.primer-workspace"
  (set -C; printf 'installation=%s\nworkspace=%s\n' "$installation" "$id" > "$tmp/.primer-workspace")
  if [ -n "$snap_uid" ] && [ "$snap_uid" != "$uid" ]; then chown -hR --from="$snap_uid" "$uid" "$tmp"; fi
  if [ -n "$snap_gid" ] && [ "$snap_gid" != "$gid" ]; then chown -hR --from=":$snap_gid" ":$gid" "$tmp"; fi
  chown -h "$uid:$gid" "$tmp"; chmod 0700 "$tmp"
  mv -T -- "$tmp" "$dir"
fi

# The directory: new, or the workspace's own (marked), never someone else's.
# An empty one (made by hand, or by a start cut off before its marker) is
# taken, made root's first so nobody adds to it while the marker is
# written; a marked one is left as its user keeps it.
if [ -L "$dir" ] || { [ -e "$dir" ] && [ ! -d "$dir" ]; }; then
  echo "$dir exists and is not a directory" >&2; exit 3
fi
if [ ! -d "$dir" ] || ! marked "$dir"; then
  if [ -d "$dir" ]; then
    [ -z "$(ls -A "$dir")" ] || { echo "directory $dir exists and is not workspace $id's" >&2; exit 3; }
    was=$(stat -c %u:%g -- "$dir")
    chown -h 0:0 "$dir"; chmod 0700 "$dir"
    if [ -n "$(ls -A "$dir")" ]; then chown -h "$was" "$dir"; echo "directory $dir exists and is not workspace $id's" >&2; exit 3; fi
  else
    mkdir -m 0700 "$dir"
  fi
  (set -C; printf 'installation=%s\nworkspace=%s\n' "$installation" "$id" > "$dir/.primer-workspace")
fi
chown -h "$uid:$gid" "$dir"; chmod 0700 "$dir"

# Caps: a systemd scope, else a cgroup v2 directory, else refused.
wrap=
rm -f "$state/scope"
if [ -n "$cpu_quota$mem_max" ]; then
  if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] && command -v systemd-run >/dev/null 2>&1; then
    unit="primer-$id-$(date +%s%N)"
    wrap="systemd-run --scope --quiet --unit=$unit --collect"
    [ -z "$cpu_quota" ] || wrap="$wrap -p CPUQuota=$((cpu_quota / 1000))%"
    [ -z "$mem_max" ] || wrap="$wrap -p MemoryMax=$mem_max"
    echo "$unit.scope" > "$state/scope"
  elif [ -f /sys/fs/cgroup/cgroup.controllers ] && mkdir -p /sys/fs/cgroup/primer 2>/dev/null && [ -w /sys/fs/cgroup/primer/cgroup.subtree_control ]; then
    cg=/sys/fs/cgroup/primer/$id
    for c in cpu memory; do
      grep -qw $c /sys/fs/cgroup/cgroup.controllers || { echo "cgroup v2 has no $c controller" >&2; exit 4; }
      grep -qw $c /sys/fs/cgroup/cgroup.subtree_control || echo +$c > /sys/fs/cgroup/cgroup.subtree_control || { echo "cannot enable the $c controller" >&2; exit 4; }
      grep -qw $c /sys/fs/cgroup/primer/cgroup.subtree_control || echo +$c > /sys/fs/cgroup/primer/cgroup.subtree_control || { echo "cannot enable the $c controller under /sys/fs/cgroup/primer" >&2; exit 4; }
    done
    mkdir -p "$cg"
    [ -z "$cpu_quota" ] || echo "$cpu_quota 100000" > "$cg/cpu.max"
    [ -z "$mem_max" ] || echo "$mem_max" > "$cg/memory.max"
    wrap="primer_cgroup $cg"
  else
    echo "no systemd as PID 1 with systemd-run, and no writable cgroup v2 hierarchy at /sys/fs/cgroup; drop cpu and memory from the template or give the host one of them" >&2
    exit 4
  fi
fi
primer_cgroup() { cg=$1; shift; exec sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@"; }

# The token: a file only the user can read, in a directory made new for
# this start (whatever an earlier one left is removed, never followed),
# root's until the file is in it, then the user's, as the runtime removes
# the file once read; the directory goes once the runtime listens. printf
# is a shell builtin: the token is on no command line.
drop_tok
mkdir -m 0700 "$state/tok"
(umask 077; set -C; printf '%s' "$token" > "$state/tok/token")
chown -h "$uid:$gid" "$state/tok/token" "$state/tok"

for v in $(env | sed -n 's/^\(SSH_[A-Za-z_]*\|SUDO_[A-Za-z_]*\|MAIL\|OLDPWD\)=.*/\1/p'); do unset "$v"; done
export HOME="$dir" USER="$user" LOGNAME="$user" PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export PRIMER_WORKSPACE_ID="$id"
workspace_env
cd "$dir"
# A runtime of this workspace that an earlier start left without its pid
# or port written (the platform killed mid-provision) is ended first:
# exactly one runtime per workspace.
kill_runtimes "$dir"
rm -f "$state/pid" "$state/port"
(umask 077; : > "$state/runtime.log")
$wrap setsid $asuser "$bin" --listen=127.0.0.1:0 "--root=$dir" "--fs=$fs" "--token-file=$state/tok/token" </dev/null >>"$state/runtime.log" 2>&1 8>&- &
pid=$!
echo "$pid" > "$state/pid"
i=0
while :; do
  port=$(sed -n 's/.*msg="runtime listening" addr=127\.0\.0\.1:\([0-9][0-9]*\) .*/\1/p' "$state/runtime.log" | head -n 1)
  [ -z "$port" ] || break
  if ! kill -0 "$pid" 2>/dev/null || [ $i -ge 300 ]; then
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$state/pid"; drop_tok
    echo "the runtime did not start: $(tail -n 5 "$state/runtime.log" | tr '\n' ' ')" >&2
    exit 1
  fi
  sleep 0.05; i=$((i+1))
done
echo "$port" > "$state/port"
drop_tok
echo "$pid $port $created"
`

// startScript builds the start script of a workspace. env goes into the
// runtime's environment (and so every command's) through export builtins.
func startScript(id, tenant, installation, bin string, t Template, user string, allowRoot bool, fsMode, token string, env map[string]string, snap *backend.SnapshotRef) *script {
	s := &script{}
	commonVars(s, id)
	archive, snapUID, snapGID := "", "", ""
	if snap != nil {
		archive = snapshotArchive(snap.SnapshotID)
		snapUID, snapGID = snap.Attrs["uid"], snap.Attrs["gid"]
	}
	s.set("snapshot", archive)
	s.set("snap_uid", snapUID)
	s.set("snap_gid", snapGID)
	s.set("tenant", tenant)
	s.set("root", t.Root)
	s.set("user", user)
	if installation == "" {
		installation = "-"
	}
	s.set("installation", installation)
	s.set("bin", bin)
	s.set("token", token)
	s.set("allow_root", strconv.FormatBool(allowRoot))
	s.set("fs", fsMode)
	quota, mem := "", ""
	if t.CPU > 0 {
		quota = strconv.FormatInt(int64(t.CPU*100000), 10)
	}
	if t.memBytes > 0 {
		mem = strconv.FormatInt(t.memBytes, 10)
	}
	s.set("cpu_quota", quota)
	s.set("mem_max", mem)
	var fn strings.Builder
	fn.WriteString("workspace_env() {\n  :\n")
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !envName(k) {
			continue
		}
		fmt.Fprintf(&fn, "  export %s=%s\n", k, shquote(env[k]))
	}
	fn.WriteString("}\n")
	s.body = fn.String() + killRuntimes + startBody
	return s
}

// envName reports whether k can be exported by a POSIX shell. Names it
// cannot hold are dropped (the runtime's exec env still sets them per
// command).
func envName(k string) bool {
	if k == "" || k == workspaceEnv || strings.HasPrefix(k, "PRIMER_RUNTIME_") {
		return false
	}
	for i, r := range k {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func inspectScript(id string) *script {
	s := &script{body: inspectBody}
	commonVars(s, id)
	return s
}

func stopScript(id string) *script {
	s := &script{body: stopBody}
	commonVars(s, id)
	return s
}

func destroyScript(id string) *script {
	s := &script{body: stopBody + destroyBody}
	commonVars(s, id)
	return s
}

// runtimeState is what inspect found of a workspace on a host.
type runtimeState struct {
	Gone, Running bool
	PID, Port     string
	Root, User    string
	CreatedUser   string
}

func parseInspect(out string) (runtimeState, error) {
	f := strings.Fields(out)
	switch {
	case len(f) == 1 && f[0] == "gone":
		return runtimeState{Gone: true}, nil
	case len(f) == 6 && (f[0] == "running" || f[0] == "stopped"):
		return runtimeState{Running: f[0] == "running", PID: f[1], Port: f[2], Root: f[3], User: f[4], CreatedUser: f[5]}, nil
	}
	return runtimeState{}, errs.E(errs.Other, "unexpected inspect output %q", out)
}

// surveyed is one workspace state directory a survey found.
type surveyed struct {
	ID, Installation, Root string
	Created                int64
}

func parseSurvey(out string) []surveyed {
	var list []surveyed
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		created, _ := strconv.ParseInt(f[2], 10, 64)
		list = append(list, surveyed{ID: f[0], Installation: f[1], Created: created, Root: f[3]})
	}
	return list
}
