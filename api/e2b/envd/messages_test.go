package envd

import (
	"encoding/json"
	"testing"
	"time"
)

func TestMessagesJSON(t *testing.T) {
	ts := func(ns int) *Timestamp {
		v := Timestamp(time.Date(2024, 1, 2, 3, 4, 5, ns, time.FixedZone("x", 3600)))
		return &v
	}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"timestamp whole seconds, UTC", ts(0), `"2024-01-02T02:04:05Z"`},
		{"timestamp millis", ts(500_000_000), `"2024-01-02T02:04:05.500Z"`},
		{"timestamp micros", ts(1_000), `"2024-01-02T02:04:05.000001Z"`},
		{"timestamp nanos", ts(7), `"2024-01-02T02:04:05.000000007Z"`},
		{"int64 as a string", Int64(1 << 40), `"1099511627776"`},
		{"oneof", &WatchDirResponse{Keepalive: &Empty{}}, `{"keepalive":{}}`},
		{"bytes", &DataEvent{Stdout: []byte("hi\n")}, `{"stdout":"aGkK"}`},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %s %v, want %s", tc.name, got, err, tc.want)
		}
	}
	var n Int64
	for _, in := range []string{`"42"`, `42`} {
		if err := json.Unmarshal([]byte(in), &n); err != nil || n != 42 {
			t.Errorf("Int64 from %s: %d %v", in, n, err)
		}
	}
	var s SendSignalRequest
	if err := json.Unmarshal([]byte(`{"signal":9}`), &s); err != nil || s.Signal != "SIGNAL_SIGKILL" {
		t.Errorf("signal by number: %q %v", s.Signal, err)
	}
	var w WatchDirRequest
	if err := json.Unmarshal([]byte(`{"path":"/x","include_entry":true,"allowNetworkMounts":true}`), &w); err != nil ||
		w != (WatchDirRequest{Path: "/x", IncludeEntry: true, AllowNetworkMounts: true}) {
		t.Errorf("watch request by proto names: %+v %v", w, err)
	}
	var wr WatcherRequest
	if err := json.Unmarshal([]byte(`{"watcher_id":"abc"}`), &wr); err != nil || wr.WatcherID != "abc" {
		t.Errorf("watcher request by proto name: %+v %v", wr, err)
	}
}
