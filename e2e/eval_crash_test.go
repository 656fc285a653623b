package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

// TestEvalCrash kills `primer serve` with SIGKILL at about half of a run
// and starts it again: the run finishes with exactly one final result per
// case, no case lost, and no case that had finished before the kill
// executed again. Every case's command appends a line to a file of its own
// outside the workspace (the local backend runs on the host), so the
// executions are counted by the host, not by Primer.
func TestEvalCrash(t *testing.T) {
	s := startServe(t)
	ctx := ctxT(t, 6*time.Minute)
	counts := t.TempDir()
	const n, concurrency = 24, 4
	spec := eval.SuiteSpec{ID: "crash", TemplateID: wire.DefaultTemplateID, Concurrency: concurrency}
	for i := range n {
		id := fmt.Sprintf("c%02d", i)
		spec.Cases = append(spec.Cases, eval.Case{ID: id,
			Command: script(fmt.Sprintf("echo x >> %s; sleep 0.5", filepath.Join(counts, id)))})
	}
	if _, err := s.api.CreateSuite(ctx, spec); err != nil {
		t.Fatal(err)
	}
	run, err := s.api.CreateRun(ctx, "crash", wire.RunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "half of the cases done", func() bool {
		r, err := s.api.GetRun(ctx, run.ID)
		return err == nil && r.Progress.Pass >= n/2
	})
	s.kill()
	killedAt := time.Now()
	s.restart()

	done := waitRun(t, s.api, run.ID, 4*time.Minute)
	if done.Status != wire.RunSucceeded || done.Progress.Pass != n || done.Progress.Total != n {
		t.Fatalf("run after the crash = %s %+v; want succeeded with %d passes", done.Status, done.Progress, n)
	}
	results, err := s.api.RunResults(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != n {
		t.Fatalf("%d results, want %d", len(results), n)
	}
	finishedBefore, again := 0, 0
	for _, r := range results {
		data, err := os.ReadFile(filepath.Join(counts, r.CaseID))
		if err != nil {
			t.Errorf("case %s never executed: %v", r.CaseID, err)
			continue
		}
		execs := strings.Count(string(data), "x\n")
		var attempts []eval.Attempt
		_ = json.Unmarshal(r.Attempts, &attempts)
		if r.Status != wire.CaseDone || r.Verdict != eval.VerdictPass || len(attempts) != 1 {
			t.Errorf("case %s = %s %s, attempts %s; want one passing final result", r.CaseID, r.Status, r.Verdict, r.Attempts)
		}
		switch {
		case r.EndedAt != nil && r.EndedAt.Before(killedAt):
			finishedBefore++
			if execs != 1 {
				t.Errorf("case %s finished before the kill and was executed %d times", r.CaseID, execs)
			}
		case execs > 2:
			t.Errorf("case %s executed %d times; at most once before and once after the kill", r.CaseID, execs)
		case execs == 2:
			again++
		}
	}
	if finishedBefore < n/2 {
		t.Errorf("%d cases finished before the kill; want at least %d", finishedBefore, n/2)
	}
	if again > concurrency {
		t.Errorf("%d cases executed again; only the %d in flight at the kill may be", again, concurrency)
	}
	t.Logf("%d cases finished before the kill, %d in flight were executed again", finishedBefore, again)
	noWorkspaceLeft(t, s.api, run.ID)
}
