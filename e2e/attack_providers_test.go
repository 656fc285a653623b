package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dnetwork "github.com/docker/docker/api/types/network"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// The attacks of issue 21 on providers (holes 2, 4 and 6), each driven
// through the real API with the weakest key that could try it (a member's)
// and checked for what did not happen: no command run, no file read or
// written, no request at a fake endpoint, no container on another
// tenant's network.

// refusal is an API answer: its status and error message.
type refusal struct {
	status int
	msg    string
	body   []byte
}

// call sends body (JSON) with key and returns the answer.
func call(t *testing.T, p *primer, key, method, path string, body any) refusal {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(mustJSON(t, body))
	}
	req, err := http.NewRequest(method, p.srv.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	// A bounded wait: a platform that reads a fifo a member named blocks
	// on it, and that must fail the test, not hang it.
	resp, err := (&http.Client{Transport: p.hc.Transport, Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v (a request that hangs may be reading a fifo the member named)", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var env struct {
		Error struct{ Message string } `json:"error"`
	}
	_ = json.Unmarshal(data, &env)
	return refusal{status: resp.StatusCode, msg: env.Error.Message, body: data}
}

// expectRefused fails t unless r has status and a message containing msg.
func (r refusal) expect(t *testing.T, status int, msg string) {
	t.Helper()
	if r.status != status || !strings.Contains(r.msg, msg) {
		t.Fatalf("answer %d %s; want %d with %q", r.status, r.body, status, msg)
	}
}

// memberOf makes tenant (unless it is the default one) and a member key
// of it, with the admin's key.
func memberOf(t *testing.T, p *primer, tenant string) string {
	t.Helper()
	if tenant != wire.DefaultTenantID {
		call(t, p, p.key, "POST", "/v1/tenants", map[string]any{"id": tenant}).expect(t, 201, "")
	}
	var k createdKey
	r := call(t, p, p.key, "POST", "/v1/apikeys", map[string]any{"tenant_id": tenant, "role": "member", "name": tenant + " member"})
	r.expect(t, 201, "")
	if err := json.Unmarshal(r.body, &k); err != nil || k.Key == "" {
		t.Fatalf("member key: %s", r.body)
	}
	return k.Key
}

// noProvider fails t if a provider id exists.
func noProvider(t *testing.T, p *primer, id string) {
	t.Helper()
	if _, err := p.srv.Store().GetProvider(context.Background(), id); !errs.Is(err, errs.NotFound) {
		t.Fatalf("provider %s: %v; a refused request must write no row", id, err)
	}
}

// inlineSSH returns a valid inline key (PEM) and known_hosts lines naming
// addrs, so that a vm document is refused for its admin-only field and
// nothing else.
func inlineSSH(t *testing.T, addrs ...string) (keyPEM, known string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	hostPub, _, _ := ed25519.GenerateKey(rand.Reader)
	hk, _ := ssh.NewPublicKey(hostPub)
	var lines []string
	for _, a := range addrs {
		lines = append(lines, knownhosts.Line([]string{knownhosts.Normalize(a)}, hk))
	}
	return string(pem.EncodeToMemory(block)), strings.Join(lines, "\n") + "\n"
}

// fifo makes a named pipe: a server that reads it blocks until a writer
// comes, so a request that returns, and a pipe no one holds open for
// reading afterwards, show nothing read it.
func fifo(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return path
}

// unread fails t if someone holds the fifo open for reading.
func unread(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		_ = f.Close()
		t.Fatalf("%s is open for reading: the platform read a path a member named", path)
	}
	if !errors.Is(err, syscall.ENXIO) {
		t.Fatalf("open %s: %v", path, err)
	}
}

// TestAttackProviderHostFields is hole 2: a member's provider may not run
// a command on the platform's host (vm machines), read or write a host
// path (key file, known_hosts, trust on first use, TLS files, a container
// socket), send a platform environment variable (private_key_env), or fall
// back to the platform's own cluster credentials (a Kubernetes provider
// with an empty kubeconfig, or in_cluster). Each is a 403 naming the field,
// and nothing happened: no row, the command's marker never appears, the
// fifos are never opened, the cluster the platform's KUBECONFIG names
// sees no request.
func TestAttackProviderHostFields(t *testing.T) {
	var kubeRequests atomic.Int64
	cluster := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kubeRequests.Add(1)
		http.Error(w, "no", http.StatusForbidden)
	}))
	t.Cleanup(cluster.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "+cluster.URL+"}\n"+
		"users:\n- name: u\n  user: {token: platform-token}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	t.Setenv("PRIMER_ATTACK_SECRET", "platform-secret")
	p := startPrimer(t)
	member := memberOf(t, p, "acme")

	dir := t.TempDir()
	marker := filepath.Join(dir, "machines-ran")
	keyFifo, khFifo := fifo(t, "shadow"), fifo(t, "known_hosts")
	tofuFile := filepath.Join(dir, "tofu_known_hosts")
	keyPEM, known := inlineSSH(t, "10.0.0.5")
	vmConn := func(edit map[string]any) map[string]any {
		c := map[string]any{"user": "root", "private_key": keyPEM, "known_hosts_data": known}
		for k, v := range edit {
			if v == nil {
				delete(c, k)
				continue
			}
			c[k] = v
		}
		return c
	}
	fleet := []any{map[string]any{"address": "10.0.0.5"}}
	tcp := map[string]any{"kind": "tcp", "host": "10.0.0.9:2376"}
	hostPort := map[string]any{"kind": "host_port"}
	tests := []struct {
		name, provider string
		config         map[string]any
		msg            string
	}{
		{"vm machines", "vm", map[string]any{"connection": vmConn(nil), "machines": map[string]any{
			"create": []string{"/bin/sh", "-c", "touch " + marker + "; echo '{\"address\":\"10.0.0.5\"}'"}, "destroy": []string{"/bin/sh", "-c", "touch " + marker}}},
			"spec.config.machines.create: runs a command on the Primer host; only an admin may set it"},
		{"vm key file", "vm", map[string]any{"connection": vmConn(map[string]any{"private_key": nil, "private_key_file": keyFifo}), "hosts": fleet},
			"spec.config.connection.private_key_file: names a path on the Primer host; only an admin may set it"},
		{"vm key env", "vm", map[string]any{"connection": vmConn(map[string]any{"private_key": nil, "private_key_env": "PRIMER_ATTACK_SECRET"}), "hosts": fleet},
			"spec.config.connection.private_key_env: names an environment variable of the Primer host; only an admin may set it"},
		{"vm known_hosts file", "vm", map[string]any{"connection": vmConn(map[string]any{"known_hosts_data": nil, "known_hosts": khFifo}), "hosts": fleet},
			"spec.config.connection.known_hosts: names a path on the Primer host; only an admin may set it"},
		{"vm trust on first use", "vm", map[string]any{"connection": vmConn(map[string]any{"known_hosts_data": nil, "known_hosts": tofuFile, "trust_on_first_use": true}), "hosts": fleet},
			"spec.config.connection.known_hosts: names a path on the Primer host"},
		{"kubernetes empty kubeconfig", "kubernetes", map[string]any{"connection": map[string]any{"kind": "kubeconfig"}, "reachability": map[string]any{"kind": "pod_ip"}, "runtime_image": "x/runtime:1"},
			"spec.config.connection.kubeconfig: left out, the platform's own kubeconfig is used; only an admin may set it"},
		{"kubernetes in cluster", "kubernetes", map[string]any{"connection": map[string]any{"kind": "in_cluster"}, "reachability": map[string]any{"kind": "pod_ip"}, "runtime_image": "x/runtime:1"},
			"spec.config.connection.kind: in_cluster uses the Primer host's own service account"},
		{"kubernetes kubeconfig file", "kubernetes", map[string]any{"connection": map[string]any{"kind": "kubeconfig", "path": kubeconfig}, "reachability": map[string]any{"kind": "pod_ip"}, "runtime_image": "x/runtime:1"},
			"spec.config.connection.path: names a path on the Primer host"},
		{"container socket", "container", map[string]any{"connection": map[string]any{"kind": "socket", "socket_path": "/var/run/docker.sock"}, "reachability": hostPort},
			"spec.config.connection.socket_path: names a path on the Primer host; only an admin may set it"},
		{"container tls files", "container", map[string]any{"connection": map[string]any{"kind": "tcp", "host": "10.0.0.9:2376",
			"tls": map[string]any{"ca_file": keyFifo, "cert_file": keyFifo, "key_file": keyFifo}}, "reachability": hostPort},
			"spec.config.connection.tls.ca_file: names a path on the Primer host"},
	}
	// The member's own valid provider of each type, for the updates.
	own := map[string]map[string]any{
		"vm":         {"connection": vmConn(nil), "hosts": fleet},
		"container":  {"connection": tcp, "reachability": hostPort},
		"kubernetes": nil, // a member has no kubernetes provider without an inline kubeconfig; the create is enough
	}
	for kind, cfg := range own {
		if cfg != nil {
			call(t, p, member, "POST", "/v1/providers", map[string]any{"id": "own-" + kind, "provider": kind, "config": cfg}).expect(t, 201, "")
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call(t, p, member, "POST", "/v1/providers", map[string]any{"id": "attack", "provider": tt.provider, "config": tt.config}).
				expect(t, 403, tt.msg)
			noProvider(t, p, "attack")
			if own[tt.provider] == nil {
				return
			}
			before, err := p.srv.Store().GetProvider(context.Background(), "own-"+tt.provider)
			if err != nil {
				t.Fatal(err)
			}
			call(t, p, member, "PUT", "/v1/providers/own-"+tt.provider, map[string]any{"provider": tt.provider, "config": tt.config}).
				expect(t, 403, tt.msg)
			after, err := p.srv.Store().GetProvider(context.Background(), "own-"+tt.provider)
			if err != nil || !bytes.Equal(after.Config, before.Config) {
				t.Fatalf("refused update changed the row: %s (%v)", after.Config, err)
			}
		})
	}
	for _, f := range []string{keyFifo, khFifo} {
		unread(t, f)
	}
	for _, f := range []string{marker, tofuFile} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v): a member's provider touched the host", f, err)
		}
	}
	if n := kubeRequests.Load(); n != 0 {
		t.Errorf("the platform's cluster got %d requests from a member's provider", n)
	}
	// A model provider naming a platform environment variable: refused too.
	call(t, p, member, "POST", "/v1/llm-providers", map[string]any{"id": "llm-attack", "kind": "openai", "base_url": "https://llm.example.invalid/v1", "api_key_env": "PRIMER_ATTACK_SECRET"}).
		expect(t, 403, "spec.api_key_env: names an environment variable of the Primer host; only an admin may set it")
}

// TestAttackSharedProviderReadOnly is hole 4: an admin's provider, shared
// with every tenant, lives in the default tenant; a member of that tenant
// may neither repoint nor delete it (other tenants' env values and runtime
// tokens would go where it points).
func TestAttackSharedProviderReadOnly(t *testing.T) {
	p := startPrimer(t)
	member := memberOf(t, p, wire.DefaultTenantID)
	cfg := map[string]any{"connection": map[string]any{"kind": "tcp", "host": "10.0.0.9:2375"}, "reachability": map[string]any{"kind": "host_port"}}
	call(t, p, p.key, "POST", "/v1/providers", map[string]any{"id": "fleet", "provider": "container", "config": cfg, "shared": true}).expect(t, 201, "")
	before, err := p.srv.Store().GetProvider(context.Background(), "fleet")
	if err != nil {
		t.Fatal(err)
	}
	repoint := map[string]any{"connection": map[string]any{"kind": "tcp", "host": "203.0.113.66:2375"}, "reachability": map[string]any{"kind": "host_port"}}
	call(t, p, member, "PUT", "/v1/providers/fleet", map[string]any{"provider": "container", "config": repoint}).
		expect(t, 403, "provider fleet: shared; only an admin may change it")
	call(t, p, member, "PUT", "/v1/providers/fleet", map[string]any{"provider": "container", "config": repoint, "shared": false}).
		expect(t, 403, "provider fleet: shared; only an admin may change it")
	call(t, p, member, "DELETE", "/v1/providers/fleet", nil).expect(t, 403, "provider fleet: shared; only an admin may delete it")
	after, err := p.srv.Store().GetProvider(context.Background(), "fleet")
	if err != nil || !bytes.Equal(after.Config, before.Config) || !after.Shared {
		t.Fatalf("the shared provider changed: %+v (%v)", after, err)
	}
	// The admin still may.
	call(t, p, p.key, "PUT", "/v1/providers/fleet", map[string]any{"provider": "container", "config": repoint}).expect(t, 200, "")
}

// TestAttackEndpointChangeKeepsTheSecret is the rest of hole 4: a member's
// provider holds an inline credential; an update that moves it to another
// endpoint while sending "(redacted)" is refused, so the stored key is
// never used against the new endpoint: a workspace on the provider still
// dials the old host (the control) and the new one sees no connection.
func TestAttackEndpointChangeKeepsTheSecret(t *testing.T) {
	listen := func() (string, *atomic.Int64) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		var n atomic.Int64
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				n.Add(1)
				_ = c.Close()
			}
		}()
		return l.Addr().String(), &n
	}
	home, homeConns := listen()
	evil, evilConns := listen()
	t.Setenv("PRIMER_OUTBOUND_ALLOW", "127.0.0.1")
	p := startPrimer(t)
	member := memberOf(t, p, "acme")
	keyPEM, known := inlineSSH(t, home, evil)
	cfg := func(host, key string) map[string]any {
		return map[string]any{"connection": map[string]any{"user": "root", "private_key": key, "known_hosts_data": known, "connect_timeout": "1s"},
			"hosts": []any{map[string]any{"address": host}}}
	}
	r := call(t, p, member, "POST", "/v1/providers", map[string]any{"id": "mine", "provider": "vm", "config": cfg(home, keyPEM)})
	r.expect(t, 201, "")
	if bytes.Contains(r.body, []byte("PRIVATE KEY")) {
		t.Fatalf("the create answer carries the key: %s", r.body)
	}
	before, err := p.srv.Store().GetProvider(context.Background(), "mine")
	if err != nil {
		t.Fatal(err)
	}
	call(t, p, member, "PUT", "/v1/providers/mine", map[string]any{"provider": "vm", "config": cfg(evil, "(redacted)")}).
		expect(t, 400, "(redacted) keeps the stored value only while the endpoint stays; spec.config.hosts.0.address changed, so send the value again")
	after, err := p.srv.Store().GetProvider(context.Background(), "mine")
	if err != nil || !bytes.Equal(after.Config, before.Config) {
		t.Fatalf("the refused update changed the provider: %s (%v)", after.Config, err)
	}
	// The same endpoint keeps the key through the placeholder.
	call(t, p, member, "PUT", "/v1/providers/mine", map[string]any{"provider": "vm", "config": cfg(home, "(redacted)")}).expect(t, 200, "")
	call(t, p, member, "POST", "/v1/templates", map[string]any{"id": "mine", "provider_id": "mine", "backend": map[string]any{"kind": "vm", "user": "agent"}}).expect(t, 201, "")
	r = call(t, p, member, "POST", "/v1/workspaces", map[string]any{"template_id": "mine"})
	r.expect(t, 201, "")
	eventually(t, time.Minute, "the workspace dials its provider's host", func() bool { return homeConns.Load() > 0 })
	if n := evilConns.Load(); n != 0 {
		t.Fatalf("the new endpoint got %d connections", n)
	}
}

// TestAttackTenantNetwork is hole 6: a member may not name an engine
// network for its container provider (it could be another tenant's
// network); and a provider row that names a tenant's network (written
// before the rule, or by an admin's mistake) makes no workspace: the
// provision is refused and no container joins the network.
func TestAttackTenantNetwork(t *testing.T) {
	e := containertest.Known()[0]
	containertest.Require(t, e)
	p := startPrimer(t, withContainers(t))
	ctx := ctxT(t, 3*time.Minute)
	member := memberOf(t, p, "acme")
	call(t, p, p.key, "POST", "/v1/tenants", map[string]any{"id": "victim"}).expect(t, 201, "")
	eng := containertest.Backend(t, e)
	victimNet := container.TenantNetwork(p.srv.Installation(), "victim")
	if _, err := eng.Client().NetworkCreate(ctx, victimNet, dnetwork.CreateOptions{Driver: "bridge", Labels: map[string]string{
		container.LabelManaged: "true", container.LabelTenant: "victim", container.LabelInstallation: p.srv.Installation()}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Client().NetworkRemove(context.Background(), victimNet) })

	onNet := map[string]any{"kind": "network", "network": victimNet}
	call(t, p, member, "POST", "/v1/providers", map[string]any{"id": "sneak", "provider": "container",
		"config": map[string]any{"connection": map[string]any{"kind": "tcp", "host": "10.0.0.9:2375"}, "reachability": onNet}}).
		expect(t, 403, "spec.config.reachability.network: joins workspaces to an engine network other tenants' workspaces or the platform may be on; only an admin may set it")
	noProvider(t, p, "sneak")

	// A row as an older Primer let a member write it.
	raw, _ := json.Marshal(map[string]any{"runtime": e.Name, "connection": map[string]any{"kind": "socket", "socket_path": e.Socket}, "reachability": onNet})
	if err := p.srv.Store().CreateProvider(ctx, &wire.Provider{ID: "old-row", TenantID: "acme", Provider: "container", Config: raw}); err != nil {
		t.Fatal(err)
	}
	call(t, p, member, "POST", "/v1/templates", map[string]any{"id": "old-row", "provider_id": "old-row",
		"backend": map[string]any{"kind": "container", "image": containertest.BusyboxImage}}).expect(t, 201, "")
	var ws wire.Workspace
	r := call(t, p, member, "POST", "/v1/workspaces", map[string]any{"template_id": "old-row"})
	r.expect(t, 201, "")
	if err := json.Unmarshal(r.body, &ws); err != nil {
		t.Fatal(err)
	}
	evs := waitEvent(t, p.api, ws.ID, "workspace.provision_failed", 2*time.Minute)
	if last := evs[len(evs)-1]; !strings.Contains(string(last.Data), "is a Primer tenant network") {
		t.Errorf("provision_failed says %s; want the tenant network refused", last.Data)
	}
	n, err := eng.Client().NetworkInspect(ctx, victimNet, dnetwork.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Containers) != 0 {
		t.Errorf("the victim's network has %d containers", len(n.Containers))
	}
	cs, err := eng.Client().ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", container.LabelWorkspace+"="+ws.ID))})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 0 {
		t.Errorf("the refused workspace has %d containers", len(cs))
	}
}
