package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// TestEvalPoolResetRestoresSandbox is the repro, on Docker and
// Podman: an eval
// suite on a pool of 2 whose every case writes /tmp/mark-<case> and lists
// /tmp/mark-*. Before a reset restored the sandbox, most cases saw an
// earlier case's mark (13 of 16 in one run); now every case sees its own
// only, the pool's two members served all of them (reset, not replaced),
// and once returned to the pool they hold no mark and answer exec.
func TestEvalPoolResetRestoresSandbox(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		p := startPrimer(t, withContainers(t), withProbeInterval(workflows.DefaultProbeInterval))
		eng := containertest.Backend(t, e)
		containerTemplate(t, p, e, "marks", `{"kind":"container","image":"`+containertest.BusyboxImage+`"}`)
		evalPoolResetRestoresSandbox(t, p, 16, func(id string) []string { return containertest.Objects(t, eng, id) })
	})
}

// TestEvalPoolResetRestoresSandboxKubernetes is the same repro on
// Kubernetes, whose reset makes the pod again from its image.
func TestEvalPoolResetRestoresSandboxKubernetes(t *testing.T) {
	p := startPrimer(t, withContainers(t), withProbeInterval(workflows.DefaultProbeInterval))
	k := kubeProvider(t, p, "k8s", kubernetes.ReachPodIP)
	k.template(t, p, "marks", `{"kind":"kubernetes","image":"`+kubernetestest.BusyboxImage+`","memory_limit":"128Mi","pvc_size":"16Mi"}`)
	evalPoolResetRestoresSandbox(t, p, 8, func(id string) []string {
		objs, err := k.b.Objects(ctxT(t, 30*time.Second), id)
		if err != nil {
			t.Errorf("objects of %s: %v", id, err)
		}
		return objs
	})
}

// evalPoolResetRestoresSandbox runs the repro's suite of cases on a pool
// of template "marks"; left lists what the engine holds of a workspace.
func evalPoolResetRestoresSandbox(t *testing.T, p *primer, cases int, left func(id string) []string) {
	ctx := ctxT(t, 10*time.Minute)
	const size = 2
	if _, err := p.api.CreatePool(ctx, wire.PoolSpec{ID: "marks-pool", TemplateID: "marks", Size: size}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		ws, _ := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{TemplateID: "marks"})
		_, _ = p.api.DeletePool(ctx, "marks-pool")
		eventually(t, 2*time.Minute, "the pool's workspaces deleted", func() bool {
			rest, err := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{TemplateID: "marks"})
			return err == nil && len(rest) == 0
		})
		for _, w := range ws {
			if objs := left(w.ID); len(objs) > 0 {
				t.Errorf("engine objects left of workspace %s: %v", w.ID, objs)
			}
		}
	})
	idle := func() bool {
		pl, err := p.api.GetPool(ctx, "marks-pool")
		return err == nil && pl.Status.Idle == size
	}
	eventually(t, 3*time.Minute, "2 idle members", idle)
	members, err := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{TemplateID: "marks"})
	if err != nil || len(members) != size {
		t.Fatalf("pool members = %d, %v; want %d", len(members), err, size)
	}

	spec := eval.SuiteSpec{ID: "marks", PoolID: "marks-pool", Concurrency: size}
	for i := range cases {
		id := fmt.Sprintf("c%02d", i)
		// The case fails when it sees any mark but its own.
		spec.Cases = append(spec.Cases, eval.Case{ID: id, Command: script(
			`touch /tmp/mark-` + id + `; ls /tmp/mark-*; test "$(ls /tmp/mark-* | wc -l)" -eq 1`)})
	}
	if _, err := p.api.CreateSuite(ctx, spec); err != nil {
		t.Fatal(err)
	}
	run, err := p.api.CreateRun(ctx, spec.ID, wire.RunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	done := waitRun(t, p.api, run.ID, 5*time.Minute)
	res := resultsByCase(t, p.api, run.ID)
	var saw []string
	used := map[string]bool{}
	for id, r := range res {
		if r.Verdict != eval.VerdictPass {
			saw = append(saw, fmt.Sprintf("%s: %s %q", id, r.Verdict, strings.TrimSpace(r.Stdout)))
		}
		for _, at := range attemptsOf(t, r) {
			used[at.WorkspaceID] = true
		}
	}
	slices.Sort(saw)
	if done.Progress.Pass != cases {
		t.Errorf("run = %s %+v; want %d passes; cases that saw another's mark:\n%s", done.Status, done.Progress, cases, strings.Join(saw, "\n"))
	}
	for id := range used {
		if !slices.ContainsFunc(members, func(w wire.Workspace) bool { return w.ID == id }) {
			t.Errorf("a case ran on %s, not one of the pool's members %v: a reset replaced a member", id, members)
		}
	}

	// Returned to the pool (reset again), each member holds no mark and
	// its workflow's handle still reaches it.
	eventually(t, 2*time.Minute, "the pool idle again", idle)
	for _, w := range members {
		out, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: w.ID, Command: []string{"sh", "-c", "ls /tmp/mark-* 2>/dev/null; true"}})
		if err != nil {
			t.Fatalf("exec on member %s after the run: %v", w.ID, err)
		}
		if got := strings.TrimSpace(string(out.Stdout)); got != "" {
			t.Errorf("member %s after its return to the pool holds %q; want no mark", w.ID, got)
		}
		ws, err := p.api.GetWorkspace(ctx, w.ID)
		if err != nil || ws.Phase != wire.PhaseRunning {
			t.Errorf("member %s after the run = %+v, %v; want running", w.ID, ws, err)
		}
	}
}
