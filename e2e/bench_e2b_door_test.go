//go:build bench

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
)

// doorStart returns a function that runs /bin/bash -l -c cmd in sandbox id
// through the door's process.Start with Go's HTTP client, the bytes the
// SDK's commands.run sends: the door's cost without node's.
func doorStart(t *testing.T, ctx context.Context, p *primer, id, cmd string) func() error {
	t.Helper()
	base := p.srv.URL()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/e2b/sandboxes/"+id+"/connect", bytes.NewReader([]byte(`{"timeout":1800}`)))
	req.Header.Set("X-API-KEY", p.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sb struct {
		EnvdAccessToken string `json:"envdAccessToken"`
	}
	err = json.NewDecoder(res.Body).Decode(&sb)
	res.Body.Close()
	if err != nil || sb.EnvdAccessToken == "" {
		t.Fatalf("connect %s: %d %v", id, res.StatusCode, err)
	}
	body, _ := json.Marshal(map[string]any{"process": map[string]any{"cmd": "/bin/bash", "args": []string{"-l", "-c", cmd}}, "stdin": false})
	env := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(env[1:], uint32(len(body)))
	env = append(env, body...)
	return func() error {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/e2b/envd/process.Process/Start", bytes.NewReader(env))
		req.Header.Set("Content-Type", "application/connect+json")
		req.Header.Set("Connect-Protocol-Version", "1")
		req.Header.Set("Keepalive-Ping-Interval", "50")
		req.Header.Set("E2b-Sandbox-Id", id)
		req.Header.Set("X-Access-Token", sb.EnvdAccessToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !bytes.Contains(out, []byte(`"end"`)) {
			return fmt.Errorf("start: %d %q", res.StatusCode, out)
		}
		return nil
	}
}
