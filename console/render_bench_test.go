package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// BenchmarkRenderWorkspaces times the workspace list page's template alone
// with 1,000 rows (e2e TestBenchConsole times the whole request).
func BenchmarkRenderWorkspaces(b *testing.B) {
	c, err := New(Config{API: http.NotFoundHandler(), Sessions: testSessions(b)})
	if err != nil {
		b.Fatal(err)
	}
	ws := make([]wire.Workspace, 1000)
	for i := range ws {
		ws[i] = wire.Workspace{ID: fmt.Sprintf("ws-%016x", i), TemplateID: "plain", Backend: "local", Phase: "failed", Reason: "bench row <b>", CreatedAt: time.Now()}
	}
	s := &session{role: "admin", csrf: "x"}
	r := httptest.NewRequest("GET", "/workspaces", nil)
	for b.Loop() {
		w := httptest.NewRecorder()
		c.render(w, r, s, 0, "workspaces", page{Title: "Workspaces", Section: "workspaces", Tab: "workspaces", Data: workspaceList{Rows: listRows(ws), After: 1}})
	}
}
