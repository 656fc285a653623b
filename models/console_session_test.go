package models

import (
	"context"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// testConsoleSessions checks the stored console sessions: found by the
// token's hash only, bounded per key and in all, expired ones gone, and a
// revoked key's sessions ended.
func testConsoleSessions(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "team"}))
	a := childKey(t, ctx, s, "team", wire.RoleMember, "", nil)
	b := childKey(t, ctx, s, "team", wire.RoleViewer, "", nil)
	now := time.Now()
	mk := func(k *wire.APIKey, expires time.Time, perKey, max int) (string, error) {
		tok, hash := NewConsoleToken()
		if !IsConsoleToken(tok) || hash == tok {
			t.Fatalf("NewConsoleToken() = %q, %q", tok, hash)
		}
		return hash, s.CreateConsoleSession(ctx, &ConsoleSession{Hash: hash, KeyID: k.ID, TenantID: k.TenantID, Role: k.Role, ExpiresAt: expires}, perKey, max)
	}
	// Key a at its cap of 2: the earliest-expiring (least recently used) ends.
	a1, err := mk(a, now.Add(time.Hour), 2, 10)
	must(t, err)
	a2, err := mk(a, now.Add(2*time.Hour), 2, 10)
	must(t, err)
	a3, err := mk(a, now.Add(3*time.Hour), 2, 10)
	must(t, err)
	_, err = s.ConsoleSession(ctx, a1)
	wantErr(t, err, errs.NotFound, "console session")
	for _, h := range []string{a2, a3} {
		cs, err := s.ConsoleSession(ctx, h)
		must(t, err)
		if cs.KeyID != a.ID || cs.TenantID != "team" || cs.Role != wire.RoleMember {
			t.Errorf("ConsoleSession = %+v, want key %s of team, member", cs, a.ID)
		}
	}
	// Three in all, max 3: b's sign-in is refused; a at its own cap is not.
	_, err = mk(b, now.Add(time.Hour), 2, 3)
	must(t, err)
	_, err = mk(b, now.Add(time.Hour), 2, 3)
	wantErr(t, err, errs.Exhausted, "3 sessions are signed in")
	// An expired session is not found, and swept.
	old, err := mk(b, now.Add(-time.Second), 5, 10)
	must(t, err)
	_, err = s.ConsoleSession(ctx, old)
	wantErr(t, err, errs.NotFound, "console session")
	n, err := s.SweepConsoleSessions(ctx, time.Now())
	must(t, err)
	if n != 3 {
		t.Errorf("after sweep %d sessions remain, want 3", n)
	}
	// Touch moves the expiry.
	must(t, s.TouchConsoleSession(ctx, a2, now.Add(5*time.Hour)))
	if cs, err := s.ConsoleSession(ctx, a2); err != nil || cs.ExpiresAt.Before(now.Add(4*time.Hour)) {
		t.Errorf("after touch: %+v, %v; want expiry in 5 h", cs, err)
	}
	// Revoking a ends its sessions: not found, and the sweep removes the rest.
	_, _, err = s.RevokeAPIKey(ctx, a.ID)
	must(t, err)
	_, err = s.ConsoleSession(ctx, a2)
	wantErr(t, err, errs.NotFound, "revoked")
	n, err = s.SweepConsoleSessions(ctx, time.Now())
	must(t, err)
	if n != 1 {
		t.Errorf("after revoking a, %d sessions remain, want 1 (b's)", n)
	}
}
