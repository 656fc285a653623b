package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoStore: primectl speaks the API through api/client and the wire
// types; it links no store, ORM or database driver (issue 24), which would
// make it large and put server code in a user's binary.
func TestLinksNoStore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list -deps found %d packages; the listing went wrong", len(deps))
	}
	for _, d := range deps {
		for _, banned := range []string{"gorm.io/", "github.com/primerhq/primer/models", "sqlite", "jackc/pgx", "lib/pq", "go.temporal.io/"} {
			if strings.Contains(d, banned) {
				t.Errorf("primectl links %s (%s): the CLI must reach the server only through api/client and wire", d, banned)
			}
		}
	}
}
