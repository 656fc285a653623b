package models

import (
	"sync"
	"testing"
	"time"
)

// TestGatewaySpendSince: a workspace's and a tenant's spend count only
// their own calls since the given time; on every dialect.
func TestGatewaySpendSince(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			ctx := t.Context()
			now := time.Now().UTC()
			for _, u := range []GatewayUsage{
				{TenantID: "t1", WorkspaceID: "ws-a", Model: "m", Status: 200, InputTokens: 3, OutputTokens: 4, CreatedAt: now},
				{TenantID: "t1", WorkspaceID: "ws-b", Model: "m", Status: 200, InputTokens: 10, CreatedAt: now},
				{TenantID: "t1", WorkspaceID: "ws-a", Model: "m", Status: 200, InputTokens: 100, CreatedAt: now.Add(-2 * time.Hour)},
				{TenantID: "t2", WorkspaceID: "ws-c", Model: "m", Status: 200, InputTokens: 1000, CreatedAt: now},
			} {
				if over, _, err := s.ReserveGatewayCall(ctx, &u, nil); err != nil || over >= 0 {
					t.Fatal(over, err)
				}
			}
			since := now.Add(-time.Hour)
			if got, err := s.GatewaySpendSince(ctx, "t1", "ws-a", since); err != nil || got != (GatewaySpend{Requests: 1, Tokens: 7}) {
				t.Errorf("workspace ws-a: %+v, %v; want 1 request, 7 tokens", got, err)
			}
			if got, err := s.GatewaySpendSince(ctx, "t1", "", since); err != nil || got != (GatewaySpend{Requests: 2, Tokens: 17}) {
				t.Errorf("tenant t1: %+v, %v; want 2 requests, 17 tokens", got, err)
			}
		})
	}
}

// TestGatewayUsageReservation: a call's row counts as a request from the
// moment it is reserved, takes its tokens when finished, and no longer
// counts once dropped; a bound used up writes nothing and names itself;
// and of calls reserved at once against one request left in a budget,
// exactly one passes. On every dialect.
func TestGatewayUsageReservation(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			ctx := t.Context()
			since := time.Now().UTC().Add(-time.Hour)
			spent := func() GatewaySpend {
				t.Helper()
				got, err := s.GatewaySpendSince(ctx, "t1", "ws-a", since)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			reserve := func(bounds ...GatewayBound) (*GatewayUsage, int, GatewaySpend) {
				t.Helper()
				u := &GatewayUsage{TenantID: "t1", WorkspaceID: "ws-a", Model: "m"}
				over, got, err := s.ReserveGatewayCall(ctx, u, bounds)
				if err != nil {
					t.Fatal(err)
				}
				return u, over, got
			}
			kept, _, _ := reserve()
			dropped, _, _ := reserve()
			if got := spent(); got != (GatewaySpend{Requests: 2}) {
				t.Fatalf("two calls in flight: %+v, want 2 requests, no tokens", got)
			}
			kept.SessionID, kept.Status, kept.InputTokens, kept.OutputTokens = "se-1", 200, 5, 6
			if err := s.FinishGatewayUsage(ctx, kept); err != nil {
				t.Fatal(err)
			}
			if err := s.DropGatewayUsage(ctx, dropped.ID); err != nil {
				t.Fatal(err)
			}
			if got := spent(); got != (GatewaySpend{Requests: 1, Tokens: 11}) {
				t.Fatalf("one finished, one dropped: %+v, want 1 request, 11 tokens", got)
			}
			rows, err := s.GatewayUsageOf(ctx, "ws-a")
			if err != nil || len(rows) != 1 || rows[0].SessionID != "se-1" || rows[0].Status != 200 {
				t.Fatalf("rows %+v, %v; want the finished call with its session and status", rows, err)
			}

			// Another workspace's bound is untouched; the tenant's tokens
			// (11 of 11) are used up: the second bound refuses, nothing
			// is written.
			_, over, got := reserve(GatewayBound{WorkspaceID: "ws-b", Requests: 1, Since: since}, GatewayBound{Tokens: 11, Since: since})
			if over != 1 || got != (GatewaySpend{Requests: 1, Tokens: 11}) || spent().Requests != 1 {
				t.Fatalf("over the tenant's tokens: bound %d, spent %+v, %d rows; want bound 1, 1 request and 11 tokens, nothing written", over, got, spent().Requests)
			}

			// One request left of 4: of 10 callers at once, one passes.
			const callers = 10
			passed := make([]bool, callers)
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					u := &GatewayUsage{TenantID: "t1", WorkspaceID: "ws-a", Model: "m"}
					over, _, err := s.ReserveGatewayCall(ctx, u, []GatewayBound{{WorkspaceID: "ws-a", Requests: 4, Since: since}, {Requests: 4, Since: since}})
					if err != nil {
						t.Error(err)
					}
					passed[i] = err == nil && over < 0
				})
			}
			wg.Wait()
			n := 0
			for _, p := range passed {
				if p {
					n++
				}
			}
			if n != 3 || spent().Requests != 4 {
				t.Fatalf("%d of %d callers passed with 3 requests left, %d rows; want exactly 3 and 4 rows", n, callers, spent().Requests)
			}
		})
	}
}
