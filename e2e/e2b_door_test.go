package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/primerhq/primer/backend/container/containertest"
)

// doorStart returns a function that runs /bin/bash -l -c cmd in sandbox id
// through the door's process.Start with Go's HTTP client, the bytes the
// SDK's commands.run sends (no user named: the sandbox's default), and
// answers its stdout: the door without node.
func doorStart(t *testing.T, ctx context.Context, p *primer, id, cmd string) func() (string, error) {
	t.Helper()
	base := p.srv.URL()
	var sb struct {
		EnvdAccessToken string `json:"envdAccessToken"`
	}
	if st, _ := e2bCall(t, p, p.key, "POST", "/sandboxes/"+id+"/connect", `{"timeout":1800}`, &sb); st != 200 || sb.EnvdAccessToken == "" {
		t.Fatalf("connect %s: status %d", id, st)
	}
	body, _ := json.Marshal(map[string]any{"process": map[string]any{"cmd": "/bin/bash", "args": []string{"-l", "-c", cmd}}, "stdin": false})
	env := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(env[1:], uint32(len(body)))
	env = append(env, body...)
	return func() (string, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/e2b/envd/process.Process/Start", bytes.NewReader(env))
		req.Header.Set("Content-Type", "application/connect+json")
		req.Header.Set("Connect-Protocol-Version", "1")
		req.Header.Set("Keepalive-Ping-Interval", "50")
		req.Header.Set("E2b-Sandbox-Id", id)
		req.Header.Set("X-Access-Token", sb.EnvdAccessToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var stdout bytes.Buffer
		ended := false
		for len(out) >= 5 {
			n := binary.BigEndian.Uint32(out[1:5])
			if int(n) > len(out)-5 {
				break
			}
			var msg struct {
				Event struct {
					Data *struct {
						Stdout []byte `json:"stdout"`
					} `json:"data"`
					End *json.RawMessage `json:"end"`
				} `json:"event"`
			}
			if out[0] == 0 && json.Unmarshal(out[5:5+n], &msg) == nil {
				if msg.Event.Data != nil {
					stdout.Write(msg.Event.Data.Stdout)
				}
				ended = ended || msg.Event.End != nil
			}
			out = out[5+n:]
		}
		if !ended {
			return stdout.String(), fmt.Errorf("start: %d: no end event", res.StatusCode)
		}
		return stdout.String(), nil
	}
}

// TestE2BTemplateUserDocker: an in-sandbox call that names no user runs as
// the user the template names, not E2B's default.
func TestE2BTemplateUserDocker(t *testing.T) {
	e := containertest.Known()[0]
	containertest.Require(t, e)
	p := startPrimer(t, withContainers(t))
	t.Cleanup(func() { e2bDeleteAll(t, p) })
	ctx := ctxT(t, 5*time.Minute)
	containerTemplate(t, p, e, "dev", `{"kind":"container","image":"`+containertest.PythonImage+`","user":"dev","network":{"egress":"deny_all"}}`)
	var sb struct{ SandboxID string }
	if st, _ := e2bCall(t, p, p.key, "POST", "/v2/sandboxes", `{"templateID":"dev","timeout":300}`, &sb); st != 201 {
		t.Fatalf("create: status %d", st)
	}
	out, err := doorStart(t, ctx, p, sb.SandboxID, "whoami; echo $HOME")()
	if err != nil || out != "dev\n/home/dev\n" {
		t.Fatalf("whoami; echo $HOME with no user named = %q, %v; want the template's user dev", out, err)
	}
}
