package api

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/mocks"

	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// openAs opens a stream at path with key and returns its response (the
// caller checks the status) and the function that closes it.
func (h *harness) openAs(t *testing.T, key, path string) (*http.Response, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", h.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", path, err)
	}
	closeIt := func() { cancel(); res.Body.Close() }
	t.Cleanup(closeIt)
	return res, closeIt
}

// waitCount waits until what is open under name in f is want.
func waitCount(t *testing.T, f *inflight, name string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.count(name) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%q: %d open, want %d", name, f.count(name), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStreamCaps checks every streaming endpoint counts against the caps
// of its key and its tenant: past a cap it is 429 naming the cap, with
// Retry-After; the streams already open keep working; a stream's place is
// freed when its client leaves, and when the stream ends by itself.
func TestStreamCaps(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxStreamsPerKey = 2; c.MaxStreamsPerTenant = 3 })
	member := h.newKey(wire.DefaultTenantID, wire.RoleMember)
	other := h.newKey(wire.DefaultTenantID, wire.RoleMember)
	if err := h.store.CreateTenant(context.Background(), &wire.Tenant{ID: "other-team"}); err != nil {
		t.Fatal(err)
	}
	stranger := h.newKey("other-team", wire.RoleMember)
	memberID := "key\x00" + keyIDOf(t, member)

	// One of each stream to follow: a workspace's events, a run's
	// progress, a session's transcript, the tenant's events.
	ws := h.workspace(wire.PhaseRunning)
	h.do("POST", "/v1/suites", suiteJSON("s", 1, "")).expect(t, 201)
	h.expectRunStarts(1, nil)
	run := h.startRun(t, "s", nil)
	agentFixture(t, h)
	h.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.SessionRunWorkflowName, mock.Anything).
		Return(&mocks.WorkflowRun{}, nil).Once()
	var ses wire.Session
	h.do("POST", "/v1/sessions", `{"workspace_id":"`+ws.ID+`","agent":"code-runner","instructions":"go"}`).expect(t, 201).decode(t, &ses)
	streams := []string{
		"/v1/workspaces/" + ws.ID + "/events?follow=true",
		"/v1/runs/" + run.ID + "/events",
		"/v1/sessions/" + ses.ID + "/transcript?follow=true",
		"/v1/events?follow=true",
	}

	// The member's key holds its two streams.
	first, closeFirst := h.openAs(t, member, "/v1/events?follow=true")
	second, _ := h.openAs(t, member, "/v1/workspaces/"+ws.ID+"/events?follow=true")
	for _, r := range []*http.Response{first, second} {
		if r.StatusCode != 200 {
			t.Fatalf("stream under the cap: status %d", r.StatusCode)
		}
	}
	for _, path := range streams {
		t.Run("key cap "+path, func(t *testing.T) {
			r := h.do("GET", path, nil, append(bearer(member), "Accept", "text/event-stream")...)
			r.expectError(t, 429, "resource_exhausted", "", "has 2 open streams, the cap for one key")
			if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
				t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
			}
		})
	}
	// Listing is not streaming: not capped.
	h.do("GET", "/v1/events", nil, bearer(member)...).expect(t, 200)

	// The streams already open still deliver.
	h.appendEvent(t, ws.ID, wire.EventPhaseChanged, `{"from":"running","to":"failed"}`)
	secondCh := sseReader(t, second)
	for i, ch := range []<-chan sseMessage{sseReader(t, first), secondCh} {
		for m := next(t, ch); m.event != wire.EventPhaseChanged; m = next(t, ch) {
			if m.event != "comment" {
				t.Fatalf("stream %d: event %+v", i, m)
			}
		}
	}

	// Another key of the tenant has one place left, then the tenant cap.
	_, closeOther := h.openAs(t, other, "/v1/events?follow=true")
	for _, path := range streams {
		r := h.do("GET", path, nil, append(bearer(other), "Accept", "text/event-stream")...)
		r.expectError(t, 429, "resource_exhausted", "", "tenant default has 3 open streams, the cap for one tenant")
	}
	// Another tenant is not held by this one's streams.
	if r, _ := h.openAs(t, stranger, "/v1/events?follow=true"); r.StatusCode != 200 {
		t.Fatalf("another tenant's stream: status %d", r.StatusCode)
	}

	// A client that leaves frees its place, for the key and the tenant.
	closeFirst()
	closeOther()
	waitCount(t, h.srv.streams, memberID, 1)
	waitCount(t, h.srv.streams, "tenant\x00"+wire.DefaultTenantID, 1)
	again, _ := h.openAs(t, member, "/v1/runs/"+run.ID+"/events")
	if again.StatusCode != 200 {
		t.Fatalf("stream after one closed: status %d", again.StatusCode)
	}
	waitCount(t, h.srv.streams, memberID, 2)

	// A stream that ends by itself (its workspace destroyed) frees its
	// place too.
	h.appendEvent(t, ws.ID, wire.EventDestroyed, `{}`)
	for range secondCh {
		// to its end
	}
	waitCount(t, h.srv.streams, memberID, 1)
}

func TestInflight(t *testing.T) {
	f := newInflight()
	names := []string{"key\x00a", "tenant\x00t"}
	caps := []int{2, 3}
	for i, want := range []int{-1, -1, 0} {
		if got := f.take(names, caps); got != want {
			t.Fatalf("take %d = %d, want %d", i, got, want)
		}
	}
	// A refused take counts nothing.
	if f.count("tenant\x00t") != 2 {
		t.Fatalf("tenant count %d after a refused take, want 2", f.count("tenant\x00t"))
	}
	if got := f.take([]string{"key\x00b", "tenant\x00t"}, caps); got != -1 {
		t.Fatalf("other key = %d, want -1", got)
	}
	if got := f.take([]string{"key\x00c", "tenant\x00t"}, caps); got != 1 {
		t.Fatalf("past the tenant cap = %d, want 1", got)
	}
	// An empty name is never counted nor capped.
	if got := f.take([]string{"", "tenant\x00u"}, []int{0, 1}); got != -1 {
		t.Fatalf("empty name = %d, want -1", got)
	}
	f.give(names)
	f.give(names)
	f.give([]string{"key\x00b", "tenant\x00t"})
	f.give([]string{"", "tenant\x00u"})
	if len(f.n) != 0 {
		t.Fatalf("after every give: %v, want nothing held", f.n)
	}
}
