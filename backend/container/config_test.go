package container

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/primerhq/primer/errs"
)

func TestParseProviderConfig(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		wantField string // empty: valid
		check     func(t *testing.T, c ProviderConfig)
	}{
		{"docker socket", `{"kind":"container","runtime":"docker","connection":{"kind":"socket","socket_path":"/var/run/docker.sock"},"reachability":{"kind":"host_port","bind_host":"127.0.0.1"}}`, "", func(t *testing.T, c ProviderConfig) {
			if c.Reachability.ConnectHost != "127.0.0.1" {
				t.Errorf("connect host = %q, want the bind host", c.Reachability.ConnectHost)
			}
		}},
		{"defaults", `{"connection":{"kind":"socket","socket_path":"/run/podman/podman.sock"},"reachability":{"kind":"host_port"}}`, "", func(t *testing.T, c ProviderConfig) {
			if c.Runtime != EngineDocker || c.Reachability.BindHost != "127.0.0.1" || c.Kind != Type {
				t.Errorf("defaults = %+v", c)
			}
		}},
		{"wildcard bind dials the tcp engine host", `{"connection":{"kind":"tcp","host":"tcp://10.0.0.5:2376","tls":{"ca_file":"a","cert_file":"b","key_file":"c"}},"reachability":{"kind":"host_port","bind_host":"0.0.0.0"}}`, "", func(t *testing.T, c ProviderConfig) {
			if c.Reachability.ConnectHost != "10.0.0.5" || c.Connection.Host != "10.0.0.5:2376" {
				t.Errorf("tcp = %+v", c)
			}
		}},
		{"network", `{"runtime":"podman","connection":{"kind":"socket","socket_path":"/s"},"reachability":{"kind":"network","network":"primer-net"}}`, "", nil},
		{"unknown runtime", `{"runtime":"lxc","connection":{"kind":"socket","socket_path":"/s"},"reachability":{"kind":"host_port"}}`, "spec.config.runtime", nil},
		{"wrong kind", `{"kind":"local","connection":{"kind":"socket","socket_path":"/s"},"reachability":{"kind":"host_port"}}`, "spec.config.kind", nil},
		{"no connection", `{"reachability":{"kind":"host_port"}}`, "spec.config.connection.kind", nil},
		{"relative socket", `{"connection":{"kind":"socket","socket_path":"docker.sock"},"reachability":{"kind":"host_port"}}`, "spec.config.connection.socket_path", nil},
		{"socket with host", `{"connection":{"kind":"socket","socket_path":"/s","host":"h:1"},"reachability":{"kind":"host_port"}}`, "spec.config.connection", nil},
		{"tcp without port", `{"connection":{"kind":"tcp","host":"example"},"reachability":{"kind":"host_port"}}`, "spec.config.connection.host", nil},
		{"partial tls", `{"connection":{"kind":"tcp","host":"h:2376","tls":{"ca_file":"a"}},"reachability":{"kind":"host_port"}}`, "spec.config.connection.tls.cert", nil},
		{"inline tls", `{"connection":{"kind":"tcp","host":"h:2376","tls":{"ca":"A","cert":"C","key":"K"}},"reachability":{"kind":"host_port"}}`, "", nil},
		{"tls file and value", `{"connection":{"kind":"tcp","host":"h:2376","tls":{"ca":"A","ca_file":"/a","cert":"C","key":"K"}},"reachability":{"kind":"host_port"}}`, "spec.config.connection.tls.ca", nil},
		{"bad bind host", `{"connection":{"kind":"socket","socket_path":"/s"},"reachability":{"kind":"host_port","bind_host":"localhost"}}`, "spec.config.reachability.bind_host", nil},
		{"network without name", `{"connection":{"kind":"socket","socket_path":"/s"},"reachability":{"kind":"network"}}`, "spec.config.reachability.network", nil},
		{"unknown reachability", `{"connection":{"kind":"socket","socket_path":"/s"},"reachability":{"kind":"nodeport"}}`, "spec.config.reachability.kind", nil},
		{"unknown field", `{"connection":{"kind":"socket","socket_path":"/s"},"reachability":{"kind":"host_port"},"privileged":true}`, "spec.config.privileged", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseProviderConfig(json.RawMessage(tt.doc))
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("ParseProviderConfig = %v, want nil", err)
				}
				if tt.check != nil {
					tt.check(t, c)
				}
				return
			}
			if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.wantField {
				t.Fatalf("ParseProviderConfig = %v (field %q), want invalid %s", err, errs.FieldOf(err), tt.wantField)
			}
		})
	}
}

func TestParseTemplate(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		wantField string
		check     func(t *testing.T, tp Template)
	}{
		{"defaults", `{"kind":"container","image":"primer/python:1.0"}`, "", func(t *testing.T, tp Template) {
			if tp.Workdir != "/workspace" || tp.PidsLimit != DefaultPidsLimit || tp.Network.Egress != EgressAllow {
				t.Errorf("defaults = %+v", tp)
			}
		}},
		{"recipe", `{"kind":"container","image":"primer/python:1.0","cpu_cores":1,"memory_bytes":536870912,"network":{"egress":"deny_all"},"labels":{"team":"evals"},"workdir":"/home/agent"}`, "", func(t *testing.T, tp Template) {
			if tp.Network.Egress != EgressDenyAll || tp.MemoryBytes != 512<<20 || tp.Workdir != "/home/agent" {
				t.Errorf("recipe = %+v", tp)
			}
		}},
		{"no image", `{"kind":"container"}`, "spec.backend.image", nil},
		{"image with space", `{"kind":"container","image":"a b"}`, "spec.backend.image", nil},
		{"negative cpu", `{"kind":"container","image":"x","cpu_cores":-1}`, "spec.backend.cpu_cores", nil},
		{"tiny memory", `{"kind":"container","image":"x","memory_bytes":1024}`, "spec.backend.memory_bytes", nil},
		{"negative pids", `{"kind":"container","image":"x","pids_limit":-5}`, "spec.backend.pids_limit", nil},
		{"tiny pids", `{"kind":"container","image":"x","pids_limit":3}`, "spec.backend.pids_limit", nil},
		{"bad egress", `{"kind":"container","image":"x","network":{"egress":"some"}}`, "spec.backend.network.egress", nil},
		{"relative workdir", `{"kind":"container","image":"x","workdir":"work"}`, "spec.backend.workdir", nil},
		{"system workdir", `{"kind":"container","image":"x","workdir":"/etc"}`, "spec.backend.workdir", nil},
		{"unclean workdir", `{"kind":"container","image":"x","workdir":"/w/../etc"}`, "spec.backend.workdir", nil},
		{"platform label", `{"kind":"container","image":"x","labels":{"primer.workspace":"other"}}`, "spec.backend.labels", nil},
		{"wrong type", `{"kind":"container","image":"x","memory_bytes":"512Mi"}`, "spec.backend.memory_bytes", nil},
		{"escaping file", `{"kind":"container","image":"x","files":{"../etc/passwd":"x"}}`, "spec.backend.files", nil},
		{"wrong kind", `{"kind":"local","image":"x"}`, "spec.backend.kind", nil},
		{"user", `{"kind":"container","image":"x","user":"user"}`, "", func(t *testing.T, tp Template) {
			if tp.User != "user" {
				t.Errorf("user = %q", tp.User)
			}
		}},
		{"bad user", `{"kind":"container","image":"x","user":"Root:0"}`, "spec.backend.user", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := ParseTemplate(json.RawMessage(tt.doc))
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("ParseTemplate = %v, want nil", err)
				}
				tt.check(t, tp)
				return
			}
			if !errs.Is(err, errs.Invalid) || !strings.HasPrefix(errs.FieldOf(err), tt.wantField) {
				t.Fatalf("ParseTemplate = %v (field %q), want invalid %s", err, errs.FieldOf(err), tt.wantField)
			}
		})
	}
}

func TestRuntimeBinaryRefusesMissingAndDynamic(t *testing.T) {
	if _, err := NewRuntimeBinary("/nonexistent/primer-runtime").Tar(); !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "PRIMER_RUNTIME_BINARY") {
		t.Errorf("missing binary: %v, want an invalid error saying how to set it", err)
	}
	// /bin/sh is dynamically linked on Debian: it would not start in an
	// arbitrary image.
	if _, err := NewRuntimeBinary("/bin/sh").Tar(); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("dynamic binary: %v, want it refused", err)
	}
}
