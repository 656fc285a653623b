package console

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/primerhq/primer/wire"
)

// TestTranscriptEntryRenders renders each kind of entry with the template
// the page and the live stream share: what the model and the tools said is
// escaped, a tool call links its commit's diff, a turn shows its tokens.
func TestTranscriptEntryRenders(t *testing.T) {
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	tmpl := pages["transcript"]
	cases := []struct {
		e          wire.TranscriptEntry
		want, nope []string
	}{
		{wire.TranscriptEntry{SessionID: "ses-1", Seq: 1, Role: wire.RoleUser, Content: "run <script>alert(1)</script>"},
			[]string{`data-seq="1"`, "&lt;script&gt;alert(1)&lt;/script&gt;"}, []string{"<script>"}},
		{wire.TranscriptEntry{SessionID: "ses-1", Seq: 2, Turn: 1, Role: wire.RoleAssistant, Content: "writing it", InputTokens: 100, OutputTokens: 20,
			ToolCalls: json.RawMessage(`[{"id":"c1","name":"workspace__write","arguments":{}}]`), Commit: "abcdef0123456789"},
			[]string{"turn 1", "100 tokens in · 20 out", "<code>workspace__write</code>", `href="/sessions/ses-1/commits/abcdef0123456789"`}, nil},
		{wire.TranscriptEntry{SessionID: "ses-1", Seq: 3, Turn: 1, Role: wire.RoleTool, ToolName: "workspace__exec", State: wire.ToolFinished,
			ToolArgs: json.RawMessage(`{"command":"echo <b>"}`), ToolResult: json.RawMessage(`{"exit_code":0,"stdout":"42\n"}`), Commit: "0123456789ab"},
			[]string{`data-tool="workspace__exec"`, `data-state="finished"`, "&lt;b&gt;", `&#34;exit_code&#34;: 0`, `/sessions/ses-1/commits/0123456789ab`}, []string{"<b>"}},
	}
	for _, tc := range cases {
		var b strings.Builder
		if err := tmpl.ExecuteTemplate(&b, "entry", viewEntry(tc.e)); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s entry lacks %q:\n%s", tc.e.Role, w, b.String())
			}
		}
		for _, n := range tc.nope {
			if strings.Contains(b.String(), n) {
				t.Errorf("%s entry holds %q unescaped:\n%s", tc.e.Role, n, b.String())
			}
		}
	}
}

func TestAgentForm(t *testing.T) {
	form := url.Values{"id": {"code-runner"}, "provider_id": {"test-model"}, "model_name": {"m1"}, "max_tokens": {"1024"},
		"system_prompt": {"You run code.\r\n\r\nReport what it printed.\r\n"}, "tools": {"search, fetch"}, "max_turns": {"7"}, "timeout": {"5m"}}
	r := httptest.NewRequest(http.MethodPost, "/agents", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	spec, err := agentSpec(r)
	if err != nil {
		t.Fatal(err)
	}
	if spec.ID != "code-runner" || spec.Model.ProviderID != "test-model" || spec.Model.ModelName != "m1" || spec.Model.MaxTokens != 1024 ||
		strings.Join(spec.SystemPrompt, "|") != "You run code.|Report what it printed." || strings.Join(spec.Tools, "|") != "search|fetch" ||
		spec.MaxTurns != 7 || spec.Timeout != "5m" {
		t.Errorf("spec = %+v", spec)
	}
	form.Set("max_turns", "many")
	r = httptest.NewRequest(http.MethodPost, "/agents", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if _, err := agentSpec(r); err == nil || !strings.Contains(err.Error(), "Max turns") {
		t.Errorf("max_turns many: err = %v, want one naming Max turns", err)
	}
}
