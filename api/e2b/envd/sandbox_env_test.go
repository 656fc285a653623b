package envd

import (
	"maps"
	"testing"

	"github.com/primerhq/primer/wire"
)

// TestSandboxEnv: a process gets the sandbox's own env (the create's
// envVars) under the request's envs.
func TestSandboxEnv(t *testing.T) {
	tests := []struct {
		name    string
		ws, req map[string]string
		want    map[string]string
	}{
		{name: "no sandbox env", req: map[string]string{"A": "1"}, want: map[string]string{"A": "1"}},
		{name: "sandbox env only", ws: map[string]string{"S": "s"}, want: map[string]string{"S": "s"}},
		{name: "request wins", ws: map[string]string{"S": "s", "A": "ws"}, req: map[string]string{"A": "req"},
			want: map[string]string{"S": "s", "A": "req"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := &wire.Workspace{Env: tt.ws}
			got := sandboxEnv(ws, tt.req)
			if !maps.Equal(got, tt.want) {
				t.Fatalf("sandboxEnv = %v, want %v", got, tt.want)
			}
			if len(tt.ws) > 0 && tt.ws["S"] != "s" {
				t.Fatal("the workspace's env was changed")
			}
		})
	}
}
