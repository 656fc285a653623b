package vm

import (
	"strings"
	"testing"

	"github.com/primerhq/primer/errs"
)

// TestCheckUser: root, the connection's user and an empty user (the
// connection's) are refused, naming spec.backend.user, unless the provider
// sets allow_root_user; another user passes (the host checks it again).
func TestCheckUser(t *testing.T) {
	for _, tt := range []struct {
		name     string
		connUser string
		user     string
		allow    bool
		want     string // "" for no error, else a part of the message
	}{
		{"root", "root", "root", false, `"root" runs workspaces as root`},
		{"empty user, root connection", "root", "", false, "the connection's user, root"},
		{"the sudo connection user", "deploy", "deploy", false, `"deploy" is the connection's user`},
		{"empty user, sudo connection", "deploy", "", false, "the connection's user deploy"},
		{"root with a sudo connection", "deploy", "root", false, `"root" runs workspaces as root`},
		{"unprivileged", "root", "primer-ws", false, ""},
		{"root allowed", "root", "root", true, ""},
		{"empty allowed", "deploy", "", true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ProviderConfig{Connection: Connection{User: tt.connUser}, AllowRootUser: tt.allow}
			err := c.checkUser(Template{User: tt.user})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("checkUser = %v, want nil", err)
				}
				return
			}
			if !errs.Is(err, errs.Forbidden) || errs.FieldOf(err) != "spec.backend.user" ||
				!strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "allow_root_user") {
				t.Fatalf("checkUser = %v (kind %v, field %q), want forbidden on spec.backend.user saying %q and allow_root_user",
					err, errs.KindOf(err), errs.FieldOf(err), tt.want)
			}
		})
	}
}
