package console

import (
	"html/template"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// listRowTemplate is the rows as the page's template wrote them before
// listRows: listRows must write the same.
var listRowTemplate = template.Must(template.New("rows").Funcs(template.FuncMap{"since": since}).Parse(
	`{{range .}}<tr data-ws="{{.ID}}"><td><a href="/workspaces/{{.ID}}">{{.ID}}</a></td><td>{{.TemplateID}}</td><td>{{.Backend}}</td>
<td class="phase" data-phase="{{.Phase}}">{{.Phase}}</td><td class="reason">{{.Reason}}</td><td>{{.PoolID}}{{with .PoolState}} ({{.}}){{end}}</td><td>{{since .CreatedAt}}</td></tr>
{{end}}`))

func TestListRows(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ws := []wire.Workspace{
		{ID: "ws-0123456789abcdef", TemplateID: "plain", Backend: "local", Phase: "failed", Reason: `bench row <b>"quoted" & 'single'</b>`, CreatedAt: at},
		{ID: "ws-1", TemplateID: "<script>alert(1)</script>", Backend: "docker", Phase: "running", PoolID: "pool-a", PoolState: "leased", CreatedAt: at},
		{ID: "ws-2", TemplateID: "t", Backend: "k8s", Phase: "pending"},
	}
	var want strings.Builder
	if err := listRowTemplate.Execute(&want, ws); err != nil {
		t.Fatal(err)
	}
	got := string(listRows(ws))
	if got != want.String() {
		t.Errorf("listRows:\n%s\nthe template:\n%s", got, want.String())
	}
	if strings.Contains(got, "<script>") || strings.Contains(got, "<b>") {
		t.Errorf("listRows left markup unescaped:\n%s", got)
	}
}
