package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/configs"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// accessHarness is a harness whose registry holds the real container,
// kubernetes and vm factories (nothing they build connects anywhere until
// a workspace is made) with the real config types, and counts how often a
// factory ran: a refused document must never reach one, since validating
// a vm provider reads its key file.
func accessHarness(t *testing.T) (*harness, *atomic.Int64) {
	t.Helper()
	var built atomic.Int64
	count := func(f backend.Factory) backend.Factory {
		return func(raw json.RawMessage) (backend.Backend, error) {
			built.Add(1)
			return f(raw)
		}
	}
	rt := container.NewRuntimeBinary("/nonexistent/primer-runtime")
	h := newHarness(t, func(c *Config) {
		host := local.NewHost(nil)
		t.Cleanup(func() { _ = host.Close() })
		c.Backends = backend.NewRegistry(map[string]backend.Factory{
			wire.BackendLocal:      count(local.Factory(host, nil)),
			wire.BackendContainer:  count(container.Factory(container.Options{Runtime: rt})),
			wire.BackendKubernetes: count(kubernetes.Factory(kubernetes.Options{Runtime: rt})),
			wire.BackendVM:         count(vm.Factory(vm.Options{Runtime: rt})),
		}).WithConfigs(configs.Providers())
		c.Connector.Backends = c.Backends
	})
	h.backends = h.srv.cfg.Backends
	if err := h.store.CreateTenant(context.Background(), &wire.Tenant{ID: tenantB}); err != nil {
		t.Fatal(err)
	}
	return h, &built
}

// accessTypes are every document type with access rules: each backend's
// provider config, and the model provider spec.
func accessTypes() map[string]reflect.Type {
	out := map[string]reflect.Type{"llm provider": reflect.TypeOf(wire.LLMProviderSpec{})}
	for kind, c := range configs.Providers() {
		out["provider "+kind] = reflect.TypeOf(c)
	}
	return out
}

// TestProviderFieldsHaveAccessRules enumerates every field of every
// provider config type (and the model provider spec): each must say who
// may set it, so a new field cannot skip the question. It also shows the
// check fails for a field without a rule.
func TestProviderFieldsHaveAccessRules(t *testing.T) {
	for name, ty := range accessTypes() {
		if err := backend.CheckRules(ty); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(backend.Rules(ty)) == 0 {
			t.Errorf("%s: no fields found", name)
		}
	}
	type noRule struct {
		A string `json:"a" access:"any"`
		B struct {
			C string `json:"c"`
		} `json:"b" access:"any"`
	}
	if err := backend.CheckRules(reflect.TypeOf(noRule{})); err == nil || !strings.Contains(err.Error(), "b.c") {
		t.Errorf("a field without a rule: CheckRules = %v, want an error naming b.c", err)
	}
	// The host's fields are the admin's, whatever else changes.
	for kind, paths := range map[string][]string{
		wire.BackendContainer:  {"connection.socket_path", "connection.tls.ca_file", "connection.tls.cert_file", "connection.tls.key_file", "reachability.network"},
		wire.BackendKubernetes: {"connection.path"},
		wire.BackendVM:         {"connection.private_key_file", "connection.private_key_env", "connection.known_hosts", "connection.trust_on_first_use", "machines.create", "machines.destroy", "allow_root_user"},
		wire.BackendLocal:      {"root_path"},
	} {
		rules := backend.Rules(reflect.TypeOf(configs.Providers()[kind]))
		for _, p := range paths {
			if rules[p].Kind != backend.AccessAdmin {
				t.Errorf("%s %s: rule %+v, want admin", kind, p, rules[p])
			}
		}
	}
	if r := backend.Rules(reflect.TypeOf(wire.LLMProviderSpec{}))["api_key_env"]; r.Kind != backend.AccessAdmin {
		t.Errorf("llm provider api_key_env: rule %+v, want admin", r)
	}
}

// setting returns a document of config type ty that sets the field at
// path (dotted JSON names, slice elements as 0) to a non-zero value, and
// nothing else.
func setting(t *testing.T, ty reflect.Type, path string) json.RawMessage {
	t.Helper()
	root := reflect.New(ty)
	v := root.Elem()
	for _, seg := range strings.Split(path, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		if v.Kind() == reflect.Slice {
			i, err := strconv.Atoi(seg)
			if err != nil {
				t.Fatalf("%s: %s is not an index", path, seg)
			}
			v.Set(reflect.MakeSlice(v.Type(), i+1, i+1))
			v = v.Index(i)
			continue
		}
		found := false
		for i := range v.NumField() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			if name == seg {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			t.Fatalf("%s: no field %s in %s", path, seg, v.Type())
		}
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("/etc/shadow")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int:
		v.SetInt(1)
	case reflect.Slice:
		v.Set(reflect.ValueOf([]string{"/bin/sh", "-c", "touch /tmp/primer-attack"}))
	default:
		t.Fatalf("%s: no test value for a %s", path, v.Kind())
	}
	raw, err := json.Marshal(root.Interface())
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestAdminOnlyProviderFields drives the API with a member key for every
// admin-only field of every provider config type (enumerated from the
// types): a create and an update of the member's own provider setting it
// are 403 naming the field, no row is written or changed, and no backend
// is built (nothing on the host is read). A provider without credentials
// of its own and a model provider naming an environment variable are
// refused the same way.
func TestAdminOnlyProviderFields(t *testing.T) {
	h, built := accessHarness(t)
	ctx := context.Background()
	member := h.newKey(tenantB, wire.RoleMember)
	for kind, c := range configs.Providers() {
		ty := reflect.TypeOf(c)
		if kind == wire.BackendLocal || kind == wire.BackendWorktree {
			continue // the kind itself is the admin's (TestHostBackendsAdminOnly)
		}
		own := "own-" + kind
		stored := json.RawMessage(`{"kind":"` + kind + `"}`)
		if err := h.store.CreateProvider(ctx, &wire.Provider{ID: own, TenantID: tenantB, Provider: kind, Config: stored}); err != nil {
			t.Fatal(err)
		}
		rules := backend.Rules(ty)
		for _, path := range slices.Sorted(func(yield func(string) bool) {
			for p := range rules {
				if !yield(p) {
					return
				}
			}
		}) {
			if rules[path].Kind != backend.AccessAdmin {
				continue
			}
			t.Run(kind+"/"+path, func(t *testing.T) {
				doc := setting(t, ty, path)
				field := "spec.config." + strings.TrimSuffix(path, ".0")
				msg := field + ": " + rules[path].Why + "; only an admin may set it"
				h.doAs(member, "POST", "/v1/providers", map[string]any{"id": "p-attack", "provider": kind, "config": doc}).
					expectError(t, 403, "forbidden", "", msg)
				if _, err := h.store.GetProvider(ctx, "p-attack"); !errs.Is(err, errs.NotFound) {
					t.Fatalf("refused create left a row: %v", err)
				}
				h.doAs(member, "PUT", "/v1/providers/"+own, map[string]any{"provider": kind, "config": doc}).
					expectError(t, 403, "forbidden", "", msg)
				if p, err := h.store.GetProvider(ctx, own); err != nil || string(p.Config) != string(stored) {
					t.Fatalf("refused update changed the row: %s, %v", p.Config, err)
				}
			})
		}
	}
	// Value rules: no credentials of its own means the platform's.
	for _, tt := range []struct{ name, config, msg string }{
		{"in cluster", `{"connection":{"kind":"in_cluster"},"reachability":{"kind":"pod_ip"}}`, "spec.config.connection.kind: in_cluster uses the Primer host's own service account"},
		{"empty kubeconfig", `{"connection":{"kind":"kubeconfig"},"reachability":{"kind":"pod_ip"}}`, "spec.config.connection.kubeconfig: left out, the platform's own kubeconfig is used"},
		{"kubeconfig context only", `{"connection":{"kind":"kubeconfig","context":"prod"},"reachability":{"kind":"pod_ip"}}`, "spec.config.connection.kubeconfig"},
	} {
		t.Run("kubernetes/"+tt.name, func(t *testing.T) {
			h.doAs(member, "POST", "/v1/providers", `{"id":"p-attack","provider":"kubernetes","config":`+tt.config+`}`).
				expectError(t, 403, "forbidden", "", tt.msg)
		})
	}
	// encoding/json matches keys without regard to case: so do the rules.
	h.doAs(member, "POST", "/v1/providers", `{"id":"p-attack","provider":"vm","config":{"Connection":{"PRIVATE_KEY_FILE":"/etc/shadow"}}}`).
		expectError(t, 403, "forbidden", "", "spec.config.connection.private_key_file: names a path on the Primer host")
	h.doAs(member, "POST", "/v1/llm-providers", `{"id":"l-attack","kind":"openai","base_url":"https://example.invalid/v1","api_key_env":"PRIMER_DATABASE_URL"}`).
		expectError(t, 403, "forbidden", "", "spec.api_key_env: names an environment variable of the Primer host; only an admin may set it")
	if _, err := h.store.GetLLMProvider(ctx, "l-attack"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("refused model provider left a row: %v", err)
	}
	if n := built.Load(); n != 0 {
		t.Fatalf("refused documents built %d backends; want none (nothing read on the host)", n)
	}
	// An admin may.
	h.do("POST", "/v1/providers", `{"id":"admin-net","provider":"container","config":{"connection":{"kind":"tcp","host":"10.0.0.1:2375"},"reachability":{"kind":"network","network":"primer-net"}}}`).expect(t, 201)
}

// secretsFixture are valid inline credentials of each kind, the field
// paths that hold them, and another endpoint for the same provider.
type secretsFixture struct {
	kind      string
	config    func(endpoint string) map[string]any
	endpoints [2]string
	secrets   []string // the values that must never be answered
	fields    []string // "connection.tls.key"
}

func inlineSecretFixtures(t *testing.T) []secretsFixture {
	t.Helper()
	// A self-signed certificate serves as CA and client certificate.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "primer-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))

	_, sshKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(sshKey, "")
	if err != nil {
		t.Fatal(err)
	}
	sshPEM := string(pem.EncodeToMemory(block))
	hostPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hk, err := ssh.NewPublicKey(hostPub)
	if err != nil {
		t.Fatal(err)
	}
	known := knownhosts.Line([]string{"10.0.0.5", "10.0.0.6"}, hk) + "\n"
	const token = "kube-token-s3cr3t-42"
	kubeconfig := func(server string) string {
		return "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server + "\n    insecure-skip-tls-verify: true\n" +
			"users:\n- name: u\n  user:\n    token: " + token + "\ncontexts:\n- name: ctx-a\n  context: {cluster: c, user: u}\n- name: ctx-b\n  context: {cluster: c, user: u}\ncurrent-context: ctx-a\n"
	}
	return []secretsFixture{
		{
			kind: wire.BackendContainer, endpoints: [2]string{"10.0.0.1:2376", "10.0.0.2:2376"},
			config: func(ep string) map[string]any {
				return map[string]any{"connection": map[string]any{"kind": "tcp", "host": ep, "tls": map[string]any{"ca": certPEM, "cert": certPEM, "key": keyPEM}},
					"reachability": map[string]any{"kind": "host_port"}}
			},
			secrets: []string{keyPEM, certPEM}, fields: []string{"connection.tls.ca", "connection.tls.cert", "connection.tls.key"},
		},
		{
			// The server is inside the secret; the context says which.
			kind: wire.BackendKubernetes, endpoints: [2]string{"ctx-a", "ctx-b"},
			config: func(ep string) map[string]any {
				return map[string]any{"connection": map[string]any{"kind": "kubeconfig", "kubeconfig": kubeconfig("https://10.0.0.1:6443"), "context": ep},
					"reachability": map[string]any{"kind": "pod_ip"}, "runtime_image": "primer/runtime:test"}
			},
			secrets: []string{token}, fields: []string{"connection.kubeconfig"},
		},
		{
			kind: wire.BackendVM, endpoints: [2]string{"10.0.0.5", "10.0.0.6"},
			config: func(ep string) map[string]any {
				return map[string]any{"connection": map[string]any{"user": "primer", "private_key": sshPEM, "known_hosts_data": known},
					"hosts": []any{map[string]any{"address": ep}}}
			},
			secrets: []string{sshPEM, "OPENSSH PRIVATE KEY", strings.TrimSpace(known)}, fields: []string{"connection.known_hosts_data", "connection.private_key"},
		},
	}
}

// withRedacted returns cfg with every secret field set to Redacted.
func withRedacted(cfg map[string]any, fields []string) map[string]any {
	raw, _ := json.Marshal(cfg)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	for _, f := range fields {
		parts := strings.Split(f, ".")
		cur := m
		for _, p := range parts[:len(parts)-1] {
			cur = cur[p].(map[string]any)
		}
		cur[parts[len(parts)-1]] = backend.Redacted
	}
	return m
}

// TestProviderInlineSecrets: a member gives remote credentials inline (a
// TLS client certificate, a kubeconfig, an SSH key and known_hosts lines);
// the backend accepts them, no answer carries them (Redacted in their
// place), Redacted sent back keeps them, and an update that changes the
// endpoint while sending Redacted is refused: the stored secret does not
// follow the provider to a new endpoint.
func TestProviderInlineSecrets(t *testing.T) {
	h, _ := accessHarness(t)
	ctx := context.Background()
	member := h.newKey(tenantB, wire.RoleMember)
	for _, fx := range inlineSecretFixtures(t) {
		t.Run(fx.kind, func(t *testing.T) {
			id := "inline-" + fx.kind
			noSecret := func(what string, body []byte) {
				t.Helper()
				for _, s := range fx.secrets {
					if strings.Contains(string(body), s) || strings.Contains(string(body), strings.ReplaceAll(s, "\n", `\n`)) {
						t.Fatalf("%s carries a secret: %s", what, body)
					}
				}
				if !strings.Contains(string(body), backend.Redacted) {
					t.Fatalf("%s has no %s: %s", what, backend.Redacted, body)
				}
			}
			storedHas := func(want bool) {
				t.Helper()
				p, err := h.store.GetProvider(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := json.Marshal(p.Config)
				for _, s := range fx.secrets[:1] {
					if got := strings.Contains(string(raw), strings.ReplaceAll(s, "\n", `\n`)); got != want {
						t.Fatalf("stored config holds the secret: %v, want %v", got, want)
					}
				}
			}
			cfg := fx.config(fx.endpoints[0])
			r := h.doAs(member, "POST", "/v1/providers", map[string]any{"id": id, "provider": fx.kind, "config": cfg}).expect(t, 201)
			noSecret("create answer", r.body)
			noSecret("get answer", h.doAs(member, "GET", "/v1/providers/"+id, nil).expect(t, 200).body)
			noSecret("list answer", h.doAs(member, "GET", "/v1/providers", nil).expect(t, 200).body)
			storedHas(true)

			// Round trip: what GET answers, PUT back, keeps the secrets.
			var got wire.Provider
			h.doAs(member, "GET", "/v1/providers/"+id, nil).decode(t, &got)
			r = h.doAs(member, "PUT", "/v1/providers/"+id, map[string]any{"provider": fx.kind, "config": got.Config}).expect(t, 200)
			noSecret("update answer", r.body)
			storedHas(true)

			// A new endpoint with the placeholder: refused, row unchanged.
			moved := withRedacted(fx.config(fx.endpoints[1]), fx.fields)
			before, _ := h.store.GetProvider(ctx, id)
			h.doAs(member, "PUT", "/v1/providers/"+id, map[string]any{"provider": fx.kind, "config": moved}).
				expectError(t, 400, "invalid", "spec.config."+fx.fields[0], "changed, so send the value again")
			after, _ := h.store.GetProvider(ctx, id)
			if string(after.Config) != string(before.Config) {
				t.Fatalf("refused update changed the row")
			}
			// A placeholder on create has nothing to keep.
			h.doAs(member, "POST", "/v1/providers", map[string]any{"id": id + "-2", "provider": fx.kind, "config": withRedacted(cfg, fx.fields)}).
				expectError(t, 400, "invalid", "spec.config."+fx.fields[0], "is a placeholder")
			// The new endpoint with the secrets sent again: fine.
			h.doAs(member, "PUT", "/v1/providers/"+id, map[string]any{"provider": fx.kind, "config": fx.config(fx.endpoints[1])}).expect(t, 200)
			storedHas(true)
		})
	}
}

// TestProviderAddressesOutbound: a member's container engine host,
// connect host, vm host or jump host on a loopback, link-local, metadata
// or unspecified address is refused (403 naming the field, no row), as an
// LLM base_url is; an admin's provider is the host's own and may name one.
func TestProviderAddressesOutbound(t *testing.T) {
	h, built := accessHarness(t)
	ctx := context.Background()
	member := h.newKey(tenantB, wire.RoleMember)
	fx := map[string]secretsFixture{}
	for _, f := range inlineSecretFixtures(t) {
		fx[f.kind] = f
	}
	set := func(cfg map[string]any, path string, v any) map[string]any {
		parts := strings.Split(path, ".")
		cur := cfg
		for _, p := range parts[:len(parts)-1] {
			cur = cur[p].(map[string]any)
		}
		cur[parts[len(parts)-1]] = v
		return cfg
	}
	for _, tc := range []struct {
		name, kind, field string
		cfg               map[string]any
	}{
		{"engine on loopback", wire.BackendContainer, "spec.config.connection.host", fx[wire.BackendContainer].config("tcp://127.0.0.1:2375")},
		{"engine on metadata", wire.BackendContainer, "spec.config.connection.host", fx[wire.BackendContainer].config("169.254.169.254:2376")},
		{"engine named localhost", wire.BackendContainer, "spec.config.connection.host", fx[wire.BackendContainer].config("localhost:2376")},
		{"connect host on loopback", wire.BackendContainer, "spec.config.reachability.connect_host",
			set(fx[wire.BackendContainer].config("10.0.0.1:2376"), "reachability.connect_host", "127.0.0.1")},
		{"vm host on loopback", wire.BackendVM, "spec.config.hosts.0.address", fx[wire.BackendVM].config("127.0.0.1:2222")},
		{"vm host unspecified", wire.BackendVM, "spec.config.hosts.0.address", fx[wire.BackendVM].config("0.0.0.0")},
		{"vm jump on ipv6 loopback", wire.BackendVM, "spec.config.connection.jump.address",
			set(fx[wire.BackendVM].config("10.0.0.5"), "connection.jump", map[string]any{"address": "::1"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := built.Load()
			r := h.doAs(member, "POST", "/v1/providers", map[string]any{"id": "addr-b", "provider": tc.kind, "config": tc.cfg})
			r.expect(t, 403)
			if !strings.Contains(string(r.body), tc.field) || !strings.Contains(string(r.body), "PRIMER_OUTBOUND_ALLOW") {
				t.Fatalf("refusal does not name %s and the allowlist: %s", tc.field, r.body)
			}
			if _, err := h.store.GetProvider(ctx, "addr-b"); err == nil {
				t.Fatal("the refused provider was stored")
			}
			if built.Load() != before {
				t.Fatal("a backend was built for the refused provider")
			}
		})
	}
	// A private address is a member's to use; an admin may name loopback.
	h.doAs(member, "POST", "/v1/providers", map[string]any{"id": "addr-ok", "provider": wire.BackendContainer,
		"config": fx[wire.BackendContainer].config("10.0.0.1:2376")}).expect(t, 201)
	h.do("POST", "/v1/providers", map[string]any{"id": "addr-admin", "provider": wire.BackendContainer,
		"config": fx[wire.BackendContainer].config("127.0.0.1:2376")}).expect(t, 201)
}
