// Package vm is the backend whose workspaces live on remote machines reached
// over SSH only: a fixed fleet of hosts (placement picks the least loaded
// host matching the template's selector) or one machine per workspace made
// and removed by the provider's own commands.
//
// A workspace is a directory <root>/<workspace id> on its host, marked as
// the workspace's, owned by the template's user, and a primer-runtime
// started detached in a session of its own, listening on the host's
// loopback only. The platform uploads the runtime over SFTP
// (/var/lib/primer/runtime/primer-runtime-<sha256[:12]>), passes it the
// token through a file only the workspace's user can read, which the
// runtime removes once read (never on a command line or in an environment
// other processes see), and reaches it through an SSH tunnel: nothing on
// the host listens beyond its loopback, so there is nothing to firewall.
//
// The host keeps what the platform needs to find a workspace again under
// /var/lib/primer/ws/<workspace id> (root, user, installation, runtime pid
// and port): the handle is a value, and a restarted platform re-attaches
// from it; the host's own record is what placement counts, List reports and
// Destroy removes.
//
// A snapshot of a vm workspace (snapshot.go) is a tar archive of its
// directory, kept on its host under /var/lib/primer/snapshots: the
// directory's files with their modes, owners and links, nothing else of the
// host (its /tmp, its packages, other users' files). A workspace made from
// it, a fork, and a reset to it get the directory as it was at the capture
// on the same host; the host around it is neither captured nor restored. A
// pause stops the runtime and every process of the workspace on the host
// and keeps the directory; a resume starts the runtime again (no process
// state survives).
package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/internal/keylock"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// Type is the backend type and template kind of this backend.
const Type = wire.BackendVM

// Options are the platform's settings for every vm backend.
type Options struct {
	// Runtime supplies the static primer-runtime uploaded to each host.
	Runtime *container.RuntimeBinary
	// Installation marks every workspace this platform makes on a host, so
	// List never takes another installation's for orphans.
	Installation string
	Logger       *slog.Logger
	// ReadyTimeout bounds the wait for a started runtime to answer through
	// the tunnel; default 30 s.
	ReadyTimeout time.Duration
}

// Backend makes workspaces on the hosts of one vm provider.
type Backend struct {
	cfg    ProviderConfig
	opts   Options
	dialer *Dialer
	logger *slog.Logger
	locks  keylock.Map // workspace id

	mu sync.Mutex
	// placing counts the provisions placing a workspace on each host now,
	// which its survey cannot see yet.
	placing map[string]int
}

var (
	_ backend.Backend = (*Backend)(nil)
	_ backend.Keeper  = (*Backend)(nil)
	_ backend.Lister  = (*Backend)(nil)
	_ backend.Closer  = (*Backend)(nil)
)

// New returns a backend for a provider config. It connects to nothing yet.
func New(config json.RawMessage, opts Options) (*Backend, error) {
	cfg, err := ParseProviderConfig(config)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 30 * time.Second
	}
	d, err := NewDialer(cfg.Connection, opts.Logger)
	if err != nil {
		return nil, err
	}
	return &Backend{cfg: cfg, opts: opts, dialer: d, logger: opts.Logger.With("backend", Type), placing: map[string]int{}}, nil
}

// Factory builds vm backends from provider configs.
func Factory(opts Options) backend.Factory {
	return func(config json.RawMessage) (backend.Backend, error) { return New(config, opts) }
}

// Close implements backend.Closer: it closes the SSH connections and
// tunnels. Workspaces keep running on their hosts.
func (b *Backend) Close() error { return b.dialer.Close() }

// Capabilities implements backend.Backend. Workspaces of a fleet share
// their host's kernel and see each other's processes, as local ones do;
// a machine per workspace is isolated by the machine.
func (b *Backend) Capabilities() backend.Capabilities {
	iso := "none"
	if b.cfg.Machines != nil {
		iso = "machine"
	}
	c := backend.Capabilities{Isolation: iso, PersistentAcrossRestart: true, Pause: true, SnapshotsNote: snapshotsNote,
		Reset: backend.ResetScopeWorkspace, ResetNote: backend.HostResetNote}
	if b.cfg.Machines == nil {
		c.Snapshots = []string{backend.SnapshotFilesystem}
	} else {
		c.SnapshotsNote = machinesSnapshotsNote
	}
	return c
}

// ValidateTemplate implements backend.Backend: the document, that its user
// is not root unless the provider allows it, and that its selector matches
// a host of the fleet.
func (b *Backend) ValidateTemplate(tmpl json.RawMessage) error {
	t, err := ParseTemplate(tmpl)
	if err != nil {
		return err
	}
	if err := b.cfg.checkUser(t); err != nil {
		return err
	}
	if b.cfg.Machines == nil {
		return checkSelector(b.cfg.Hosts, t.Selector)
	}
	return nil
}

// opTimeout bounds one SSH step (a survey, a stop); starting the runtime
// gets ReadyTimeout on top.
const opTimeout = 30 * time.Second

// Provision implements backend.Backend. It finds the workspace's host (the
// one whose record of it survives, else a placement, else the machine
// create makes), uploads the runtime when the host lacks this version,
// and starts it, unless one of the workspace's runs there already and
// answers to the token (a retry), which is returned as it is. A runtime
// that refuses the token (one left by an earlier token) is replaced. On
// failure a workspace this call made is removed; one that existed before
// (torn down, its files kept) is only stopped.
func (b *Backend) Provision(ctx context.Context, req backend.ProvisionRequest) (backend.Handle, error) {
	id := req.WorkspaceID
	if err := backend.CheckID(id); err != nil {
		return backend.Handle{}, err
	}
	t, err := ParseTemplate(req.Template)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", id, err)
	}
	if req.Token == "" {
		return backend.Handle{}, errs.E(errs.Invalid, "workspace %s: provision: no runtime token", id)
	}
	// A template stored before its provider stopped allowing root (or
	// before the rule) is refused here, before anything runs on a host.
	if err := b.cfg.checkUser(t); err != nil {
		return backend.Handle{}, err
	}
	bin, binPath, err := runtimeFile(b.opts.Runtime)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: %w", id, err)
	}
	unlock := b.locks.Lock(id)
	defer unlock()

	pin, err := b.snapshotHost(id, req.Snapshot)
	if err != nil {
		return backend.Handle{}, err
	}
	host, release, err := b.hostFor(ctx, id, t, pin)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: %w", id, err)
	}
	defer release()
	c, err := b.dialer.Client(ctx, host)
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: %w", id, err)
	}
	st, err := b.inspect(ctx, c, id)
	if err != nil {
		return backend.Handle{}, err
	}
	if st.Running {
		h := b.handle(id, host, st)
		err := b.waitReady(ctx, h, req.Token)
		if err == nil {
			return h, nil
		}
		b.logger.Warn("replacing a runtime that does not answer to the workspace's token", "workspace_id", id, "host", host, "err", err)
		if _, err := b.runOn(ctx, c, "workspace "+id+": stop runtime", stopScript(id)); err != nil {
			return backend.Handle{}, err
		}
	}

	uctx, cancel := context.WithTimeout(ctx, opTimeout)
	_, err = c.EnsureFile(uctx, binPath, bin, 0o755)
	cancel()
	if err != nil {
		return backend.Handle{}, fmt.Errorf("workspace %s: upload primer-runtime to %s: %w", id, host, err)
	}
	user := b.cfg.workspaceUser(t)
	h, err := b.start(ctx, c, host, id, binPath, t, user, req)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		defer cancel()
		cleanup := destroyScript(id)
		if !st.Gone {
			cleanup = stopScript(id)
		}
		if _, cerr := b.runOn(cctx, c, "workspace "+id+": clean up after a failed start", cleanup); cerr != nil {
			b.logger.Warn("cleanup after failed provision", "workspace_id", id, "host", host, "err", cerr)
		}
		if st.Gone && b.cfg.Machines != nil {
			if derr := b.destroyMachine(cctx, id); derr != nil {
				b.logger.Warn("destroy machine after failed provision", "workspace_id", id, "err", derr)
			}
		}
		return backend.Handle{}, err
	}
	b.logger.Info("vm workspace started", "workspace_id", id, "host", host, "dir", h.Path, "user", user, "template", t.String())
	return h, nil
}

// start runs the start script on the host and waits for the runtime to
// answer through the tunnel.
func (b *Backend) start(ctx context.Context, c *Client, host, id, binPath string, t Template, user string, req backend.ProvisionRequest) (backend.Handle, error) {
	sctx, cancel := context.WithTimeout(ctx, opTimeout+b.opts.ReadyTimeout)
	defer cancel()
	out, err := b.runScript(sctx, c, "workspace "+id+": start runtime", startScript(id, tenantOf(req), b.opts.Installation, binPath, t, user, b.cfg.AllowRootUser, b.fsMode(), req.Token, req.Env, req.Snapshot))
	if err != nil {
		return backend.Handle{}, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) != 3 {
		return backend.Handle{}, errs.E(errs.Other, "workspace %s: start runtime on %s: unexpected output %q", id, host, out)
	}
	h := b.handle(id, host, runtimeState{PID: f[0], Port: f[1], Root: t.Root, User: user, CreatedUser: f[2]})
	if err := b.waitReady(ctx, h, req.Token); err != nil {
		return backend.Handle{}, err
	}
	return h, nil
}

// tenantOf is the tenant a provision is for, as the host records it for the
// users Primer makes.
func tenantOf(req backend.ProvisionRequest) string {
	if req.TenantID == "" {
		return wire.DefaultTenantID
	}
	return req.TenantID
}

// handle builds the handle of a workspace running on host.
func (b *Backend) handle(id, host string, st runtimeState) backend.Handle {
	attrs := map[string]string{
		"host":         host,
		"port":         st.Port,
		"pid":          st.PID,
		"root":         st.Root,
		"user":         st.User,
		"created_user": st.CreatedUser,
	}
	if b.cfg.Machines != nil {
		attrs["machine"] = "true"
	}
	return backend.Handle{Backend: Type, WorkspaceID: id, Path: st.Root + "/" + id, Attrs: attrs}
}

// hostFor returns the host of a workspace being provisioned: in machines
// mode the machine create makes (or finds: it is idempotent); in a fleet
// the host that has the workspace already (its directory survived a
// teardown or a reboot), else the least loaded matching host with room.
// release ends the placement's claim on the host. A pin (the host a
// snapshot lives on) replaces the placement of a new workspace.
func (b *Backend) hostFor(ctx context.Context, id string, t Template, pin string) (host string, release func(), err error) {
	if b.cfg.Machines != nil {
		addr, err := b.createMachine(ctx, id)
		return addr, func() {}, err
	}
	surveys := b.surveyAll(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	cands := make([]candidate, len(b.cfg.Hosts))
	for i, hc := range b.cfg.Hosts {
		s := surveys[i]
		if s.err == nil {
			for _, w := range s.list {
				if w.ID == id {
					return hc.Address, func() {}, nil
				}
			}
		}
		cands[i] = candidate{HostConfig: hc, Load: len(s.list) + b.placing[hc.Address], Err: s.err}
	}
	if pin != "" {
		for _, c := range cands {
			if c.Address == pin && c.Err != nil {
				return "", nil, errs.E(errs.Unavailable, "host %s, which holds the snapshot: %v", pin, c.Err)
			}
		}
		return pin, func() {}, nil
	}
	addr, err := place(cands, t.Selector)
	if err != nil {
		return "", nil, err
	}
	b.placing[addr]++
	return addr, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.placing[addr]--; b.placing[addr] <= 0 {
			delete(b.placing, addr)
		}
	}, nil
}

// survey is what one host reported of its workspaces.
type survey struct {
	list []surveyed
	err  error
}

// surveyAll surveys every host of the fleet at once.
func (b *Backend) surveyAll(ctx context.Context) []survey {
	out := make([]survey, len(b.cfg.Hosts))
	var wg sync.WaitGroup
	for i, hc := range b.cfg.Hosts {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, opTimeout)
			defer cancel()
			c, err := b.dialer.Client(sctx, hc.Address)
			if err != nil {
				out[i].err = err
				return
			}
			res, err := b.runScript(sctx, c, "survey workspaces", &script{body: surveyScript})
			out[i] = survey{list: parseSurvey(res), err: err}
		})
	}
	wg.Wait()
	return out
}

// runOn runs s on c with opTimeout.
func (b *Backend) runOn(ctx context.Context, c *Client, what string, s *script) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return b.runScript(ctx, c, what, s)
}

func (b *Backend) inspect(ctx context.Context, c *Client, id string) (runtimeState, error) {
	out, err := b.runOn(ctx, c, "workspace "+id+": inspect", inspectScript(id))
	if err != nil {
		return runtimeState{}, err
	}
	st, err := parseInspect(out)
	if err != nil {
		return runtimeState{}, fmt.Errorf("workspace %s on %s: %w", id, c.Addr(), err)
	}
	return st, nil
}

// tunnel returns the runtime's WebSocket URL through the workspace's SSH
// tunnel (one per workspace, kept while its target is the same).
func (b *Backend) tunnel(ctx context.Context, id, host, port string) (string, error) {
	u, err := b.dialer.Forward(ctx, id, host, "127.0.0.1:"+port)
	if err != nil {
		return "", fmt.Errorf("workspace %s: tunnel to %s: %w", id, host, err)
	}
	return "ws://" + strings.TrimPrefix(u, "http://") + "/", nil
}

// waitReady dials the runtime through the tunnel until it answers a ping
// with token.
func (b *Backend) waitReady(ctx context.Context, h backend.Handle, token string) error {
	id := h.WorkspaceID
	ctx, cancel := context.WithTimeout(ctx, b.opts.ReadyTimeout)
	defer cancel()
	url, err := b.tunnel(ctx, id, h.Attrs["host"], h.Attrs["port"])
	if err != nil {
		return err
	}
	err = backend.AwaitRuntime(ctx, url, token, 5*time.Second, nil)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, backend.ErrTokenRefused):
		return errs.E(errs.Conflict, "workspace %s: runtime on %s refused the workspace's token", id, h.Attrs["host"])
	}
	return errs.E(errs.Unavailable, "workspace %s: runtime on %s did not answer within %s: %v", id, h.Attrs["host"], b.opts.ReadyTimeout, err)
}

// Endpoint implements backend.Backend: it asks the host whether the
// workspace's runtime still runs (a rebooted host has its directory but
// not its runtime) and returns the URL of its tunnel. An unreachable host
// is Unavailable with the SSH error; a workspace the host has no record of
// is NotFound.
func (b *Backend) Endpoint(ctx context.Context, h backend.Handle, token string) (backend.Endpoint, error) {
	if err := b.checkHandle(h); err != nil {
		return backend.Endpoint{}, err
	}
	id, host := h.WorkspaceID, h.Attrs["host"]
	c, err := b.dialer.Client(ctx, host)
	if err != nil {
		return backend.Endpoint{}, fmt.Errorf("workspace %s: %w", id, err)
	}
	st, err := b.inspect(ctx, c, id)
	switch {
	case err != nil:
		return backend.Endpoint{}, err
	case st.Gone:
		return backend.Endpoint{}, errs.E(errs.NotFound, "workspace %s: host %s has no such workspace", id, host)
	case !st.Running:
		return backend.Endpoint{}, errs.E(errs.Unavailable, "workspace %s: its runtime on host %s is not running (the host restarted, or the runtime was killed)", id, host)
	}
	url, err := b.tunnel(ctx, id, host, st.Port)
	if err != nil {
		return backend.Endpoint{}, err
	}
	return backend.Endpoint{URL: url}, nil
}

func (b *Backend) checkHandle(h backend.Handle) error {
	if err := h.Check(Type, nil); err != nil {
		return err
	}
	if h.Attrs["host"] == "" {
		return errs.E(errs.Invalid, "workspace %s: handle names no host", h.WorkspaceID)
	}
	return nil
}

// Destroy implements backend.Backend: on the workspace's host it kills the
// runtime and every process of the workspace, removes its directory, its
// record and, with its last workspace, the user Primer made; in machines
// mode it then runs machines.destroy. A handle without a host (never
// stored) is looked for on every host of the fleet.
func (b *Backend) Destroy(ctx context.Context, h backend.Handle) error {
	return b.remove(ctx, h, true)
}

// Teardown implements backend.Keeper: it kills the runtime and every
// process of the workspace and keeps its directory, user and record, so a
// following Provision starts a runtime on the same files, on the same host.
// A host that cannot be reached is left as it is (its runtime cannot be
// reached either), so recovery can place the workspace elsewhere.
func (b *Backend) Teardown(ctx context.Context, h backend.Handle) error {
	return b.remove(ctx, h, false)
}

func (b *Backend) remove(ctx context.Context, h backend.Handle, destroy bool) error {
	unlock, err := b.locks.LockHandle(h, Type, nil)
	if err != nil {
		return err
	}
	defer unlock()
	id := h.WorkspaceID
	b.dialer.CloseForward(id)
	what, s := "workspace "+id+": stop", stopScript(id)
	if destroy {
		what, s = "workspace "+id+": destroy", destroyScript(id)
	}

	hosts := []string{h.Attrs["host"]}
	if hosts[0] == "" {
		hosts = nil
		if b.cfg.Machines == nil {
			for i, sv := range b.surveyAll(ctx) {
				for _, w := range sv.list {
					if w.ID == id {
						hosts = append(hosts, b.cfg.Hosts[i].Address)
					}
				}
			}
		} else if destroy {
			return b.destroyMachine(ctx, id)
		}
	}
	for _, host := range hosts {
		c, err := b.dialer.Client(ctx, host)
		if err == nil {
			_, err = b.runOn(ctx, c, what, s)
		}
		switch {
		case err == nil:
		case b.cfg.Machines != nil && destroy:
			// The machine goes anyway.
			b.logger.Warn("clean up a machine before destroying it", "workspace_id", id, "host", host, "err", err)
		case !destroy && errs.KindOf(err) == errs.Unavailable:
			b.logger.Warn("host unreachable at teardown; leaving it", "workspace_id", id, "host", host, "err", err)
		default:
			return err
		}
	}
	if destroy && b.cfg.Machines != nil {
		if err := b.destroyMachine(ctx, id); err != nil {
			return err
		}
	}
	if destroy {
		b.logger.Info("vm workspace destroyed", "workspace_id", id, "hosts", hosts)
	} else {
		b.logger.Info("vm workspace runtime stopped, directory kept", "workspace_id", id, "hosts", hosts)
	}
	return nil
}

// List implements backend.Lister: the workspace records on every reachable
// host of the fleet made by this installation, with ids of the server's
// form. Unreachable hosts are skipped (their workspaces are found once they
// answer). Machines are made by the provider's commands and are not
// listed.
func (b *Backend) List(ctx context.Context) ([]backend.Listed, error) {
	if b.cfg.Machines != nil {
		return nil, nil
	}
	inst := b.opts.Installation
	if inst == "" {
		inst = "-"
	}
	byID := map[string]*backend.Listed{}
	var order []string
	for i, sv := range b.surveyAll(ctx) {
		host := b.cfg.Hosts[i].Address
		if sv.err != nil {
			b.logger.Warn("list: host unreachable; skipped", "host", host, "err", sv.err)
			continue
		}
		for _, w := range sv.list {
			if !backend.IsWorkspaceID(w.ID) || w.Installation != inst {
				continue
			}
			l := byID[w.ID]
			if l == nil {
				l = &backend.Listed{WorkspaceID: w.ID}
				byID[w.ID] = l
				order = append(order, w.ID)
			}
			if created := time.Unix(w.Created, 0); w.Created > 0 && (l.Created.IsZero() || created.Before(l.Created)) {
				l.Created = created
			}
			l.Objects = append(l.Objects, "directory "+host+":"+w.Root+"/"+w.ID, "record "+host+":"+stateDir+"/"+w.ID)
		}
	}
	out := make([]backend.Listed, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return out, nil
}

// fsMode is the runtime's file system mode (see docs/DECISIONS.md): whole
// on a machine made for the workspace alone (machines), where an absolute
// path reaches nothing but that workspace's own machine; root on a fleet
// host, which every tenant's workspaces share, so the files API and exec's
// cwd stay inside the workspace's directory there.
func (b *Backend) fsMode() string {
	if b.cfg.Machines != nil {
		return protocol.FSWhole
	}
	return protocol.FSRoot
}
