package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// sseMessage is one parsed Server-Sent Event.
type sseMessage struct {
	id, event, data string
}

// sseReader reads messages from a stream in a goroutine, so a test can wait
// with a deadline.
func sseReader(t *testing.T, res *http.Response) <-chan sseMessage {
	t.Helper()
	ch := make(chan sseMessage, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(res.Body)
		var m sseMessage
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if m != (sseMessage{}) {
					ch <- m
				}
				m = sseMessage{}
			case strings.HasPrefix(line, ":"):
				ch <- sseMessage{event: "comment"}
			case strings.HasPrefix(line, "id: "):
				m.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				m.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				m.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan sseMessage) sseMessage {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("stream ended")
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return sseMessage{}
}

func (h *harness) follow(t *testing.T, path string, header ...string) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", h.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+h.adminKey)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("follow: status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return res, cancel
}

func (h *harness) appendEvent(t *testing.T, wsID, typ string, data string) uint64 {
	t.Helper()
	e := &wire.Event{WorkspaceID: wsID, Type: typ, Data: json.RawMessage(data)}
	if err := h.store.AppendEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e.ID
}

func TestEventsList(t *testing.T) {
	h := newHarness(t)
	w := h.workspace(wire.PhasePending)
	first := h.appendEvent(t, w.ID, wire.EventProvisioned, `{"workspace_type":"local","workspace_path":"/x"}`)
	h.appendEvent(t, w.ID, wire.EventPhaseChanged, `{"from":"pending","to":"running","reason":""}`)

	var got wire.Items[wire.Event]
	h.do("GET", "/v1/workspaces/"+w.ID+"/events", nil).expect(t, 200).decode(t, &got)
	if len(got.Items) != 2 || got.Items[0].Type != wire.EventProvisioned || got.Items[1].Type != wire.EventPhaseChanged {
		t.Fatalf("events = %+v", got.Items)
	}
	h.do("GET", "/v1/workspaces/"+w.ID+"/events?after="+strconv.FormatUint(first, 10), nil).expect(t, 200).decode(t, &got)
	if len(got.Items) != 1 || got.Items[0].Type != wire.EventPhaseChanged {
		t.Fatalf("events after %d = %+v", first, got.Items)
	}
	h.do("GET", "/v1/workspaces/"+w.ID+"/events?after=x", nil).expectError(t, 400, "invalid", "after", "")

	// Events outlive the row: a destroyed workspace's history stays readable.
	h.appendEvent(t, w.ID, wire.EventDestroyed, `{"workspace_type":"local","workspace_path":"/x"}`)
	if err := h.store.DeleteWorkspace(context.Background(), w.ID); err != nil {
		t.Fatal(err)
	}
	h.do("GET", "/v1/workspaces/"+w.ID, nil).expectError(t, 404, "not_found", "", "")
	h.do("GET", "/v1/workspaces/"+w.ID+"/events", nil).expect(t, 200).decode(t, &got)
	if len(got.Items) != 3 || got.Items[2].Type != wire.EventDestroyed {
		t.Fatalf("events of a destroyed workspace = %+v", got.Items)
	}
}

func TestEventsFollow(t *testing.T) {
	h := newHarness(t)
	w := h.workspace(wire.PhasePending)
	path := "/v1/workspaces/" + w.ID + "/events"
	first := h.appendEvent(t, w.ID, wire.EventProvisioned, `{"workspace_type":"local","workspace_path":"/x"}`)

	// Stored events come first, then new ones as they are appended.
	res, cancel := h.follow(t, path+"?follow=true")
	ch := sseReader(t, res)
	m := next(t, ch)
	if m.id != strconv.FormatUint(first, 10) || m.event != wire.EventProvisioned || !strings.Contains(m.data, `"workspace_path":"/x"`) {
		t.Fatalf("first message = %+v", m)
	}
	second := h.appendEvent(t, w.ID, wire.EventPhaseChanged, `{"from":"pending","to":"running","reason":""}`)
	m = next(t, ch)
	if m.id != strconv.FormatUint(second, 10) || m.event != wire.EventPhaseChanged {
		t.Fatalf("appended message = %+v", m)
	}
	var e wire.Event
	if err := json.Unmarshal([]byte(m.data), &e); err != nil || e.WorkspaceID != w.ID || e.ID != second {
		t.Fatalf("data %q: %+v %v", m.data, e, err)
	}
	cancel()

	// Resuming with Last-Event-ID (and the Accept header instead of
	// ?follow) skips what the client already saw.
	third := h.appendEvent(t, w.ID, wire.EventPhaseChanged, `{"from":"running","to":"terminating","reason":"deleted by user"}`)
	res, _ = h.follow(t, path, "Accept", "text/event-stream", "Last-Event-ID", strconv.FormatUint(second, 10))
	ch = sseReader(t, res)
	if m := next(t, ch); m.id != strconv.FormatUint(third, 10) {
		t.Fatalf("resumed at %+v, want id %d", m, third)
	}

	// workspace.destroyed ends the stream.
	h.appendEvent(t, w.ID, wire.EventDestroyed, `{"workspace_type":"local","workspace_path":"/x"}`)
	if m := next(t, ch); m.event != wire.EventDestroyed {
		t.Fatalf("message = %+v, want destroyed", m)
	}
	select {
	case m, ok := <-ch:
		if ok {
			t.Fatalf("message after destroyed: %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end after workspace.destroyed")
	}
}

func TestEventsFollowHeartbeatAndGone(t *testing.T) {
	h := newHarness(t)
	h.srv.heartbeat = 50 * time.Millisecond
	w := h.workspace(wire.PhaseRunning)
	res, _ := h.follow(t, "/v1/workspaces/"+w.ID+"/events?follow=true")
	ch := sseReader(t, res)
	if m := next(t, ch); m.event != "comment" {
		t.Fatalf("idle stream sent %+v, want a heartbeat comment", m)
	}
	// A workspace removed without a destroyed event still ends the stream.
	if err := h.store.DeleteWorkspace(context.Background(), w.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("stream did not end after the workspace went away")
		}
	}
}

// TestEventsFollowWakesWithoutPolling: with the poll interval set to an
// hour, an appended event still reaches a workspace's stream and a
// tenant's stream at once: the store wakes them. On the polling code the
// event waited for the next poll.
func TestEventsFollowWakesWithoutPolling(t *testing.T) {
	h := newHarness(t)
	h.srv.eventPoll = time.Hour
	h.srv.heartbeat = time.Hour
	w := h.workspace(wire.PhaseRunning)
	ws := sseReader(t, first(h.follow(t, "/v1/workspaces/"+w.ID+"/events?follow=true")))
	tenant := sseReader(t, first(h.follow(t, "/v1/events?follow=true")))
	for i := range 3 {
		id := strconv.FormatUint(h.appendEvent(t, w.ID, wire.EventPhaseChanged, `{"from":"pending","to":"running","reason":""}`), 10)
		for name, ch := range map[string]<-chan sseMessage{"workspace": ws, "tenant": tenant} {
			select {
			case m := <-ch:
				if m.id != id {
					t.Fatalf("%s stream, event %d: got %+v, want id %s", name, i, m, id)
				}
			case <-time.After(time.Second):
				t.Fatalf("%s stream, event %d: nothing within 1s (the poll interval is an hour)", name, i)
			}
		}
	}
}

func first[A, B any](a A, _ B) A { return a }
