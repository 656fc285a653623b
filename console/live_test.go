package console

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

func TestListUpdate(t *testing.T) {
	ev := func(typ, data string) wire.Event {
		return wire.Event{ID: 9, WorkspaceID: "ws-1", Type: typ, Data: json.RawMessage(data)}
	}
	for _, tc := range []struct {
		name    string
		e       wire.Event
		want    phaseUpdate
		needRow bool
	}{
		{"phase change", ev(wire.EventPhaseChanged, `{"from":"running","to":"failed","reason":"sandbox gone"}`),
			phaseUpdate{ID: "ws-1", Phase: "failed", Reason: "sandbox gone"}, false},
		{"destroyed", ev(wire.EventDestroyed, `{}`), phaseUpdate{ID: "ws-1", Phase: phaseGone}, false},
		{"provisioned reads the row", ev(wire.EventProvisioned, `{}`), phaseUpdate{ID: "ws-1"}, true},
		{"leased reads the row", ev(wire.EventLeased, `{"pool_id":"p"}`), phaseUpdate{ID: "ws-1"}, true},
		{"a phase change without a phase reads the row", ev(wire.EventPhaseChanged, `{}`), phaseUpdate{ID: "ws-1"}, true},
	} {
		u, needRow := listUpdate(tc.e)
		if u != tc.want || needRow != tc.needRow {
			t.Errorf("%s: %+v, %v; want %+v, %v", tc.name, u, needRow, tc.want, tc.needRow)
		}
	}
}

// fakeEventsAPI serves GET /v1/events as a stream of events after the
// cursor, and GET /v1/workspaces/{id} from rows, counting the reads.
type fakeEventsAPI struct {
	events []wire.Event
	rows   map[string]wire.Workspace

	mu     sync.Mutex
	cursor []string // Last-Event-ID of each stream request
	reads  map[string]int
}

func (f *fakeEventsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/events" && r.URL.Query().Get("follow") == "true":
		f.mu.Lock()
		f.cursor = append(f.cursor, r.Header.Get("Last-Event-ID"))
		f.mu.Unlock()
		after, _ := strconv.ParseUint(r.Header.Get("Last-Event-ID"), 10, 64)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range f.events {
			if e.ID > after {
				b, _ := json.Marshal(e)
				fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Type, b)
				w.(http.Flusher).Flush()
			}
		}
		<-r.Context().Done() // a tenant's stream stays open
	case strings.HasPrefix(r.URL.Path, "/v1/workspaces/"):
		id := strings.TrimPrefix(r.URL.Path, "/v1/workspaces/")
		f.mu.Lock()
		f.reads[id]++
		f.mu.Unlock()
		ws, ok := f.rows[id]
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"code":"not_found","message":"workspace %s: not found"}}`, id)
			return
		}
		_ = json.NewEncoder(w).Encode(ws)
	default:
		http.NotFound(w, r)
	}
}

// TestLiveList follows the list's stream through the in-process client: it
// starts after the page's cursor, sends each event as its row update with
// the event's id, and reads a row once per workspace, or when the event
// does not say the phase.
func TestLiveList(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	api := &fakeEventsAPI{
		events: []wire.Event{
			{ID: 5, WorkspaceID: "ws-old", Type: wire.EventPhaseChanged, Data: json.RawMessage(`{"to":"running"}`)},
			{ID: 6, WorkspaceID: "ws-a", Type: wire.EventPhaseChanged, Data: json.RawMessage(`{"from":"running","to":"failed","reason":"sandbox gone"}`)},
			{ID: 7, WorkspaceID: "ws-a", Type: wire.EventPhaseChanged, Data: json.RawMessage(`{"from":"failed","to":"recovering","reason":""}`)},
			{ID: 8, WorkspaceID: "ws-new", Type: wire.EventLeased, Data: json.RawMessage(`{"pool_id":"p1"}`)},
			{ID: 9, WorkspaceID: "ws-a", Type: wire.EventDestroyed, Data: json.RawMessage(`{}`)},
			{ID: 10, WorkspaceID: "ws-vanished", Type: wire.EventPhaseChanged, Data: json.RawMessage(`{"to":"running"}`)},
		},
		rows: map[string]wire.Workspace{
			"ws-a":   {ID: "ws-a", TemplateID: "plain", Backend: "local", Phase: "recovering", CreatedAt: created},
			"ws-new": {ID: "ws-new", TemplateID: "code", Backend: "docker", Phase: "running", Reason: "r", PoolID: "p1", PoolState: "leased", CreatedAt: created},
		},
		reads: map[string]int{},
	}
	c, err := New(Config{API: api, Sessions: testSessions(t)})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{role: wire.RoleViewer, api: c.client("k")}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.liveList(w, r, s) }))
	t.Cleanup(srv.Close) // after the streams' own cleanups close them

	msgs := listStream(t, srv.URL+"/live/workspaces?after=5")
	at := since(created)
	want := []listMsg{
		{"6", phaseUpdate{ID: "ws-a", Phase: "failed", Reason: "sandbox gone", Row: true, Template: "plain", Backend: "local", Created: at}},
		{"7", phaseUpdate{ID: "ws-a", Phase: "recovering"}},
		{"8", phaseUpdate{ID: "ws-new", Phase: "running", Reason: "r", Row: true, Template: "code", Backend: "docker", Pool: "p1 (leased)", Created: at}},
		{"9", phaseUpdate{ID: "ws-a", Phase: phaseGone}},
		{"10", phaseUpdate{ID: "ws-vanished", Phase: phaseGone}},
	}
	expectList(t, msgs, want)
	api.mu.Lock()
	if len(api.cursor) != 1 || api.cursor[0] != "5" {
		t.Errorf("stream requests resumed after %q, want once after 5", api.cursor)
	}
	if api.reads["ws-a"] != 1 || api.reads["ws-new"] != 1 || api.reads["ws-vanished"] != 1 {
		t.Errorf("row reads = %v, want one each", api.reads)
	}
	api.mu.Unlock()

	// A list of one phase drops a workspace that leaves it. The browser
	// reconnecting sends Last-Event-ID, which wins over ?after=.
	msgs = listStream(t, srv.URL+"/live/workspaces?after=1&phase=failed", "Last-Event-ID", "5")
	want[1] = listMsg{"7", phaseUpdate{ID: "ws-a", Phase: phaseGone}}
	want[2].u = phaseUpdate{ID: "ws-new", Phase: phaseGone}
	expectList(t, msgs, want)
}

type listMsg struct {
	id string
	u  phaseUpdate
}

// listStream opens the list's stream and returns its messages.
func listStream(t *testing.T, url string, header ...string) <-chan listMsg {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	msgs := make(chan listMsg, 16)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(res.Body)
		var m listMsg
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				m.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m.u)
			case line == "" && m.id != "":
				msgs <- m
				m = listMsg{}
			}
		}
	}()
	return msgs
}

func expectList(t *testing.T, msgs <-chan listMsg, want []listMsg) {
	t.Helper()
	for i, w := range want {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("stream ended before message %d", i)
			}
			if m != w {
				t.Errorf("message %d = %+v, want %+v", i, m, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no message %d within 10s", i)
		}
	}
}
