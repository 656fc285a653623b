package backend_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

type testConn struct {
	Kind    string   `json:"kind" access:"any,endpoint"`
	Host    string   `json:"host,omitempty" access:"any,endpoint"`
	KeyFile string   `json:"key_file,omitempty" access:"admin:path"`
	Key     string   `json:"key,omitempty" access:"secret"`
	Argv    []string `json:"argv,omitempty" access:"admin:command"`
}

type testHost struct {
	Address string `json:"address" access:"any,endpoint"`
	EnvName string `json:"env_name,omitempty" access:"admin:env"`
}

type testConfig struct {
	Conn  testConn   `json:"connection" access:"any"`
	Hosts []testHost `json:"hosts,omitempty" access:"any"`
	Jump  *testConn  `json:"jump,omitempty" access:"any"`
	Note  string     `json:"note,omitempty" access:"any"`
}

func TestParseRule(t *testing.T) {
	tests := []struct {
		tag  string
		want backend.Rule
		bad  bool
	}{
		{"any", backend.Rule{Kind: backend.AccessAny}, false},
		{"any,endpoint", backend.Rule{Kind: backend.AccessAny, Endpoint: true}, false},
		{"secret", backend.Rule{Kind: backend.AccessSecret}, false},
		{"admin:path", backend.Rule{Kind: backend.AccessAdmin, Why: "names a path on the Primer host"}, false},
		{"admin", backend.Rule{}, true},
		{"admin:nonsense", backend.Rule{}, true},
		{"", backend.Rule{}, true},
		{"everyone", backend.Rule{}, true},
		{"any:why", backend.Rule{}, true},
		{"any,sometimes", backend.Rule{}, true},
	}
	for _, tt := range tests {
		got, err := backend.ParseRule(tt.tag)
		if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v, error %v", tt.tag, got, err, tt.want, tt.bad)
		}
	}
}

func TestAdminSettings(t *testing.T) {
	tests := []struct {
		name string
		cfg  testConfig
		want []string
	}{
		{"none", testConfig{Conn: testConn{Kind: "tcp", Host: "h:1", Key: "k"}, Hosts: []testHost{{Address: "a"}}}, nil},
		{"path", testConfig{Conn: testConn{KeyFile: "/etc/shadow"}}, []string{"x.connection.key_file"}},
		{"command in a pointer", testConfig{Jump: &testConn{Argv: []string{"/bin/true"}}}, []string{"x.jump.argv"}},
		{"env in a slice", testConfig{Hosts: []testHost{{Address: "a"}, {EnvName: "HOME"}}}, []string{"x.hosts.1.env_name"}},
		{"several", testConfig{Conn: testConn{KeyFile: "/k", Argv: []string{"/x"}}}, []string{"x.connection.key_file", "x.connection.argv"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range backend.AdminSettings(&tt.cfg, "x") {
				got = append(got, s.Path)
				if err := s.Err(); !errs.Is(err, errs.Forbidden) || !strings.HasPrefix(err.Error(), s.Path+": ") {
					t.Errorf("Err() = %v; want Forbidden naming %s", err, s.Path)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("AdminSettings = %v, want %v", got, tt.want)
			}
		})
	}
	// A field without a rule, set, counts as admin-only.
	type unruled struct {
		A string `json:"a"`
	}
	if got := backend.AdminSettings(&unruled{A: "x"}, "x"); len(got) != 1 || got[0].Path != "x.a" {
		t.Fatalf("AdminSettings of a field without a rule = %v; want it refused", got)
	}
	if err := backend.CheckRules(reflect.TypeOf(unruled{})); err == nil {
		t.Fatal("CheckRules passed a field without a rule")
	}
	if err := backend.CheckRules(reflect.TypeOf(testConfig{})); err != nil {
		t.Fatal(err)
	}
}

func TestSecrets(t *testing.T) {
	stored := testConfig{Conn: testConn{Kind: "tcp", Host: "h:1", Key: "s3cret"}}
	tests := []struct {
		name    string
		update  testConfig
		old     *testConfig
		wantKey string
		field   string // of the error; "" for none
	}{
		{"placeholder kept", testConfig{Conn: testConn{Kind: "tcp", Host: "h:1", Key: backend.Redacted}}, &stored, "s3cret", ""},
		{"new value", testConfig{Conn: testConn{Kind: "tcp", Host: "h:1", Key: "new"}}, &stored, "new", ""},
		{"endpoint moved", testConfig{Conn: testConn{Kind: "tcp", Host: "evil:1", Key: backend.Redacted}}, &stored, "", "x.connection.key"},
		{"endpoint added", testConfig{Conn: testConn{Kind: "tcp", Host: "h:1", Key: backend.Redacted}, Hosts: []testHost{{Address: "evil"}}}, &stored, "", "x.connection.key"},
		{"endpoint moved, value sent", testConfig{Conn: testConn{Kind: "tcp", Host: "evil:1", Key: "mine"}}, &stored, "mine", ""},
		{"create", testConfig{Conn: testConn{Key: backend.Redacted}}, nil, "", "x.connection.key"},
		{"nothing stored", testConfig{Conn: testConn{Kind: "tcp", Host: "h:1", Key: backend.Redacted}}, &testConfig{Conn: testConn{Kind: "tcp", Host: "h:1"}}, "", "x.connection.key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.update
			var old any
			if tt.old != nil {
				old = tt.old
			}
			_, err := backend.RestoreSecrets(&cfg, old, "x")
			if tt.field != "" {
				if errs.FieldOf(err) != tt.field || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("RestoreSecrets = %v; want an error naming %s and not the secret", err, tt.field)
				}
				return
			}
			if err != nil || cfg.Conn.Key != tt.wantKey {
				t.Fatalf("RestoreSecrets: key %q, %v; want %q", cfg.Conn.Key, err, tt.wantKey)
			}
		})
	}
	c := stored
	if !backend.RedactSecrets(&c) || c.Conn.Key != backend.Redacted || stored.Conn.Key != "s3cret" {
		t.Fatalf("RedactSecrets: %+v", c)
	}
	if backend.RedactSecrets(&testConfig{}) {
		t.Fatal("RedactSecrets found a secret in an empty config")
	}
}
