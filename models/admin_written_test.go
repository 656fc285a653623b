package models

import (
	"encoding/json"
	"testing"

	"github.com/primerhq/primer/wire"
)

// TestEnsureDefaultsAdminWritten: the seeded default template is the
// admin's (the host rule lets it run on local); one stored before the
// rule is marked so only while it is still the seed, never one changed
// since (a member's edit from before the rule stays refused).
func TestEnsureDefaultsAdminWritten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend string
		gen     int64
		want    bool
	}{
		{"the seed", seedTemplate, 1, true},
		{"edited since", `{"kind":"local","init":["touch /tmp/x"]}`, 2, false},
		{"same document, updated", seedTemplate, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTestSQLite(t)
			ctx := t.Context()
			must(t, s.EnsureDefaults(ctx, t.TempDir()))
			got, err := s.GetTemplate(ctx, wire.DefaultTemplateID)
			must(t, err)
			if !got.AdminWritten {
				t.Fatal("a fresh default template is not admin-written")
			}
			// As stored before the rule: no mark, maybe edited.
			must(t, s.w.Model(&wire.Template{}).Where("id = ?", wire.DefaultTemplateID).UpdateColumns(map[string]any{
				"admin_written": false, "generation": tc.gen, "backend": jsonColumn(json.RawMessage(tc.backend)),
			}).Error)
			must(t, s.EnsureDefaults(ctx, t.TempDir()))
			got, err = s.GetTemplate(ctx, wire.DefaultTemplateID)
			must(t, err)
			if got.AdminWritten != tc.want {
				t.Errorf("after the upgrade admin_written = %v, want %v", got.AdminWritten, tc.want)
			}
		})
	}
}
