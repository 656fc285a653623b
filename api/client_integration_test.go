package api

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/mocks"

	apiclient "github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// TestTypedClientAgainstServer drives the pool and session tool routes
// through api/client, so the client's shapes are checked against the real
// handlers rather than a fake.
func TestTypedClientAgainstServer(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	c := apiclient.New(h.url, apiclient.WithHTTPClient(h.http()), apiclient.WithToken(h.adminKey))

	// Pools: validation errors keep their kind and field.
	_, err := c.CreatePool(ctx, wire.PoolSpec{ID: "p", TemplateID: "default", Size: 101})
	if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "size" {
		t.Fatalf("create pool with size 101: %v (field %q)", err, errs.FieldOf(err))
	}
	h.pool("p", 1)
	idle := h.member("p", wire.PhaseRunning, wire.PoolIdle)
	h.temporal.On("SignalWithStartWorkflow", mock.Anything, workflows.PoolWorkflowID("p"), workflows.SignalPoolChanged,
		mock.Anything, mock.Anything, workflows.PoolWorkflowName, mock.Anything).Return(&mocks.WorkflowRun{}, nil)
	lease, err := c.LeasePool(ctx, "p", wire.LeaseRequest{})
	if err != nil || lease.Source != apiclient.LeaseWarm || lease.Workspace.ID != idle.ID {
		t.Fatalf("lease = %+v, %v", lease, err)
	}
	p, err := c.GetPool(ctx, "p")
	if err != nil || p.Status.Leased != 1 || p.Size != 1 {
		t.Fatalf("pool = %+v, %v", p, err)
	}
	plain := h.workspace(wire.PhaseRunning)
	if _, err := c.ReturnWorkspace(ctx, plain.ID); !errs.Is(err, errs.Precondition) {
		t.Fatalf("return of a plain workspace: %v", err)
	}
	if _, err := c.RecoverWorkspace(ctx, plain.ID); !errs.Is(err, errs.Precondition) {
		t.Fatalf("recover of a running workspace: %v", err)
	}

	// Session tools through the client.
	w, _ := h.runningWorkspace()
	ses, err := c.CreateSession(ctx, wire.CreateSessionRequest{WorkspaceID: w.ID, Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	bin := []byte{0, 1, 0xff, 'x'}
	wr, err := c.ToolWrite(ctx, ses.ID, "data/bin", bin, 0o600)
	if err != nil || wr.Size != int64(len(bin)) || len(wr.Commit) != 40 {
		t.Fatalf("write = %+v, %v", wr, err)
	}
	rd, err := c.ToolRead(ctx, ses.ID, "data/bin")
	if err != nil || !bytes.Equal(rd.Content, bin) {
		t.Fatalf("read = %+v, %v", rd, err)
	}
	ex, err := c.ToolExec(ctx, ses.ID, apiclient.ToolExecRequest{Args: []string{"sh", "-c", "echo hi > x; exit 4"}, Timeout: 5 * time.Second})
	if err != nil || ex.ExitCode != 4 || len(ex.Commit) != 40 {
		t.Fatalf("exec = %+v, %v", ex, err)
	}
	hist, err := c.SessionHistory(ctx, ses.ID, false)
	if err != nil || len(hist.Items) != 3 || hist.Items[0].Commit != ex.Commit {
		t.Fatalf("history = %+v, %v", hist, err)
	}
	d, err := c.SessionDiff(ctx, ses.ID, apiclient.DiffOptions{Commit: ex.Commit})
	if err != nil || len(d.Files) != 1 || d.Files[0].Path != "x" {
		t.Fatalf("diff = %+v, %v", d, err)
	}
	rs, err := c.RestoreSession(ctx, ses.ID, wr.Commit)
	if err != nil || rs.RestoredFrom != wr.Commit || len(rs.Changed) != 1 || rs.Changed[0].Change != "deleted" {
		t.Fatalf("restore = %+v, %v", rs, err)
	}
	if err := c.CallTool(ctx, ses.ID, "workspace__nope", nil, nil); !errs.Is(err, errs.NotFound) {
		t.Fatalf("unknown tool: %v", err)
	}
}
