package e2e

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/starter"
	"github.com/primerhq/primer/worker/temporalserver"
	"github.com/primerhq/primer/workflows"
)

// scheduleTemporal starts an embedded Temporal server (or dials
// PRIMER_TEMPORAL_ADDRESS) and returns a client of it.
func scheduleTemporal(t *testing.T, ctx context.Context) client.Client {
	t.Helper()
	addr := os.Getenv("PRIMER_TEMPORAL_ADDRESS")
	if addr == "" {
		var srv *temporalserver.Server
		var err error
		// A port is picked right before the server starts, again if it was
		// taken in between.
		for try := 0; try < 3; try++ {
			l, lerr := net.Listen("tcp", "127.0.0.1:0")
			if lerr != nil {
				t.Fatal(lerr)
			}
			port := l.Addr().(*net.TCPAddr).Port
			l.Close()
			srv, err = temporalserver.Start(ctx, temporalserver.Config{
				DataDir: t.TempDir(), Port: port, UIPort: temporalserver.UIDisabled,
				SearchAttributes: workflows.SearchAttributes(),
			})
			if err == nil || !strings.Contains(err.Error(), "address already in use") {
				break
			}
		}
		if err != nil {
			t.Fatalf("start temporal: %v", err)
		}
		t.Cleanup(func() { _ = srv.Stop() })
		addr = srv.FrontendAddress()
	}
	c, err := client.Dial(client.Options{
		HostPort:  addr,
		Namespace: temporalserver.DefaultNamespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestSuiteSchedule (starter.Starter's schedule methods) drives a suite's schedule through its life on a real
// Temporal server: created from a cron document, updated to an interval
// and paused, resumed, paused again, triggered, described, and deleted.
func TestSuiteSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server (10-30 s); run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := scheduleTemporal(t, ctx)
	s := &starter.Starter{Temporal: c}
	const suite = "nightly"
	handle := c.ScheduleClient().GetHandle(ctx, starter.ScheduleID(suite))
	describe := func() *client.ScheduleDescription {
		t.Helper()
		d, err := handle.Describe(ctx)
		if err != nil {
			t.Fatalf("describe: %v", err)
		}
		return d
	}

	// No schedule yet: every operation on it says so.
	if _, err := s.DescribeSchedule(ctx, suite); !errs.Is(err, errs.Precondition) || !strings.Contains(err.Error(), "suite nightly has no schedule") {
		t.Fatalf("describe before create: %v", err)
	}
	if err := s.TriggerSchedule(ctx, suite); !errs.Is(err, errs.Precondition) {
		t.Fatalf("trigger before create: %v", err)
	}
	if err := s.DeleteSchedule(ctx, suite); err != nil {
		t.Fatalf("delete of a missing schedule: %v", err)
	}

	// Created from a cron in a time zone.
	if err := s.SyncSchedule(ctx, suite, &eval.Schedule{Cron: "0 3 * * *", TimeZone: "Europe/Berlin", Overlap: eval.OverlapBufferOne}); err != nil {
		t.Fatalf("create: %v", err)
	}
	d := describe()
	if d.Schedule.Spec.TimeZoneName != "Europe/Berlin" || d.Schedule.Policy.Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE || d.Schedule.State.Paused {
		t.Fatalf("created schedule: spec %+v policy %+v state %+v", d.Schedule.Spec, d.Schedule.Policy, d.Schedule.State)
	}
	act, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || act.ID != "run-nightly" || act.TaskQueue != workflows.TaskQueue || len(act.Args) != 1 {
		t.Fatalf("action = %#v", d.Schedule.Action)
	}
	if name, _ := act.Workflow.(string); name != workflows.RunWorkflowName {
		t.Fatalf("action workflow = %v", act.Workflow)
	}
	var in workflows.RunInput
	if err := converter.GetDefaultDataConverter().FromPayload(act.Args[0].(*commonpb.Payload), &in); err != nil {
		t.Fatalf("decode action args: %v", err)
	}
	if in != (workflows.RunInput{SuiteID: suite, TriggeredBy: "schedule suite-nightly"}) {
		t.Fatalf("action input = %+v", in)
	}
	st, err := s.DescribeSchedule(ctx, suite)
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if st.ID != "suite-nightly" || st.Paused || len(st.NextRunTimes) == 0 {
		t.Fatalf("status = %+v", st)
	}
	if next := st.NextRunTimes[0].In(berlin); next.Hour() != 3 || next.Minute() != 0 {
		t.Fatalf("next run %s, want 03:00 Berlin", next)
	}

	// Updated in place: an interval, overlap skip (the default), paused.
	if err := s.SyncSchedule(ctx, suite, &eval.Schedule{Interval: eval.Duration(time.Hour), Paused: true}); err != nil {
		t.Fatalf("update: %v", err)
	}
	d = describe()
	if len(d.Schedule.Spec.Intervals) != 1 || d.Schedule.Spec.Intervals[0].Every != time.Hour || len(d.Schedule.Spec.Calendars) != 0 ||
		d.Schedule.Policy.Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_SKIP || !d.Schedule.State.Paused {
		t.Fatalf("updated schedule: spec %+v policy %+v state %+v", d.Schedule.Spec, d.Schedule.Policy, d.Schedule.State)
	}

	// Resume, pause with a note.
	if err := s.ResumeSchedule(ctx, suite, "resumed by test"); err != nil {
		t.Fatal(err)
	}
	if st, err = s.DescribeSchedule(ctx, suite); err != nil || st.Paused || len(st.NextRunTimes) == 0 {
		t.Fatalf("after resume: %+v, %v", st, err)
	}
	if err := s.PauseSchedule(ctx, suite, "paused by test"); err != nil {
		t.Fatal(err)
	}
	if st, err = s.DescribeSchedule(ctx, suite); err != nil || !st.Paused || st.Note != "paused by test" || len(st.NextRunTimes) != 0 {
		t.Fatalf("after pause: %+v, %v", st, err)
	}

	// Trigger starts a run now even while paused; no worker needs to run it.
	if err := s.TriggerSchedule(ctx, suite); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err = s.DescribeSchedule(ctx, suite)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.RecentRuns) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run recorded after trigger: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	wid := st.RecentRuns[0].WorkflowID
	if !strings.HasPrefix(wid, "run-nightly-") || st.NumActions != 1 {
		t.Fatalf("triggered run: %+v", st)
	}
	wd, err := c.DescribeWorkflowExecution(ctx, wid, "")
	if err != nil {
		t.Fatalf("describe triggered workflow %s: %v", wid, err)
	}
	if got := wd.GetWorkflowExecutionInfo().GetType().GetName(); got != workflows.RunWorkflowName {
		t.Fatalf("triggered workflow type %q", got)
	}
	_ = c.TerminateWorkflow(ctx, wid, "", "test done")

	// A spec Temporal refuses is bad input naming the field.
	if err := s.SyncSchedule(ctx, "bad", &eval.Schedule{Cron: "61 * * * *"}); !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "spec.schedule" {
		t.Fatalf("bad cron: %v", err)
	}

	// Deleted: gone from Temporal, and deleting again is fine.
	if err := s.DeleteSchedule(ctx, suite); err != nil {
		t.Fatal(err)
	}
	if _, err := handle.Describe(ctx); !errors.As(err, new(*serviceerror.NotFound)) {
		t.Fatalf("describe after delete: %v", err)
	}
	if err := s.PauseSchedule(ctx, suite, ""); !errs.Is(err, errs.Precondition) {
		t.Fatalf("pause after delete: %v", err)
	}
	if err := s.DeleteSchedule(ctx, suite); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}
