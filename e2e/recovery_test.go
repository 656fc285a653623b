package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dimage "github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker"
)

// This file proves stale recovery, escalation, deletes while the engine is
// down, the start timeout, warm pools and the session tools on real
// engines (Docker and Podman): for each fault, the phases, events and
// reasons the API shows, exactly one container per live workspace, nothing
// left on the engine once a workspace is deleted, sessions ended and
// resumed, and the files of the workspace's volume kept.

// faultRunLabel is put on every object the templates of these tests make
// (a template's labels are copied onto its containers and volumes), so the
// cleanup finds and removes this test's objects, including those of pool
// members and replacements the test never saw, and nobody else's.
const faultRunLabel = "primer_e2e_fault_run"

// faultRig is one test's engine, platform and run label. The engine
// cleanup is registered before the platform starts, so it runs after the
// platform stopped (cleanups run last-registered first) and the platform
// cannot make objects again behind it.
type faultRig struct {
	t   *testing.T
	e   containertest.Engine
	eng *container.Backend
	run string
	p   *primer
}

// newFaultRig starts a platform with containers and 200 ms probes on e.
func newFaultRig(t *testing.T, e containertest.Engine, opts ...option) *faultRig {
	t.Helper()
	r := &faultRig{t: t, e: e, eng: containertest.Backend(t, e), run: models.NewID("run")}
	t.Cleanup(r.cleanup)
	opts = append([]option{withContainers(t), withProbeInterval(200 * time.Millisecond)}, opts...)
	r.p = startPrimer(t, opts...)
	return r
}

// cleanup removes every container and volume labelled with the run.
func (r *faultRig) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := filters.NewArgs(filters.Arg("label", faultRunLabel+"="+r.run))
	ids := map[string]bool{}
	if cs, err := r.eng.Client().ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: f}); err == nil {
		for _, c := range cs {
			ids[c.Labels[container.LabelWorkspace]] = true
		}
	} else {
		r.t.Errorf("cleanup: list containers: %v", err)
	}
	if vs, err := r.eng.Client().VolumeList(ctx, volume.ListOptions{Filters: f}); err == nil {
		for _, v := range vs.Volumes {
			ids[v.Labels[container.LabelWorkspace]] = true
		}
	} else {
		r.t.Errorf("cleanup: list volumes: %v", err)
	}
	for id := range ids {
		if id == "" {
			continue
		}
		if err := r.eng.Destroy(ctx, backend.Handle{Backend: container.Type, WorkspaceID: id}); err != nil {
			r.t.Errorf("cleanup %s: %v", id, err)
		}
	}
}

// doc is a busybox template document labelled with the run, with extra
// backend fields.
func (r *faultRig) doc(extra map[string]any) json.RawMessage {
	d := map[string]any{
		"kind":   "container",
		"image":  containertest.BusyboxImage,
		"labels": map[string]string{faultRunLabel: r.run},
	}
	for k, v := range extra {
		d[k] = v
	}
	b, err := json.Marshal(d)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

// provider creates the engine's provider once and returns its id.
func (r *faultRig) provider() string {
	r.t.Helper()
	ctx := ctxT(r.t, time.Minute)
	id := r.e.Name + "-local"
	if _, err := r.p.api.GetProvider(ctx, id); errs.Is(err, errs.NotFound) {
		if _, err := r.p.api.CreateProvider(ctx, wire.ProviderSpec{ID: id, Provider: "container", Config: containertest.ProviderConfig(r.e)}); err != nil {
			r.t.Fatalf("create provider: %v", err)
		}
	}
	return id
}

// template creates a busybox template on the engine's provider.
func (r *faultRig) template(id string, extra map[string]any) {
	r.t.Helper()
	ctx := ctxT(r.t, time.Minute)
	if _, err := r.p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: id, ProviderID: r.provider(), Backend: r.doc(extra)}); err != nil {
		r.t.Fatalf("create template %s: %v", id, err)
	}
}

// running creates a workspace of template and waits until it runs.
func (r *faultRig) running(t *testing.T, template string) *wire.Workspace {
	t.Helper()
	ctx := ctxT(t, 2*time.Minute)
	ws, err := r.p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: template})
	if err != nil {
		t.Fatalf("create workspace of %s: %v", template, err)
	}
	return waitPhase(t, r.p.api, ws.ID, wire.PhaseRunning, time.Minute)
}

// containers lists the containers (any state) labelled as workspace id's.
func (r *faultRig) containers(t *testing.T, id string) []dcontainer.Summary {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	cs, err := r.eng.Client().ContainerList(ctx, dcontainer.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", container.LabelWorkspace+"="+id))})
	if err != nil {
		t.Fatalf("list containers of %s: %v", id, err)
	}
	return cs
}

// volumes lists the volumes labelled as workspace id's.
func (r *faultRig) volumes(t *testing.T, id string) []string {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	vs, err := r.eng.Client().VolumeList(ctx, volume.ListOptions{
		Filters: filters.NewArgs(filters.Arg("label", container.LabelWorkspace+"="+id))})
	if err != nil {
		t.Fatalf("list volumes of %s: %v", id, err)
	}
	var out []string
	for _, v := range vs.Volumes {
		out = append(out, v.Name)
	}
	return out
}

// oneSandbox asserts that workspace id has exactly one container, running
// and not paused, and one volume, and returns the container's inspection.
func (r *faultRig) oneSandbox(t *testing.T, id string) dcontainer.InspectResponse {
	t.Helper()
	cs := r.containers(t, id)
	if len(cs) != 1 {
		var names []string
		for _, c := range cs {
			names = append(names, fmt.Sprintf("%.12s %v (%s)", c.ID, c.Names, c.State))
		}
		t.Fatalf("workspace %s has %d containers %v, want exactly one", id, len(cs), names)
	}
	if vs := r.volumes(t, id); len(vs) != 1 {
		t.Errorf("workspace %s has volumes %v, want exactly one", id, vs)
	}
	ctx := ctxT(t, 30*time.Second)
	info, err := r.eng.Client().ContainerInspect(ctx, cs[0].ID)
	if err != nil {
		t.Fatalf("inspect container of %s: %v", id, err)
	}
	if info.State == nil || !info.State.Running || info.State.Paused {
		t.Errorf("container of %s is %+v, want running and not paused", id, info.State)
	}
	return info
}

// deleteGone deletes workspace id, waits until GET is 404 and checks that
// the engine holds nothing of it.
func (r *faultRig) deleteGone(t *testing.T, id string) {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	if _, err := r.p.api.DeleteWorkspace(ctx, id); err != nil {
		t.Fatalf("delete %s: %v", id, err)
	}
	if err := r.p.api.WaitGone(ctx, id, nil); err != nil {
		t.Fatalf("delete %s: %v", id, err)
	}
	if objs := containertest.Objects(t, r.eng, id); len(objs) > 0 {
		t.Errorf("engine objects left after deleting %s: %v", id, objs)
	}
}

// waitPhase polls workspace id until it is in phase, for at most d. Waiting
// for running, a workspace that is escalated or terminating fails the test
// at once (it does not leave those phases by itself); a failed one may
// still be recovered and is waited through.
func waitPhase(t *testing.T, api *client.Client, id, phase string, d time.Duration) *wire.Workspace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var last *wire.Workspace
	for {
		ws, err := api.GetWorkspace(ctx, id)
		if err == nil {
			last = ws
			if ws.Phase == phase {
				return ws
			}
			if phase == wire.PhaseRunning && (ws.Phase == wire.PhaseEscalated || ws.Phase == wire.PhaseTerminating) {
				t.Fatalf("workspace %s is %s (%s), want running", id, ws.Phase, ws.Reason)
			}
		} else if !errs.Is(err, errs.Unavailable) && ctx.Err() == nil {
			t.Fatalf("get workspace %s: %v", id, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("workspace %s not %s within %s; last %+v", id, phase, d, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitEvent polls the events of workspace id until one of type typ
// arrives, for at most d, and returns the events up to and including it.
func waitEvent(t *testing.T, api *client.Client, id, typ string, d time.Duration) []wire.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var evs []wire.Event
	for {
		var err error
		evs, err = api.Events(ctx, id, 0)
		if err == nil {
			for i, ev := range evs {
				if ev.Type == typ {
					return evs[:i+1]
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %s event of %s within %s; events: %s", typ, id, d, describeEvents(evs))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// describeEvents is a compact account of events for failure messages.
func describeEvents(evs []wire.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  %s %s", ev.Type, ev.Data)
	}
	return b.String()
}

// phaseChange is the data of a workspace.phase_changed event.
type phaseChange struct {
	From, To, Reason string
}

// transitions lists the phase changes among evs, in order.
func transitions(t *testing.T, evs []wire.Event) []phaseChange {
	t.Helper()
	var out []phaseChange
	for _, ev := range evs {
		if ev.Type != wire.EventPhaseChanged {
			continue
		}
		var pc phaseChange
		decode(t, ev.Data, &pc)
		out = append(out, pc)
	}
	return out
}

// lastChangeTo returns the last phase change into phase among evs.
func lastChangeTo(t *testing.T, evs []wire.Event, phase string) (phaseChange, bool) {
	t.Helper()
	pcs := transitions(t, evs)
	for i := len(pcs) - 1; i >= 0; i-- {
		if pcs[i].To == phase {
			return pcs[i], true
		}
	}
	return phaseChange{}, false
}

// eventKeys lists events as "type" or, for phase changes, "from>to".
func eventKeys(t *testing.T, evs []wire.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		k := ev.Type
		if ev.Type == wire.EventPhaseChanged {
			var pc phaseChange
			decode(t, ev.Data, &pc)
			k = pc.From + ">" + pc.To
		}
		out = append(out, k)
	}
	return out
}

// subsequence reports whether want appears in got in order (not
// necessarily next to each other).
func subsequence(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// recoveredData is the data of workspace.recovered.
type recoveredData struct {
	Attempt  int `json:"attempt"`
	Sessions []struct {
		ID          string `json:"id"`
		ResumedFrom string `json:"resumed_from"`
	} `json:"sessions"`
}

// lostWorkspace is a running workspace with what a fault must not lose: a
// file written through the API, a session with one recorded tool call, and
// its container.
type lostWorkspace struct {
	ws      *wire.Workspace
	session string
	commit  string // the session's tool call
	before  dcontainer.InspectResponse
}

const notes = "notes that must survive the sandbox\n"

// prepareLoss creates a workspace of template with notes.txt, a session
// and a tool call recorded in .state.
func (r *faultRig) prepareLoss(t *testing.T, template string) *lostWorkspace {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	ws := r.running(t, template)
	if _, err := r.p.api.WriteFile(ctx, ws.ID, "notes.txt", strings.NewReader(notes)); err != nil {
		t.Fatalf("write notes.txt: %v", err)
	}
	ses, err := r.p.api.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: ws.ID, Agent: "agent-1"})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	wr, err := r.p.api.ToolWrite(ctx, ses.ID, "agent.txt", []byte("written by the agent\n"), 0)
	if err != nil || len(wr.Commit) != 40 {
		t.Fatalf("tool write = %+v, %v; want a commit", wr, err)
	}
	return &lostWorkspace{ws: ws, session: ses.ID, commit: wr.Commit, before: r.oneSandbox(t, ws.ID)}
}

// checkRecovered asserts what a recovered workspace must show: running on
// a new container (the only one), the old one gone, the lost session ended
// workspace_lost and resumed by a new open session that can call tools and
// sees the old session's history, the files kept, and the events of the
// recovery in order. It returns the events.
func (r *faultRig) checkRecovered(t *testing.T, lw *lostWorkspace) []wire.Event {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	id := lw.ws.ID
	evs := waitEvent(t, r.p.api, id, wire.EventRecovered, 90*time.Second)
	ws := waitPhase(t, r.p.api, id, wire.PhaseRunning, 30*time.Second)
	if ws.Reason == "" {
		t.Errorf("recovered workspace has no reason")
	}

	after := r.oneSandbox(t, id)
	if after.ID == lw.before.ID {
		t.Errorf("container after recovery is the old one %.12s, want a new one", after.ID)
	}
	if _, err := r.eng.Client().ContainerInspect(ctx, lw.before.ID); !cerrdefs.IsNotFound(err) {
		t.Errorf("old container %.12s: inspect err = %v, want not found (removed)", lw.before.ID, err)
	}

	// Sessions: the lost one ended, a new open one resumes it.
	resumed := resumedSession(t, r.p.api, ctx, id, lw.session)
	var rd recoveredData
	if err := json.Unmarshal(evs[len(evs)-1].Data, &rd); err != nil {
		t.Fatal(err)
	}
	if rd.Attempt < 1 || len(rd.Sessions) != 1 || rd.Sessions[0].ID != resumed.ID || rd.Sessions[0].ResumedFrom != lw.session {
		t.Errorf("workspace.recovered data = %s; want attempt >= 1 and sessions [{%s %s}]", evs[len(evs)-1].Data, resumed.ID, lw.session)
	}

	// The files of the volume and the history in .state are kept.
	if got, err := r.p.api.ReadFile(ctx, id, "notes.txt"); err != nil || string(got) != notes {
		t.Errorf("notes.txt after recovery = %q, %v; want %q", got, err, notes)
	}
	h, err := r.p.api.SessionHistory(ctx, resumed.ID, true)
	if err != nil {
		t.Fatalf("history of the resumed session: %v", err)
	}
	if h.ResumedFrom != lw.session || len(h.Items) != 1 || h.Items[0].Commit != lw.commit || h.Items[0].Session != lw.session {
		t.Errorf("history of %s with include_resumed = %+v; want the lost session's commit %s", resumed.ID, h, lw.commit)
	}
	if h, err := r.p.api.SessionHistory(ctx, lw.session, false); err != nil || len(h.Items) != 1 || h.Items[0].Commit != lw.commit {
		t.Errorf("history of the lost session = %+v, %v; want its commit %s", h, err, lw.commit)
	}
	// The resumed session works, and the old one refuses tools.
	res, err := r.p.api.ToolExec(ctx, resumed.ID, client.ToolExecRequest{Command: "cat agent.txt notes.txt"})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, "written by the agent") || !strings.Contains(res.Stdout, "must survive") {
		t.Errorf("tool exec on the resumed session = %+v, %v", res, err)
	}
	if _, err := r.p.api.ToolExec(ctx, lw.session, client.ToolExecRequest{Args: []string{"true"}}); errs.KindOf(err) != errs.Precondition {
		t.Errorf("tool exec on the lost session: %v, want failed_precondition", err)
	}

	// Events: failed, recovery started, pending, running, recovered (the
	// workflow records running first, then resumes the sessions and says
	// so).
	evs, err = r.p.api.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pending>running", "running>failed", wire.EventRecoveryStarted, "failed>pending", wire.EventProvisioned, "pending>running", wire.EventRecovered}
	if got := eventKeys(t, evs); !subsequence(got, want) {
		t.Errorf("events of %s = %v; want in order %v", id, got, want)
	}
	return evs
}

// resumedSession checks that session lost of workspace id ended
// workspace_lost and returns the open session that resumes it.
func resumedSession(t *testing.T, api *client.Client, ctx context.Context, id, lost string) *wire.Session {
	t.Helper()
	ss, err := api.ListSessions(ctx, client.SessionListOptions{WorkspaceID: id})
	if err != nil {
		t.Fatal(err)
	}
	var resumed *wire.Session
	for i := range ss {
		s := &ss[i]
		switch {
		case s.ID == lost:
			if s.Status != wire.SessionEnded || s.EndReason != wire.ReasonWorkspaceLost {
				t.Errorf("lost session %s is %s (%s), want ended workspace_lost", s.ID, s.Status, s.EndReason)
			}
		case s.ResumedFrom == lost:
			resumed = s
		}
	}
	if resumed == nil || resumed.Status != wire.SessionOpen {
		t.Fatalf("sessions of %s = %+v; want an open one resumed from %s", id, ss, lost)
	}
	return resumed
}

// TestRecoveryFaults breaks a running workspace's sandbox in three ways
// (killed by the engine, paused, its runtime process killed from the host)
// and checks that stale recovery brings it back on a new container with
// its files, its history and its sessions resumed. Docker and Podman.
func TestRecoveryFaults(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e)
		r.template("rec", map[string]any{"recovery": map[string]any{"max_attempts": 3, "after": "0s"}})

		faults := []struct {
			name string
			// do breaks the sandbox.
			do func(t *testing.T, ctx context.Context, info dcontainer.InspectResponse)
			// reason is what the failed phase's reason says.
			reason string
		}{
			{
				// The runtime sends nothing while frozen: its beacon record
				// expires (the engine still calls a paused container
				// running, and its connection stays open).
				name: "Paused",
				do: func(t *testing.T, ctx context.Context, info dcontainer.InspectResponse) {
					if err := r.eng.Client().ContainerPause(ctx, info.ID); err != nil {
						t.Fatalf("pause container: %v", err)
					}
				},
				reason: "beacon expired",
			},
			{
				name: "KilledFromOutside",
				do: func(t *testing.T, ctx context.Context, info dcontainer.InspectResponse) {
					if err := r.eng.Client().ContainerKill(ctx, info.ID, "KILL"); err != nil {
						t.Fatalf("kill container: %v", err)
					}
				},
				reason: "exited",
			},
			{
				// The runtime is PID 1 of the container: killing it from
				// the host ends the container.
				name: "RuntimeProcessKilled",
				do: func(t *testing.T, ctx context.Context, info dcontainer.InspectResponse) {
					if info.State == nil || info.State.Pid <= 1 {
						t.Fatalf("container state %+v has no host pid", info.State)
					}
					cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", info.State.Pid))
					if !strings.Contains(string(cmdline), "primer-runtime") {
						t.Fatalf("host pid %d runs %q, want primer-runtime", info.State.Pid, cmdline)
					}
					if err := syscall.Kill(info.State.Pid, syscall.SIGKILL); err != nil {
						t.Fatalf("kill runtime pid %d: %v", info.State.Pid, err)
					}
				},
				reason: "exited",
			},
		}
		// Paused is the slowest (three probes that time out): it goes first,
		// so the others run beside it.
		for _, f := range faults {
			t.Run(f.name, func(t *testing.T) {
				t.Parallel()
				ctx := ctxT(t, 3*time.Minute)
				lw := r.prepareLoss(t, "rec")
				start := time.Now()
				f.do(t, ctx, lw.before)
				// checkRecovered also sees the old container (killed or
				// paused) gone and the new one running, not paused.
				evs := r.checkRecovered(t, lw)
				t.Logf("%s: recovered in %s", f.name, time.Since(start).Round(time.Millisecond))

				failed, ok := lastChangeTo(t, evs, wire.PhaseFailed)
				t.Logf("%s: failed: %s", f.name, failed.Reason)
				if !ok || !strings.Contains(failed.Reason, f.reason) {
					t.Errorf("failed reason %q does not say %q", failed.Reason, f.reason)
				}
				r.deleteGone(t, lw.ws.ID)
			})
		}
	})
}

// TestRecoveryEscalation runs out of recovery attempts: a workspace whose
// container is killed cannot be replaced because its image is gone, so
// after max_attempts (1) it is escalated, with an event and a webhook POST;
// once the image is back, POST recover brings it back running, with its
// files and its session resumed. Docker and Podman.
func TestRecoveryEscalation(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e)
		ctx := ctxT(t, 3*time.Minute)

		// A tag of busybox only this test uses: removing it makes the
		// template's image unavailable without touching anybody else's.
		image := "primer/e2e-escalation-" + strings.ToLower(strings.TrimPrefix(r.run, "run-")) + ":1.0"
		if err := r.eng.Client().ImageTag(ctx, containertest.BusyboxImage, image); err != nil {
			t.Fatalf("tag %s: %v", image, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := r.eng.Client().ImageRemove(ctx, image, dimage.RemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
				t.Errorf("remove tag %s: %v", image, err)
			}
		})

		type hook struct {
			body map[string]any
			ct   string
		}
		hooks := make(chan hook, 8)
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			var h hook
			h.ct = req.Header.Get("Content-Type")
			if err := json.NewDecoder(req.Body).Decode(&h.body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			hooks <- h
			w.WriteHeader(http.StatusNoContent)
		}))
		defer hs.Close()

		r.template("esc", map[string]any{
			"image":    image,
			"recovery": map[string]any{"max_attempts": 1, "after": "0s", "webhook_url": hs.URL + "/hooks/primer?token=s3cret"},
		})
		lw := r.prepareLoss(t, "esc")
		id := lw.ws.ID

		if _, err := r.eng.Client().ImageRemove(ctx, image, dimage.RemoveOptions{}); err != nil {
			t.Fatalf("untag %s: %v", image, err)
		}
		if err := r.eng.Client().ContainerKill(ctx, lw.before.ID, "KILL"); err != nil {
			t.Fatal(err)
		}
		esc := waitPhase(t, r.p.api, id, wire.PhaseEscalated, 90*time.Second)
		if !strings.Contains(esc.Reason, "gave up after 1 recovery attempts") || !strings.Contains(esc.Reason, "e2e-escalation") {
			t.Errorf("escalated reason %q does not say it gave up and why (the missing image)", esc.Reason)
		}
		evs := waitEvent(t, r.p.api, id, wire.EventEscalated, 10*time.Second)
		want := []string{"running>failed", wire.EventRecoveryStarted, "failed>pending", wire.EventRecoveryFailed, "pending>failed", "failed>escalated", wire.EventEscalated}
		if got := eventKeys(t, evs); !subsequence(got, want) {
			t.Errorf("events = %v; want in order %v", got, want)
		}
		select {
		case h := <-hooks:
			if h.ct != "application/json" {
				t.Errorf("webhook content type %q, want application/json", h.ct)
			}
			if h.body["event"] != wire.EventEscalated || h.body["workspace_id"] != id || h.body["phase"] != wire.PhaseEscalated ||
				h.body["template_id"] != "esc" || h.body["attempts"] != float64(1) || h.body["reason"] != esc.Reason {
				t.Errorf("webhook body %v; want event %s, workspace %s, phase escalated, attempts 1, reason %q", h.body, wire.EventEscalated, id, esc.Reason)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no webhook POST within 30s of the escalation")
		}
		// Escalated: no container, the volume (the workspace's data) kept,
		// files and tools refused.
		if cs := r.containers(t, id); len(cs) != 0 {
			t.Errorf("escalated workspace has containers %d, want none", len(cs))
		}
		if vs := r.volumes(t, id); len(vs) != 1 {
			t.Errorf("escalated workspace has volumes %v, want its one volume kept", vs)
		}
		if _, err := r.p.api.ReadFile(ctx, id, "notes.txt"); errs.KindOf(err) != errs.Precondition {
			t.Errorf("read a file of an escalated workspace: %v, want failed_precondition", err)
		}
		// Escalated stays escalated: no more attempts on their own.
		time.Sleep(time.Second)
		if ws, err := r.p.api.GetWorkspace(ctx, id); err != nil || ws.Phase != wire.PhaseEscalated {
			t.Errorf("a second after escalation: %+v, %v; want still escalated", ws, err)
		}

		// The cause goes away; a user asks for recovery.
		if err := r.eng.Client().ImageTag(ctx, containertest.BusyboxImage, image); err != nil {
			t.Fatal(err)
		}
		if _, err := r.p.api.RecoverWorkspace(ctx, id); err != nil {
			t.Fatalf("recover: %v", err)
		}
		evs = r.checkRecovered(t, lw)
		var requested bool
		for _, ev := range evs {
			if ev.Type == wire.EventRecoveryStarted && strings.Contains(string(ev.Data), "requested by user") {
				requested = true
			}
		}
		if !requested {
			t.Errorf("no recovery_started requested by user among %s", describeEvents(evs))
		}
		if _, err := r.p.api.RecoverWorkspace(ctx, id); errs.KindOf(err) != errs.Precondition {
			t.Errorf("recover a running workspace: %v, want failed_precondition", err)
		}
		select {
		case h := <-hooks:
			t.Errorf("unexpected second webhook %v", h.body)
		default:
		}
		// The webhook URL's token is never shown: not in events, not in
		// the workspace.
		if got := describeEvents(evs) + esc.Reason; strings.Contains(got, "s3cret") {
			t.Errorf("the webhook token leaked: %s", got)
		}
		r.deleteGone(t, id)
	})
}

// TestRecoveryStartTimeout gives a template a start timeout of 3s and an
// init that sleeps 600s: the workspace fails with a reason naming the start
// timeout, long before the init could end (which bounds the wait, not a
// wall-clock margin a loaded machine can miss), nothing is left of its
// sandbox, and a delete leaves nothing. Docker and Podman.
func TestRecoveryStartTimeout(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e)
		// Recovery waits an hour: the test sees the failure itself.
		r.template("slow", map[string]any{
			"start_timeout": "3s",
			"init":          []string{"sleep 600"},
			"recovery":      map[string]any{"max_attempts": 1, "after": "1h"},
		})
		ctx := ctxT(t, 2*time.Minute)
		start := time.Now()
		ws, err := r.p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "slow"})
		if err != nil {
			t.Fatal(err)
		}
		failed := waitPhase(t, r.p.api, ws.ID, wire.PhaseFailed, 5*time.Minute)
		took := time.Since(start)
		t.Logf("failed after %s: %s", took.Round(time.Millisecond), failed.Reason)
		if !strings.Contains(failed.Reason, "start timeout (3s)") {
			t.Errorf("reason %q does not name the start timeout", failed.Reason)
		}
		if took < 3*time.Second {
			t.Errorf("failed after %s, before the 3s start timeout", took)
		}
		evs := waitEvent(t, r.p.api, ws.ID, wire.EventProvisionFailed, 10*time.Second)
		if !strings.Contains(string(evs[len(evs)-1].Data), "start timeout") {
			t.Errorf("provision_failed %s does not name the start timeout", evs[len(evs)-1].Data)
		}
		eventually(t, 30*time.Second, "the timed-out sandbox removed", func() bool {
			return len(r.containers(t, ws.ID)) == 0
		})
		r.deleteGone(t, ws.ID)
	})
}

// engineProxy serves an engine's API on a unix socket of its own, and can
// be taken down (listener closed and every connection cut) and brought up
// again: an engine that is down for a while.
type engineProxy struct {
	path, target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func (p *engineProxy) up(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return
	}
	_ = os.Remove(p.path)
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	p.ln = ln
	if p.conns == nil {
		p.conns = map[net.Conn]bool{}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", p.target)
			if err != nil {
				c.Close()
				continue
			}
			if !p.track(ln, c, up) {
				continue
			}
			go func() {
				defer p.untrack(c, up)
				go io.Copy(up, c)
				io.Copy(c, up)
			}()
		}
	}()
}

// track records a proxied pair; false (both closed) when the proxy went
// down meanwhile.
func (p *engineProxy) track(ln net.Listener, c, up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != ln {
		c.Close()
		up.Close()
		return false
	}
	p.conns[c], p.conns[up] = true, true
	return true
}

func (p *engineProxy) untrack(c, up net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.Close()
	up.Close()
	delete(p.conns, c)
	delete(p.conns, up)
}

// down closes the listener and cuts every connection.
func (p *engineProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// TestRecoveryEngineDown takes the engine's API away (a provider whose
// socket is a proxy to the real engine, stopped and started again): a
// running workspace keeps running and answering, since its runtime is
// reached directly; a delete meanwhile keeps the workspace terminating with
// a reason naming the engine's error, and completes once the engine is
// back, leaving nothing. Docker and Podman.
func TestRecoveryEngineDown(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e)
		ctx := ctxT(t, 3*time.Minute)
		dir, err := os.MkdirTemp("", "primer-proxy")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		proxy := &engineProxy{path: filepath.Join(dir, "engine.sock"), target: e.Socket}
		proxy.up(t)
		t.Cleanup(proxy.down)

		cfg, _ := json.Marshal(map[string]any{
			"kind": "container", "runtime": e.Name,
			"connection":   map[string]any{"kind": "socket", "socket_path": proxy.path},
			"reachability": map[string]any{"kind": "host_port", "bind_host": "127.0.0.1"},
		})
		if _, err := r.p.api.CreateProvider(ctx, wire.ProviderSpec{ID: "flaky", Provider: "container", Config: cfg}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: "flaky-bb", ProviderID: "flaky", Backend: r.doc(nil)}); err != nil {
			t.Fatal(err)
		}
		keep := r.running(t, "flaky-bb")
		del := r.running(t, "flaky-bb")
		if _, err := r.p.api.WriteFile(ctx, keep.ID, "keep.txt", strings.NewReader("kept")); err != nil {
			t.Fatal(err)
		}

		proxy.down()
		downAt := time.Now()
		if _, err := r.p.api.DeleteWorkspace(ctx, del.ID); err != nil {
			t.Fatalf("delete while the engine is down: %v", err)
		}
		var stuck *wire.Workspace
		eventually(t, 60*time.Second, "terminating with the destroy failure in the reason", func() bool {
			ws, err := r.p.api.GetWorkspace(ctx, del.ID)
			if err != nil {
				return false
			}
			stuck = ws
			return ws.Phase == wire.PhaseTerminating && strings.Contains(ws.Reason, "destroy failed")
		})
		t.Logf("while down: %s %s", stuck.Phase, stuck.Reason)
		if !strings.Contains(stuck.Reason, "not reachable") || !strings.Contains(stuck.Reason, proxy.path) {
			t.Errorf("reason %q does not give the engine's error (not reachable at %s)", stuck.Reason, proxy.path)
		}
		if len(r.containers(t, del.ID)) != 1 {
			t.Errorf("the container of %s changed while the engine was down", del.ID)
		}
		// Probes reach the runtime without the engine: well past three probe
		// intervals, the other workspace still runs and answers.
		if d := 2*time.Second - time.Since(downAt); d > 0 {
			time.Sleep(d)
		}
		if ws, err := r.p.api.GetWorkspace(ctx, keep.ID); err != nil || ws.Phase != wire.PhaseRunning {
			t.Errorf("running workspace while the engine is down = %+v, %v; want running", ws, err)
		}
		if res, err := r.p.api.Exec(ctx, client.ExecRequest{WorkspaceID: keep.ID, Command: []string{"cat", "keep.txt"}}); err != nil || res.Stdout != "kept" {
			t.Errorf("exec while the engine is down = %+v, %v", res, err)
		}
		if evs, _ := r.p.api.Events(ctx, keep.ID, 0); len(transitions(t, evs)) != 1 {
			t.Errorf("phase changes of the running workspace while the engine was down: %v", eventKeys(t, evs))
		}

		proxy.up(t)
		upAt := time.Now()
		wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		if err := r.p.api.WaitGone(wctx, del.ID, nil); err != nil {
			t.Fatalf("delete once the engine is back: %v", err)
		}
		t.Logf("deleted %s after the engine came back", time.Since(upAt).Round(time.Millisecond))
		if objs := containertest.Objects(t, r.eng, del.ID); len(objs) > 0 {
			t.Errorf("objects left of %s: %v", del.ID, objs)
		}
		if _, err := r.p.api.GetWorkspace(ctx, keep.ID); err != nil {
			t.Fatal(err)
		}
		r.oneSandbox(t, keep.ID)
		r.deleteGone(t, keep.ID)
	})
}

// TestPoolOnContainers runs a warm pool of two busybox workspaces: a lease
// is warm and answers at once; a return resets the workspace (files,
// processes) and puts it back; a lease of an empty pool is cold; a template
// update rolls the idle members over to the new generation; deleting the
// pool removes its idle members from the engine and leaves a leased one
// running. Docker and Podman.
func TestPoolOnContainers(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e, func(c *worker.Config) { c.PoolInterval = time.Second })
		ctx := ctxT(t, 4*time.Minute)
		api := r.p.api
		tmplDoc := func(gen string) map[string]any {
			return map[string]any{
				"env":   map[string]string{"GEN": gen},
				"files": map[string]string{"hello.txt": "hello from the template\n"},
			}
		}
		r.template("pooled", tmplDoc("1"))
		if _, err := api.CreatePool(ctx, wire.PoolSpec{ID: "warm", TemplateID: "pooled", Size: 2}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _ = api.DeletePool(ctx, "warm")
		})
		waitIdle := func(n int, d time.Duration) {
			t.Helper()
			eventually(t, d, fmt.Sprintf("%d idle running members", n), func() bool {
				p, err := api.GetPool(ctx, "warm")
				return err == nil && p.Status.Idle == n && p.Status.Starting == 0
			})
		}
		start := time.Now()
		waitIdle(2, 2*time.Minute)
		t.Logf("pool of 2 filled in %s", time.Since(start).Round(time.Millisecond))

		// A warm lease answers at once, and the workspace works at once.
		exec := func(id, script string) *wire.ExecResponse {
			t.Helper()
			res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"sh", "-c", script}})
			if err != nil {
				t.Fatalf("exec %q in %s: %v", script, id, err)
			}
			return res
		}
		leaseStart := time.Now()
		l, err := api.LeasePool(ctx, "warm", wire.LeaseRequest{})
		if err != nil {
			t.Fatal(err)
		}
		leaseTook := time.Since(leaseStart)
		if l.Source != client.LeaseWarm || l.Workspace.Phase != wire.PhaseRunning || l.Workspace.PoolState != wire.PoolLeased {
			t.Fatalf("lease = %s %+v; want warm, running, leased", l.Source, l.Workspace)
		}
		a := l.Workspace.ID
		if res := exec(a, "cat hello.txt; echo $GEN"); res.Stdout != "hello from the template\n1\n" {
			t.Errorf("exec right after a warm lease = %+v", res)
		}
		t.Logf("warm lease in %s", leaseTook.Round(time.Microsecond))
		// The lessee leaves files and a process behind.
		if _, err := api.WriteFile(ctx, a, "scratch/left.txt", strings.NewReader("left behind")); err != nil {
			t.Fatal(err)
		}
		if err := api.RemoveFile(ctx, a, "hello.txt", false); err != nil {
			t.Fatal(err)
		}
		if res := exec(a, "sleep 1000 >/dev/null 2>&1 & echo started"); res.Stdout != "started\n" {
			t.Errorf("start a background process = %+v", res)
		}
		if res := exec(a, "ps -o args"); !strings.Contains(res.Stdout, "sleep 1000") {
			t.Errorf("ps before the return = %q, want the sleep", res.Stdout)
		}
		ses, err := api.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: a, Agent: "lessee"})
		if err != nil {
			t.Fatal(err)
		}

		// Return: reset, then idle again.
		if _, err := api.ReturnWorkspace(ctx, a); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "the returned workspace idle again", func() bool {
			ws, err := api.GetWorkspace(ctx, a)
			return err == nil && ws.PoolState == wire.PoolIdle && ws.Phase == wire.PhaseRunning
		})
		if res := exec(a, "ls -A; cat hello.txt"); res.Stdout != "hello.txt\nhello from the template\n" {
			t.Errorf("files after the return = %q; want the template's hello.txt only", res.Stdout)
		}
		if res := exec(a, "ps -o args"); strings.Contains(res.Stdout, "sleep 1000") {
			t.Errorf("ps after the return = %q; the lessee's process survived", res.Stdout)
		}
		top, err := r.eng.Client().ContainerTop(ctx, container.Name(a), nil)
		if err == nil {
			for _, proc := range top.Processes {
				if strings.Contains(strings.Join(proc, " "), "sleep 1000") {
					t.Errorf("the engine still lists the lessee's process %v", proc)
				}
			}
		} else {
			t.Logf("container top: %v", err)
		}
		if s, err := api.GetSession(ctx, ses.ID); err != nil || s.Status != wire.SessionEnded || s.EndReason != wire.ReasonWorkspaceReturned {
			t.Errorf("lessee's session after the return = %+v, %v; want ended workspace_returned", s, err)
		}
		waitEvent(t, api, a, wire.EventReturned, 10*time.Second)

		// Drain the pool: leases come warm until it is empty, then cold.
		var warm []string
		var cold *wire.Workspace
		for range 6 {
			l, err := api.LeasePool(ctx, "warm", wire.LeaseRequest{Labels: map[string]string{"run": "drain"}})
			if err != nil {
				t.Fatal(err)
			}
			if l.Source == client.LeaseCold {
				cold = l.Workspace
				break
			}
			warm = append(warm, l.Workspace.ID)
		}
		if cold == nil {
			t.Fatalf("six leases of a pool of two were all warm: %v", warm)
		}
		if cold.PoolID != "" || cold.Labels["run"] != "drain" || cold.Phase != wire.PhasePending {
			t.Errorf("cold lease = %+v; want a pending workspace outside the pool with the lease's labels", cold)
		}
		waitPhase(t, api, cold.ID, wire.PhaseRunning, time.Minute)
		r.deleteGone(t, cold.ID)
		// Keep one lease to the end; give the others back. The kept one
		// counts toward the pool's size, so grow the pool to 3 to roll
		// two idle members over beside it.
		kept := warm[0]
		for _, id := range warm[1:] {
			if _, err := api.ReturnWorkspace(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := api.UpdatePool(ctx, "warm", wire.PoolSpec{TemplateID: "pooled", Size: 3}); err != nil {
			t.Fatal(err)
		}
		waitIdle(2, 2*time.Minute)

		// A template update rolls the idle members over.
		ws1, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{PoolID: "warm", PoolState: wire.PoolIdle})
		if err != nil {
			t.Fatal(err)
		}
		var old []string
		for _, w := range ws1 {
			old = append(old, w.ID)
		}
		tmpl, err := api.UpdateTemplate(ctx, "pooled", wire.TemplateSpec{ProviderID: r.provider(), Backend: r.doc(tmplDoc("2"))})
		if err != nil {
			t.Fatal(err)
		}
		rollStart := time.Now()
		minReady := 2
		eventually(t, 2*time.Minute, "every idle member of the new template generation", func() bool {
			ws, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{PoolID: "warm", PoolState: wire.PoolIdle})
			if err != nil {
				return false
			}
			ready, done := 0, true
			for _, w := range ws {
				if w.Phase == wire.PhaseRunning {
					ready++
				}
				if w.TemplateGeneration != tmpl.Generation || w.Phase != wire.PhaseRunning {
					done = false
				}
			}
			minReady = min(minReady, ready)
			return done && len(ws) == 2
		})
		t.Logf("rolled over to generation %d in %s; at least %d idle running members all along", tmpl.Generation, time.Since(rollStart).Round(time.Millisecond), minReady)
		// One new member first, then one old one out once every new one
		// runs: never fewer than one ready to lease (polled, so a gap
		// shorter than the poll could pass unseen).
		if minReady < 1 {
			t.Errorf("the pool had %d idle running members during the roll, want at least 1", minReady)
		}
		for _, id := range old {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := api.WaitGone(wctx, id, nil)
			cancel()
			if err != nil {
				t.Errorf("old member %s not deleted: %v", id, err)
			} else if objs := containertest.Objects(t, r.eng, id); len(objs) > 0 {
				t.Errorf("old member %s left %v", id, objs)
			}
		}
		ws2, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{PoolID: "warm", PoolState: wire.PoolIdle})
		if err != nil {
			t.Fatal(err)
		}
		var idle []string
		for _, w := range ws2 {
			idle = append(idle, w.ID)
			if res := exec(w.ID, "echo $GEN"); res.Stdout != "2\n" {
				t.Errorf("GEN in a rolled member = %q, want 2", res.Stdout)
			}
			r.oneSandbox(t, w.ID)
		}
		if kw, err := api.GetWorkspace(ctx, kept); err != nil || kw.PoolState != wire.PoolLeased || kw.TemplateGeneration == tmpl.Generation {
			t.Errorf("leased member after the roll = %+v, %v; want still leased, of the old generation", kw, err)
		}

		// Deleting the pool: idle members go, the leased one stays.
		if _, err := api.DeletePool(ctx, "warm"); err != nil {
			t.Fatal(err)
		}
		for _, id := range idle {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := api.WaitGone(wctx, id, nil)
			cancel()
			if err != nil {
				t.Errorf("idle member %s of the deleted pool: %v", id, err)
			} else if objs := containertest.Objects(t, r.eng, id); len(objs) > 0 {
				t.Errorf("idle member %s of the deleted pool left %v", id, objs)
			}
		}
		eventually(t, 30*time.Second, "the leased member detached from the deleted pool", func() bool {
			kw, err := api.GetWorkspace(ctx, kept)
			return err == nil && kw.PoolID == ""
		})
		kw, err := api.GetWorkspace(ctx, kept)
		if err != nil || kw.Phase != wire.PhaseRunning {
			t.Errorf("leased member after the pool's delete = %+v, %v; want running", kw, err)
		}
		if res := exec(kept, "echo still here"); res.Stdout != "still here\n" {
			t.Errorf("exec in the leased member = %+v", res)
		}
		r.oneSandbox(t, kept)
		if left, err := api.ListWorkspaces(ctx, client.WorkspaceListOptions{PoolID: "warm"}); err != nil || len(left) != 0 {
			t.Errorf("workspaces still in the deleted pool: %v, %v", left, err)
		}
		r.deleteGone(t, kept)
	})
}

// TestSessionToolsOnContainers calls the session tools in a container
// workspace: every call is a commit in .state on the volume, the history
// lists them newest first, the diff of a write shows the file, and a
// restore to the commit before the write removes it. Docker and Podman.
func TestSessionToolsOnContainers(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		r := newFaultRig(t, e)
		r.template("tools", nil)
		ctx := ctxT(t, 2*time.Minute)
		api := r.p.api
		ws := r.running(t, "tools")
		ses, err := api.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: ws.ID, Agent: "agent-7"})
		if err != nil {
			t.Fatal(err)
		}

		ex, err := api.ToolExec(ctx, ses.ID, client.ToolExecRequest{Command: "echo one > a.txt && echo ran"})
		if err != nil || ex.ExitCode != 0 || ex.Stdout != "ran\n" || len(ex.Commit) != 40 {
			t.Fatalf("tool exec = %+v, %v", ex, err)
		}
		wr, err := api.ToolWrite(ctx, ses.ID, "src/b.py", []byte("print('bee')\n"), 0o600)
		if err != nil || wr.Size != 13 || len(wr.Commit) != 40 {
			t.Fatalf("tool write = %+v, %v", wr, err)
		}
		rd, err := api.ToolRead(ctx, ses.ID, "src/b.py")
		if err != nil || string(rd.Content) != "print('bee')\n" || len(rd.Commit) != 40 {
			t.Fatalf("tool read = %+v, %v", rd, err)
		}
		commits := []string{ex.Commit, wr.Commit, rd.Commit}
		if len(slices.Compact(slices.Clone(commits))) != 3 {
			t.Errorf("commits %v are not three distinct commits", commits)
		}

		h, err := api.SessionHistory(ctx, ses.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		var gotTools, gotCommits []string
		for _, it := range h.Items {
			gotTools = append(gotTools, it.Tool)
			gotCommits = append(gotCommits, it.Commit)
			if it.Session != ses.ID || it.Author != "agent-7" {
				t.Errorf("history entry %+v: want session %s by agent-7", it, ses.ID)
			}
		}
		if want := []string{client.ToolRead, client.ToolWrite, client.ToolExec}; !slices.Equal(gotTools, want) {
			t.Errorf("history tools = %v, want newest first %v", gotTools, want)
		}
		if want := []string{rd.Commit, wr.Commit, ex.Commit}; !slices.Equal(gotCommits, want) {
			t.Errorf("history commits = %v, want %v", gotCommits, want)
		}
		if len(h.Items) == 3 && !strings.Contains(string(h.Items[1].Arguments), `"content_bytes":13`) {
			t.Errorf("write's recorded arguments %s lack the content size", h.Items[1].Arguments)
		}

		d, err := api.SessionDiff(ctx, ses.ID, client.DiffOptions{Commit: wr.Commit})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Files) != 1 || d.Files[0].Path != "src/b.py" || d.Files[0].Change != "added" || !strings.Contains(d.Patch, "+print('bee')") {
			t.Errorf("diff of the write = %+v", d)
		}

		rs, err := api.RestoreSession(ctx, ses.ID, ex.Commit)
		if err != nil {
			t.Fatal(err)
		}
		if rs.RestoredFrom != ex.Commit || !slices.Contains(rs.Changed, protocol.StateChange{Path: "src/b.py", Change: "deleted"}) {
			t.Errorf("restore = %+v; want src/b.py deleted", rs)
		}
		if _, err := api.StatFile(ctx, ws.ID, "src/b.py"); !errs.Is(err, errs.NotFound) {
			t.Errorf("src/b.py after the restore: %v, want not found", err)
		}
		if got, err := api.ReadFile(ctx, ws.ID, "a.txt"); err != nil || string(got) != "one\n" {
			t.Errorf("a.txt after the restore = %q, %v", got, err)
		}
		h, err = api.SessionHistory(ctx, ses.ID, false)
		if err != nil || len(h.Items) != 4 || h.Items[0].Tool != "restore" || h.Items[0].Commit != rs.Commit {
			t.Errorf("history after the restore = %+v, %v; want the restore first", h, err)
		}

		// .state is on the volume, beside the files.
		res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: ws.ID, Command: []string{"ls", "-a"}})
		if err != nil || !slices.Contains(strings.Fields(res.Stdout), ".state") {
			t.Errorf("ls -a = %+v, %v; want .state", res, err)
		}
		info := r.oneSandbox(t, ws.ID)
		var onVolume bool
		for _, m := range info.Mounts {
			if m.Type == "volume" && m.Destination == "/workspace" {
				onVolume = true
			}
		}
		if !onVolume {
			t.Errorf("mounts %+v: the workspace is not a volume", info.Mounts)
		}
		r.deleteGone(t, ws.ID)
	})
}
