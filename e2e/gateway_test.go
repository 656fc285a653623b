package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// gatewayCallPy is a program in the sandbox calling the gateway the way an
// OpenAI client does, from the variables the workspace was given, in
// sockets (the test image's python has no http package): it prints the
// answer as it arrives. It retries the connection while the platform is
// still asking the runtime to listen.
const gatewayCallPy = `import os, socket, sys, time
base = os.environ['OPENAI_BASE_URL']
port = int(base.split('://', 1)[1].split('/', 1)[0].split(':')[1])
key = sys.argv[4] if len(sys.argv) > 4 else os.environ['OPENAI_API_KEY']
body = '{"model": "%s", "stream": %s, "messages": [{"role": "user", "content": "hi"}]}' % (sys.argv[2], sys.argv[3])
req = ('POST %s HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\n'
       'Connection: close\r\nContent-Length: %d\r\n\r\n%s') % (sys.argv[1], key, len(body), body)
for i in range(100):
    try:
        s = socket.create_connection(('127.0.0.1', port))
        s.sendall(req.encode())
        first = s.recv(65536)
        if first:
            break
    except OSError:
        pass
    time.sleep(0.2)
sys.stdout.write(first.decode()); sys.stdout.flush()
while True:
    b = s.recv(65536)
    if not b:
        break
    sys.stdout.write(b.decode()); sys.stdout.flush()
`

// leakScanPy prints every place under / (not /proc, /sys, /dev) and every
// process environment that holds argv[1].
const leakScanPy = `import os, sys
needle = sys.argv[1].encode()
for d in os.listdir('/proc'):
    if d.isdigit():
        try:
            if needle in open('/proc/%s/environ' % d, 'rb').read():
                print('ENVIRON', d)
        except OSError:
            pass
for root, dirs, files in os.walk('/'):
    dirs[:] = [x for x in dirs if os.path.join(root, x) not in ('/proc', '/sys', '/dev')]
    for f in files:
        p = os.path.join(root, f)
        try:
            if os.path.islink(p) or os.path.getsize(p) > 64 << 20:
                continue
            if needle in open(p, 'rb').read():
                print('FILE', p)
        except OSError:
            pass
print('SCANNED')
`

// gatewayModel is the test model server on the host: OpenAI's chat
// completions, JSON or a stream whose first event is sent alone until the
// test releases the rest. It records the key each request carried.
type gatewayModel struct {
	*httptest.Server
	release chan struct{}
	mu      sync.Mutex
	keys    []string
	models  []string
}

func startGatewayModel(t *testing.T) *gatewayModel {
	m := &gatewayModel{release: make(chan struct{}, 4)}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		m.mu.Lock()
		m.keys = append(m.keys, r.Header.Get("Authorization"))
		m.models = append(m.models, req.Model)
		m.mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"answer-json"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"piece-one\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-m.release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"piece-two\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(m.Close)
	return m
}

// withModelGateway creates the LLM provider gw-model (model, with key)
// and returns manifest with a model_gateway on its template, before its
// config_toml, allowing gpt-ok; extra goes inside the braces.
func withModelGateway(t *testing.T, p *primer, manifest string, model *gatewayModel, key, extra string) string {
	t.Helper()
	prov := fmt.Sprintf("kind: llm_provider\nspec:\n  id: gw-model\n  kind: openai\n  base_url: %s/v1\n  api_key: %s\n", model.URL, key)
	if out, errOut, code := p.primectl(prov, "create", "-f", "-"); code != 0 {
		t.Fatalf("create llm_provider: %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(manifest, "\n    config_toml: ") {
		t.Fatal("withModelGateway: the manifest's template has no config_toml line to put the gateway before")
	}
	return strings.Replace(manifest, "\n    config_toml: ",
		"\n    model_gateway: {provider_id: gw-model, models: [gpt-ok]"+extra+"}\n    config_toml: ", 1)
}

// checkGatewayCall: a program in workspace id calls the model gateway
// with the variables it was given, and the test model server answers it,
// having got the real key; the sandbox's key variable is the gateway's
// credential. The backends other than Docker and Podman run this one
// call; TestModelGatewayDenyAll runs the rest there. python names the
// sandbox's interpreter.
func checkGatewayCall(t *testing.T, p *primer, ctx context.Context, id string, model *gatewayModel, key, python string) {
	t.Helper()
	if _, err := p.api.WriteFile(ctx, id, "call.py", strings.NewReader(gatewayCallPy)); err != nil {
		t.Fatal(err)
	}
	res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{python, "call.py", "/v1/chat/completions", "gpt-ok", "false"}})
	if err != nil || res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, "HTTP/1.1 200") || !strings.Contains(res.Stdout, "answer-json") {
		t.Fatalf("a call through the gateway = %+v, %v; want 200 and the model's answer", res, err)
	}
	if keys, _ := model.seen(); len(keys) != 1 || keys[0] != "Bearer "+key {
		t.Errorf("the model server got %d requests, Authorization %q; want one with the real key", len(keys), keys)
	}
	res, err = p.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{python, "-c", "import os; print(os.environ.get('OPENAI_API_KEY', ''))"}})
	if err != nil || !strings.HasPrefix(res.Stdout, "pgw-") || strings.Contains(res.Stdout, key) {
		t.Errorf("OPENAI_API_KEY in the sandbox = %q, %v; want the gateway credential", res.Stdout, err)
	}
}

// TestModelGatewayLocal is checkGatewayCall on a local workspace, whose
// runtime the platform hosts: its gateway listens on the host's loopback,
// on the port derived from the workspace id.
func TestModelGatewayLocal(t *testing.T) {
	p := startPrimer(t)
	ctx := ctxT(t, 3*time.Minute)
	model, key := startGatewayModel(t), secretKey(t)
	manifest := withModelGateway(t, p, fmt.Sprintf(`kind: workspace_provider
spec:
  id: scratch
  provider: local
  config: {kind: local, root_path: %s}
---
kind: workspace_template
spec:
  id: code-sandbox
  provider_id: scratch
  backend:
    kind: local
    config_toml: %s
`, t.TempDir(), recipeConfigJSON), model, key, "")
	if out, errOut, code := p.primectl(manifest, "create", "-f", "-"); code != 0 {
		t.Fatalf("create -f: code %d\n%s\n%s", code, out, errOut)
	}
	id := createRunning(t, p, "code-sandbox").ID
	checkGatewayCall(t, p, ctx, id, model, key, "python3")
	if _, _, code := p.primectl("", "delete", "workspace", id, "--wait"); code != 0 {
		t.Errorf("delete workspace --wait: code %d", code)
	}
}

func (m *gatewayModel) seen() ([]string, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.keys...), append([]string(nil), m.models...)
}

// TestModelGatewayDenyAll (issue 26): a program in a deny_all container
// calls the model gateway with the variables its workspace was given; the
// request reaches the test model server on the host with the real key; a
// stream's first piece arrives before the model sends the rest; a model
// off the allowlist is 403, a forged credential 401, the fourth call over a
// budget of three 429; and the real key is in no process environment, no
// file of the sandbox, no event, no platform log line and nowhere in the
// workspace's Temporal history.
func TestModelGatewayDenyAll(t *testing.T) {
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		var logs syncBuffer
		p := startPrimerLog(t, &logs, withContainers(t))
		ctx := ctxT(t, 5*time.Minute)
		eng := containertest.Backend(t, e)
		model := startGatewayModel(t)
		key := secretKey(t)
		id := createRecipeWorkspace(t, p, withModelGateway(t, p, recipeManifest(e, "deny_all"), model, key, ", budget: {workspace_requests: 3}"))
		t.Cleanup(func() {
			_ = eng.Destroy(context.Background(), backend.Handle{Backend: container.Type, WorkspaceID: id})
		})
		// The first call, and the credential in the sandbox's env.
		checkGatewayCall(t, p, ctx, id, model, key, "python")
		call := func(model, stream string, extra ...string) string {
			t.Helper()
			res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: append([]string{"python", "call.py", "/v1/chat/completions", model, stream}, extra...)})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("call %s: %+v, %v", model, res, err)
			}
			return res.Stdout
		}

		// A stream: the first piece is read in the sandbox while the model
		// still holds the rest back.
		proc, err := p.api.StartProcess(ctx, id, wire.ProcessSpec{Command: []string{"python", "-u", "call.py", "/v1/chat/completions", "gpt-ok", "true"}})
		if err != nil {
			t.Fatal(err)
		}
		at, err := p.api.AttachProcess(ctx, id, proc.PID, client.AttachOptions{Replay: true})
		if err != nil {
			t.Fatal(err)
		}
		var said strings.Builder
		released := false
		for !strings.Contains(said.String(), "[DONE]") {
			m, err := at.Recv(ctx)
			if err != nil || m.Type == wire.AttachExit {
				t.Fatalf("the stream ended early: %v; the program read %q", err, said.String())
			}
			said.Write(m.Data)
			if !released && strings.Contains(said.String(), "piece-one") {
				if strings.Contains(said.String(), "piece-two") {
					t.Fatal("the second piece came with the first: the stream was not passed on as it arrived")
				}
				released = true
				model.release <- struct{}{}
			}
		}
		_ = at.Close()
		if !strings.Contains(said.String(), "piece-two") {
			t.Errorf("the stream lacks its second piece: %q", said.String())
		}

		if out := call("gpt-expensive", "false"); !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, "model_not_allowed") {
			t.Errorf("a model off the allowlist answered %q, want 403 model_not_allowed", out)
		}
		if out := call("gpt-ok", "false", "pgw-forged"); !strings.HasPrefix(out, "HTTP/1.1 401") {
			t.Errorf("a forged credential answered %q, want 401", out)
		}
		if out := call("gpt-ok", "false"); !strings.HasPrefix(out, "HTTP/1.1 200") {
			t.Errorf("the third call answered %q, want 200", out)
		}
		if out := call("gpt-ok", "false"); !strings.HasPrefix(out, "HTTP/1.1 429") || !strings.Contains(out, "over its budget") {
			t.Errorf("the fourth call over a budget of 3 answered %q, want 429 saying so", out)
		}
		keys, models := model.seen()
		if len(keys) != 3 {
			t.Errorf("the model server got %d requests (%v), want the 3 allowed ones", len(keys), models)
		}
		for _, k := range keys {
			if k != "Bearer "+key {
				t.Errorf("the model server got Authorization %q, want the real key", k)
			}
		}

		// The key is nowhere in the sandbox, and the credential it holds is
		// the gateway's.
		if _, err := p.api.WriteFile(ctx, id, "scan.py", strings.NewReader(leakScanPy)); err != nil {
			t.Fatal(err)
		}
		res, err := p.api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"python", "scan.py", key}})
		if err != nil || res.Stdout != "SCANNED\n" {
			t.Errorf("the key scan in the sandbox printed %q (stderr %q), %v; want only SCANNED", res.Stdout, res.Stderr, err)
		}
		var seen []string
		evs, err := p.api.Events(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(evs)
		seen = append(seen, "events:"+string(b))
		seen = append(seen, "logs:"+logs.String())
		it := p.srv.TemporalClient().GetWorkflowHistory(ctx, workflows.WorkflowID(id), "", false, 0)
		var hist strings.Builder
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			js, _ := json.Marshal(ev)
			hist.Write(js)
		}
		if hist.Len() == 0 {
			t.Fatal("the workspace's workflow has no history")
		}
		seen = append(seen, "temporal history:"+hist.String())
		for _, s := range seen {
			if strings.Contains(s, key) {
				name, _, _ := strings.Cut(s, ":")
				t.Errorf("the provider's key appears in the %s", name)
			}
		}
	})
}
