package api

import (
	"os"
	"strings"
	"testing"
)

// TestErrorSaysEachPrefixOnce: the message a user gets names the
// workspace once, each layer adding its own step (here the files API over
// a workspace whose directory is gone: "workspace ws-X: runtime
// unreachable: directory ... not found"), not "workspace ws-X: runtime
// unreachable: workspace ws-X: workspace ws-X: directory ...".
func TestErrorSaysEachPrefixOnce(t *testing.T) {
	h := newHarness(t)
	w, dir := h.runningWorkspace()
	h.srv.cfg.Connector.Drop(w.ID)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	r := h.do("GET", "/v1/workspaces/"+w.ID+"/files/a.txt", nil)
	msg := r.envelope(t).Message
	if r.status != 503 || !strings.Contains(msg, "not found") {
		t.Fatalf("status %d, message %q; want 503 saying the directory is not found", r.status, msg)
	}
	if n := strings.Count(msg, "workspace "+w.ID); n != 1 {
		t.Errorf("message %q names the workspace %d times, want once", msg, n)
	}
	if !strings.HasPrefix(msg, "workspace "+w.ID+": runtime unreachable: ") {
		t.Errorf("message %q; want it to start with the workspace and the step", msg)
	}
}
