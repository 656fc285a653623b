package vm

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/primerhq/primer/errs"
)

// testConnection returns a valid connection document with a key file and
// a known_hosts file in t's temporary directory.
func testConnection(t *testing.T) map[string]any {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key, kh := filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]any{"user": "root", "private_key_file": key, "known_hosts": kh}
}

func TestParseProviderConfig(t *testing.T) {
	conn := testConnection(t)
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for k, v := range conn {
			m[k] = v
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	hosts := []any{map[string]any{"address": "10.0.0.5", "labels": map[string]string{"gpu": "a100"}, "max_workspaces": 8}}
	machines := map[string]any{"create": []string{"/opt/create.sh"}, "destroy": []string{"/opt/destroy.sh"}, "timeout": "2m"}
	tests := []struct {
		name      string
		doc       map[string]any
		wantField string // empty: valid
	}{
		{"hosts", map[string]any{"connection": conn, "hosts": hosts}, ""},
		{"machines", map[string]any{"connection": conn, "machines": machines}, ""},
		{"kind vm", map[string]any{"kind": "vm", "connection": conn, "hosts": hosts}, ""},
		{"wrong kind", map[string]any{"kind": "container", "connection": conn, "hosts": hosts}, "spec.config.kind"},
		{"no known_hosts", map[string]any{"connection": with("known_hosts", nil), "hosts": hosts}, "spec.config.connection.known_hosts"},
		{"unreadable key file", map[string]any{"connection": with("private_key_file", "/no/such/key"), "hosts": hosts}, "spec.config.connection.private_key_file"},
		{"no key", map[string]any{"connection": with("private_key_file", nil), "hosts": hosts}, "spec.config.connection.private_key"},
		{"empty host list", map[string]any{"connection": conn, "hosts": []any{}}, "spec.config.hosts"},
		{"neither hosts nor machines", map[string]any{"connection": conn}, "spec.config.hosts"},
		{"both hosts and machines", map[string]any{"connection": conn, "hosts": hosts, "machines": machines}, "spec.config.machines"},
		{"zero max_workspaces", map[string]any{"connection": conn, "hosts": []any{map[string]any{"address": "h", "max_workspaces": 0}}}, "spec.config.hosts.0.max_workspaces"},
		{"negative max_workspaces", map[string]any{"connection": conn, "hosts": []any{map[string]any{"address": "h", "max_workspaces": -1}}}, "spec.config.hosts.0.max_workspaces"},
		{"max_workspaces not a number", map[string]any{"connection": conn, "hosts": []any{map[string]any{"address": "h", "max_workspaces": "8"}}}, "spec.config.hosts"},
		{"empty address", map[string]any{"connection": conn, "hosts": []any{map[string]any{"address": ""}}}, "spec.config.hosts.0.address"},
		{"address with user", map[string]any{"connection": conn, "hosts": []any{map[string]any{"address": "root@h"}}}, "spec.config.hosts.0.address"},
		{"address twice", map[string]any{"connection": conn, "hosts": []any{map[string]any{"address": "h"}, map[string]any{"address": "h:22"}}}, "spec.config.hosts.1.address"},
		{"unknown host field", map[string]any{"connection": conn, "hosts": []any{map[string]any{"address": "h", "cpus": 4}}}, "spec.config.hosts.0.cpus"},
		{"machines without destroy", map[string]any{"connection": conn, "machines": map[string]any{"create": []string{"/c"}}}, "spec.config.machines.destroy"},
		{"machines relative create", map[string]any{"connection": conn, "machines": map[string]any{"create": []string{"create.sh"}, "destroy": []string{"/d"}}}, "spec.config.machines.create"},
		{"machines bad timeout", map[string]any{"connection": conn, "machines": map[string]any{"create": []string{"/c"}, "destroy": []string{"/d"}, "timeout": "soon"}}, "spec.config.machines.timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseProviderConfig(raw)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("ParseProviderConfig(%s) = %v, want nil", raw, err)
				}
				return
			}
			if !errs.Is(err, errs.Invalid) || !strings.HasPrefix(errs.FieldOf(err), tt.wantField) {
				t.Fatalf("ParseProviderConfig(%s) = %v (field %q), want invalid naming %s", raw, err, errs.FieldOf(err), tt.wantField)
			}
		})
	}
}

func TestParseTemplate(t *testing.T) {
	tests := []struct {
		doc       string
		wantField string // empty: valid
		wantRoot  string
		wantMem   int64
	}{
		{`{"kind":"vm"}`, "", DefaultRoot, 0},
		{`{"kind":"vm","root":"/srv/primer/","user":"primer-ws","selector":{"gpu":"a100"},"cpu":1.5,"memory":"2Gi"}`, "", "/srv/primer", 2 << 30},
		{`{"kind":"vm","root":"srv"}`, "spec.backend.root", "", 0},
		{`{"kind":"vm","root":"/"}`, "spec.backend.root", "", 0},
		{`{"kind":"vm","root":"/srv/a b"}`, "spec.backend.root", "", 0},
		{`{"kind":"vm","root":"/var/lib/primer/ws"}`, "spec.backend.root", "", 0},
		{`{"kind":"vm","user":"Root;rm"}`, "spec.backend.user", "", 0},
		{`{"kind":"vm","cpu":-1}`, "spec.backend.cpu", "", 0},
		{`{"kind":"vm","memory":"lots"}`, "spec.backend.memory", "", 0},
		{`{"kind":"vm","memory":"1Mi"}`, "spec.backend.memory", "", 0},
		{`{"kind":"vm","selector":{"":"x"}}`, "spec.backend.selector", "", 0},
		{`{"kind":"vm","image":"x"}`, "spec.backend.image", "", 0},
		{`{"kind":"container"}`, "spec.backend.kind", "", 0},
	}
	for _, tt := range tests {
		got, err := ParseTemplate(json.RawMessage(tt.doc))
		if tt.wantField == "" {
			if err != nil || got.Root != tt.wantRoot || got.memBytes != tt.wantMem {
				t.Errorf("ParseTemplate(%s) = root %q memory %d, %v; want %q, %d", tt.doc, got.Root, got.memBytes, err, tt.wantRoot, tt.wantMem)
			}
			continue
		}
		if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.wantField {
			t.Errorf("ParseTemplate(%s) = %v (field %q), want invalid naming %s", tt.doc, err, errs.FieldOf(err), tt.wantField)
		}
	}
}
