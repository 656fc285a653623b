package models

import (
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
				if err := s.RecordGatewayUsage(ctx, &u); err != nil {
					t.Fatal(err)
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
