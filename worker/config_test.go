package worker

import (
	"strings"
	"testing"

	"github.com/primerhq/primer/errs"
)

func TestConfigRoles(t *testing.T) {
	const pg = "postgres://u:p@127.0.0.1:5432/db"
	cases := []struct {
		name      string
		cfg       Config
		wantField string // "" = valid
		wantMsg   string
	}{
		{"default is all on embedded defaults", Config{}, "", ""},
		{"all on an external cluster and PostgreSQL", Config{Role: RoleAll, TemporalAddress: "t:7233", DatabaseURL: pg}, "", ""},
		{"api on an external cluster and PostgreSQL", Config{Role: RoleAPI, TemporalAddress: "t:7233", DatabaseURL: pg}, "", ""},
		{"worker on an external cluster and PostgreSQL", Config{Role: RoleWorker, TemporalAddress: "t:7233", DatabaseURL: "postgresql://u@h/db"}, "", ""},
		{"unknown role", Config{Role: "both"}, "role", `role "both": want all, api or worker`},
		{"api on the embedded server", Config{Role: RoleAPI, DatabaseURL: pg}, "temporal_address", "PRIMER_TEMPORAL_ADDRESS"},
		{"worker on the embedded server", Config{Role: RoleWorker, DatabaseURL: pg}, "temporal_address", "embedded server serves only --role all"},
		{"api on SQLite", Config{Role: RoleAPI, TemporalAddress: "t:7233"}, "database_url", "PRIMER_DATABASE_URL=postgres://"},
		{"worker on an explicit SQLite file", Config{Role: RoleWorker, TemporalAddress: "t:7233", DatabaseURL: "sqlite:///tmp/x.db"}, "database_url", "SQLite serves only --role all"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.DataDir = t.TempDir()
			cfg.Defaults()
			err := cfg.Validate()
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				if tc.cfg.Role == "" && cfg.Role != RoleAll {
					t.Errorf("default role = %q, want all", cfg.Role)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil, want an error on %s", tc.wantField)
			}
			if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tc.wantField {
				t.Errorf("Validate: %v (kind %s, field %q), want invalid on %s", err, errs.KindOf(err), errs.FieldOf(err), tc.wantField)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Validate: %q, want it to say %q", err, tc.wantMsg)
			}
		})
	}
}
