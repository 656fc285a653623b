package vm_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/backend/vm/vmtest"
	"github.com/primerhq/primer/runtime/protocol"
)

// createScript makes one sshd test machine per workspace (a container of
// the vmtest image), idempotent on the id, and prints its address.
const createScript = `#!/bin/bash
set -eu
id="$1"
[ "$id" = "$PRIMER_WORKSPACE_ID" ] || { echo "argument $id and PRIMER_WORKSPACE_ID $PRIMER_WORKSPACE_ID differ" >&2; exit 2; }
name="primer-vmtest-m-$id"
if ! docker inspect "$name" >/dev/null 2>&1; then
  docker run -d --init --name "$name" --label primer.vmtest=1 -e "AUTHORIZED_KEYS=$VMTEST_AUTHORIZED_KEYS" -p 127.0.0.1::22 "$VMTEST_IMAGE" >/dev/null
  echo "created $id" >> "$VMTEST_LOG"
fi
port=$(docker port "$name" 22/tcp | head -n 1 | sed 's/.*://')
for i in $(seq 200); do
  banner=$(timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && head -c 4 <&3" 2>/dev/null || true)
  [ "$banner" = SSH- ] && break
  sleep 0.1
done
echo "machine $name is up"
echo "{\"address\":\"127.0.0.1:$port\"}"
`

const destroyScript = `#!/bin/bash
set -eu
docker rm -f "primer-vmtest-m-$1" >/dev/null 2>&1 || true
echo "destroyed $PRIMER_WORKSPACE_ID" >> "$VMTEST_LOG"
`

// TestMachines: the machines mode makes one machine per workspace with the
// provider's create command (retried: the same machine), runs the
// workspace there, and removes the machine with destroy.
func TestMachines(t *testing.T) {
	vmtest.Require(t)
	dir := t.TempDir()
	create, destroy, log := filepath.Join(dir, "create.sh"), filepath.Join(dir, "destroy.sh"), filepath.Join(dir, "machines.log")
	for p, s := range map[string]string{create: createScript, destroy: destroyScript} {
		if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, pub := vmtest.KeyPair(t)
	t.Setenv("VMTEST_AUTHORIZED_KEYS", strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))))
	t.Setenv("VMTEST_IMAGE", vmtest.Image)
	t.Setenv("VMTEST_LOG", log)
	config, err := json.Marshal(map[string]any{
		"connection": vm.Connection{User: "root", PrivateKeyFile: vmtest.KeyFile(t), KnownHosts: filepath.Join(dir, "known_hosts"), TrustOnFirstUse: true},
		"machines":   map[string]any{"create": []string{create}, "destroy": []string{destroy}, "timeout": "2m"},
	})
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(t, config, nil)
	if got := b.Capabilities().Isolation; got != "machine" {
		t.Errorf("isolation = %q, want machine", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	id, token := backendtest.NewID(t), backendtest.NewToken(t)
	name := "primer-vmtest-m-" + id
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	req := backend.ProvisionRequest{WorkspaceID: id, Token: token, Template: json.RawMessage(`{"kind":"vm","root":"/srv/primer","user":"primer-ws"}`)}
	h, err := b.Provision(ctx, req)
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	if h.Attrs["machine"] != "true" || !strings.HasPrefix(h.Attrs["host"], "127.0.0.1:") {
		t.Errorf("handle attrs = %v, want a machine at a loopback port", h.Attrs)
	}
	c := backendtest.Dial(ctx, t, b, h, token)
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", "echo $PRIMER_WORKSPACE_ID; pwd"}}, nil, nil)
	if err != nil || string(res.Stdout) != id+"\n/srv/primer/"+id+"\n" {
		t.Fatalf("exec on the machine = %q, %v", res.Stdout, err)
	}
	inspect, err := exec.Command("docker", "inspect", "-f", "{{.State.Running}}", name).CombinedOutput()
	if err != nil || strings.TrimSpace(string(inspect)) != "true" {
		t.Fatalf("machine %s: %s %v", name, inspect, err)
	}

	// A retried provision gets the same machine and the same runtime.
	h2, err := b.Provision(ctx, req)
	if err != nil || !reflect.DeepEqual(h, h2) {
		t.Fatalf("second provision = %+v, %v; want %+v", h2, err, h)
	}
	if got, _ := os.ReadFile(log); strings.Count(string(got), "created ") != 1 {
		t.Errorf("machines log = %q, want one machine created", got)
	}

	if err := b.Destroy(ctx, h); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if out, err := exec.Command("docker", "inspect", name).CombinedOutput(); err == nil {
		t.Errorf("machine %s still exists after destroy: %s", name, out)
	}
	if got, _ := os.ReadFile(log); !strings.Contains(string(got), "destroyed "+id) {
		t.Errorf("machines log = %q, want destroy run with the workspace id", got)
	}
	if _, err := b.Endpoint(ctx, h, token); err == nil {
		t.Error("endpoint after destroy: nil error")
	}
}
