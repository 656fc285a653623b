package backend_test

import (
	"strings"
	"testing"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

func TestHarnessTOML(t *testing.T) {
	const key = "sk-live-7f3a9c"
	env := map[string]string{"OPENAI_API_KEY": key, "LOG_LEVEL": "dbg", "PORT": "8080"}
	tests := []struct {
		name string
		toml string
		// want are substrings of the error; none means valid.
		want []string
	}{
		{"empty is no file", "", nil},
		{"valid", "[model]\nname = \"gpt\"\napi_key_env = \"OPENAI_API_KEY\"\n", nil},
		{"comments only", "# nothing yet\n", nil},
		{"short env value is not compared", "level = \"dbg\"\n", nil},
		{"number equal to an env value is a setting", "port = 8080\n", nil},
		{"env name is not its value", "OPENAI_API_KEY = \"from env\"\n", nil},

		{"invalid: unterminated string", "a = 1\nb = \"x\n", []string{"invalid TOML", "line 2, column"}},
		{"invalid: duplicate key", "a = 1\n\n\na = 2\n", []string{"invalid TOML at line 4", "key a is already defined"}},
		{"invalid: bare value", "[t]\nx = y\n", []string{"invalid TOML", "line 2"}},

		{"value in a table", "[model]\napi_key = \"" + key + "\"\n", []string{"key model.api_key", "env OPENAI_API_KEY"}},
		{"value inside a longer string", "[model]\nheader = \"Bearer " + key + "\"\n", []string{"key model.header", "env OPENAI_API_KEY"}},
		{"value in a nested table", "[a.b]\nc = \"" + key + "\"\n", []string{"key a.b.c", "env OPENAI_API_KEY"}},
		{"value in a dotted key", "a.b.c = \"" + key + "\"\n", []string{"key a.b.c"}},
		{"value in an inline table", "srv = { url = \"http://h\", token = \"" + key + "\" }\n", []string{"key srv.token"}},
		{"value in an array", "keys = [\"one\", \"" + key + "\"]\n", []string{"key keys[1]"}},
		{"value in an array of tables", "[[servers]]\nt = \"x\"\n[[servers]]\nt = \"" + key + "\"\n", []string{"key servers[1].t"}},
		{"value escaped in the TOML", "k = \"\\u0073k-live-7f3a9c\"\n", []string{"key k"}},
		{"value in a multi-line string", "k = \"\"\"\nline\n" + key + "\n\"\"\"\n", []string{"key k"}},
		{"value as a key", "[t.\"" + key + "\"]\nx = 1\n", []string{"a key of t", "env OPENAI_API_KEY"}},
		{"value in a comment", "a = 1\n\n# old key: " + key + "\nb = 2\n", []string{"comment on line 3", "env OPENAI_API_KEY"}},
		{"value in a trailing comment", "a = 1 # " + key + "\n", []string{"comment on line 1"}},
		{"value in a comment inside an array", "a = [\n  1, # " + key + "\n  2,\n]\n", []string{"comment on line 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := backend.HarnessTOML("spec.backend.config_toml", tt.toml, env)
			if len(tt.want) == 0 {
				if err != nil || string(got) != tt.toml {
					t.Fatalf("HarnessTOML = %q, %v; want the document back", got, err)
				}
				if tt.toml == "" && got != nil {
					t.Fatalf("empty config_toml gave %q, want no file", got)
				}
				return
			}
			if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "spec.backend.config_toml" {
				t.Fatalf("HarnessTOML = %v (field %q), want invalid naming spec.backend.config_toml", err, errs.FieldOf(err))
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, key) || strings.Contains(msg, "sk-live") {
				t.Errorf("error %q prints the env value", msg)
			}
		})
	}
}

func TestCommonValidateHarness(t *testing.T) {
	c := backend.Common{ConfigTOML: "a = 1\n", Files: map[string]string{"./harness.toml": "b = 2\n"}}
	if err := c.Validate("spec.backend"); errs.FieldOf(err) != "spec.backend.files" {
		t.Errorf("files[harness.toml] beside config_toml: %v, want invalid naming spec.backend.files", err)
	}
	c = backend.Common{ConfigTOML: "token = \"s3cret-value\"\n", Env: map[string]string{"TOKEN": "s3cret-value"}}
	if err := c.Validate("spec.backend"); errs.FieldOf(err) != "spec.backend.config_toml" {
		t.Errorf("env value in config_toml: %v, want invalid naming spec.backend.config_toml", err)
	}
	c = backend.Common{ConfigTOML: "[x\n"}
	if err := c.Validate("spec.backend"); errs.FieldOf(err) != "spec.backend.config_toml" {
		t.Errorf("invalid TOML: %v, want invalid naming spec.backend.config_toml", err)
	}
}
