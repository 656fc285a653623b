package models

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/wire"
)

// wakeBound is how soon a wake-up must arrive: well under EventSafetyPoll,
// so a test passing on the watchdog alone is caught.
const wakeBound = time.Second

func woken(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(wakeBound):
		return false
	}
}

// TestEventWakeInProcess: on every dialect an appended event wakes the
// waiters of its workspace, its tenant and of every event, and not those
// of another workspace; a deleted row wakes its workspace's waiters.
func TestEventWakeInProcess(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			ctx := t.Context()
			s := d.open(t)
			// The listener's first connection wakes every waiter once.
			must(t, s.WaitListening(ctx))
			a, b := newWorkspace("t", "p"), newWorkspace("t", "p")
			must(t, s.CreateWorkspace(ctx, a))
			must(t, s.CreateWorkspace(ctx, b))
			wa, wb := s.WaitWorkspaceEvents(a.ID), s.WaitWorkspaceEvents(b.ID)
			wt, wall := s.WaitTenantEvents(a.TenantID), s.WaitTenantEvents("")
			must(t, s.AppendEvent(ctx, &wire.Event{WorkspaceID: a.ID, Type: wire.EventPhaseChanged, Data: json.RawMessage(`{}`)}))
			for name, ch := range map[string]<-chan struct{}{"workspace": wa, "tenant": wt, "all": wall} {
				if !woken(ch) {
					t.Errorf("the %s waiter was not woken within %s", name, wakeBound)
				}
			}
			select {
			case <-wb:
				t.Error("another workspace's waiter was woken")
			default:
			}
			must(t, s.DeleteWorkspace(ctx, b.ID))
			if !woken(wb) {
				t.Errorf("deleting the row did not wake its waiter within %s", wakeBound)
			}
		})
	}
}

// TestEventWakeAcrossStores is two processes on one PostgreSQL: an event
// appended through one store wakes a waiter of the other (NOTIFY, LISTEN)
// well before the watchdog would, and a deleted row does too.
func TestEventWakeAcrossStores(t *testing.T) {
	url := testenv.PostgresURL(t)
	open := func() *Store {
		s, err := Open(t.Context(), Config{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	writer, watcher := open(), open()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	must(t, watcher.WaitListening(ctx))
	w := newWorkspace("t", "p")
	must(t, writer.CreateWorkspace(ctx, w))

	for i := range 3 {
		ch, all := watcher.WaitWorkspaceEvents(w.ID), watcher.WaitTenantEvents("")
		e := &wire.Event{WorkspaceID: w.ID, Type: wire.EventPhaseChanged, Data: json.RawMessage(`{}`)}
		must(t, writer.AppendEvent(ctx, e))
		if !woken(ch) || !woken(all) {
			t.Fatalf("event %d appended by the other store: no wake-up within %s", i, wakeBound)
		}
		got, err := watcher.ListEvents(ctx, w.ID, e.ID-1, 0)
		if err != nil || len(got) != 1 || got[0].ID != e.ID {
			t.Fatalf("woken, the watcher reads %+v (%v), want event %d", got, err, e.ID)
		}
	}
	ch := watcher.WaitWorkspaceEvents(w.ID)
	must(t, writer.DeleteWorkspace(ctx, w.ID))
	if !woken(ch) {
		t.Fatalf("row deleted by the other store: no wake-up within %s", wakeBound)
	}

	// A run's and a transcript's writes wake their streams the same way.
	run, ses, other := watcher.WaitRun("run-1"), watcher.WaitTranscript("ses-1"), watcher.WaitRun("run-2")
	writer.signal(ctx, runTopic("run-1"))
	writer.signal(ctx, sessionTopic("ses-1"))
	if !woken(run) || !woken(ses) {
		t.Fatalf("run or transcript signalled by the other store: no wake-up within %s", wakeBound)
	}
	select {
	case <-other:
		t.Error("another run's waiter was woken")
	default:
	}
}
