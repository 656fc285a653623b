package models

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/wire"
)

// TestQuota runs the quota cases on SQLite and PostgreSQL.
func TestQuota(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			for _, tc := range []storeCase{
				{"concurrent workspaces", testQuotaConcurrentWorkspaces},
				{"cpu and memory", testQuotaCPUMemory},
				{"deleting counts until gone", testQuotaDeleting},
				{"concurrent pools", testQuotaConcurrentPools},
				{"tenants apart", testQuotaTenantsApart},
				{"limits at provision", testQuotaSetLimits},
				{"template limits", testQuotaTemplateLimits},
			} {
				t.Run(tc.name, func(t *testing.T) {
					s := d.open(t)
					must(t, s.CreateProvider(t.Context(), &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
					must(t, s.CreateTemplate(t.Context(), &wire.Template{ID: "t", ProviderID: "p"}))
					tc.run(t, t.Context(), s)
				})
			}
		})
	}
}

// tenantWorkspace is a new workspace of template t in tenant with limits.
func tenantWorkspace(tenant string, cpu float64, mem int64) *wire.Workspace {
	w := newWorkspace("t", "p")
	w.TenantID, w.CPUCores, w.MemoryBytes = tenant, cpu, mem
	return w
}

// createConcurrently runs create n times at once and returns how many
// succeeded and the errors of the others.
func createConcurrently(n int, create func(i int) error) (int, []error) {
	var (
		mu     sync.Mutex
		ok     int
		failed []error
		wg     sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			err := create(i)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else {
				failed = append(failed, err)
			}
		})
	}
	wg.Wait()
	return ok, failed
}

// testQuotaConcurrentWorkspaces is the test: 50 creates at once
// against max_workspaces 10 leave exactly 10 rows and 40 Exhausted errors.
func testQuotaConcurrentWorkspaces(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxWorkspaces: 10}}))
	ok, failed := createConcurrently(50, func(int) error {
		return s.CreateWorkspace(ctx, tenantWorkspace("acme", 0, 0))
	})
	if ok != 10 || len(failed) != 40 {
		t.Fatalf("50 concurrent creates: %d ok, %d failed; want 10 and 40", ok, len(failed))
	}
	for _, err := range failed {
		wantErr(t, err, errs.Exhausted, "tenant acme: quota max_workspaces: limit 10, in use 10")
	}
	u, err := s.TenantUsage(ctx, "acme")
	must(t, err)
	if u.Workspaces != 10 {
		t.Errorf("usage %+v, want 10 workspaces", u)
	}
	var rows int64
	must(t, s.r.Model(&wire.Workspace{}).Where("tenant_id = ?", "acme").Count(&rows).Error)
	if rows != 10 {
		t.Errorf("%d workspace rows of tenant acme, want 10", rows)
	}
}

// testQuotaCPUMemory fills a CPU and memory quota step by step: sums, the
// refusals naming the quota, and a workspace with no limit under a limit.
func testQuotaCPUMemory(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxCPUCores: 2, MaxMemoryBytes: 1000}}))
	for _, tc := range []struct {
		name string
		cpu  float64
		mem  int64
		kind errs.Kind // Other: no error
		msg  string
	}{
		{name: "first", cpu: 1, mem: 400},
		{name: "fractions", cpu: 0.5, mem: 400},
		{name: "cpu over", cpu: 1, mem: 100, kind: errs.Exhausted,
			msg: "tenant acme: quota max_cpu_cores: limit 2, in use 1.5, requested 1"},
		{name: "memory over", cpu: 0.5, mem: 201, kind: errs.Exhausted,
			msg: "tenant acme: quota max_memory_bytes: limit 1000, in use 800, requested 201"},
		{name: "no cpu limit", mem: 1, kind: errs.Invalid,
			msg: "quota max_cpu_cores: limit 2: workspace "},
		{name: "no memory limit", cpu: 0.1, kind: errs.Invalid,
			msg: "quota max_memory_bytes: limit 1000: workspace "},
		{name: "exactly full", cpu: 0.5, mem: 200},
		{name: "full", cpu: 0.001, mem: 1, kind: errs.Exhausted, msg: "quota max_cpu_cores: limit 2, in use 2, requested 0.001"},
	} {
		err := s.CreateWorkspace(ctx, tenantWorkspace("acme", tc.cpu, tc.mem))
		if tc.kind == errs.Other {
			if err != nil {
				t.Errorf("%s: CreateWorkspace = %v, want it created", tc.name, err)
			}
			continue
		}
		wantErr(t, err, tc.kind, tc.msg)
	}
	u, err := s.TenantUsage(ctx, "acme")
	must(t, err)
	if want := (wire.Usage{Workspaces: 3, CPUCores: 2, MemoryBytes: 1000}); u != want {
		t.Errorf("TenantUsage = %+v, want %+v", u, want)
	}
	if !strings.Contains(fmt.Sprint(s.CreateWorkspace(ctx, tenantWorkspace("acme", 0, 0))), "template must set cpu_cores") {
		t.Error("a workspace without limits under a cpu quota: the error does not say the template must set cpu_cores")
	}
}

// testQuotaDeleting: a terminating workspace still counts; its row's
// delete frees its place.
func testQuotaDeleting(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxWorkspaces: 2, MaxCPUCores: 2, MaxMemoryBytes: 2000}}))
	a, b := tenantWorkspace("acme", 1, 1000), tenantWorkspace("acme", 1, 1000)
	must(t, s.CreateWorkspace(ctx, a))
	must(t, s.CreateWorkspace(ctx, b))
	must(t, s.SetWorkspacePhase(ctx, a.ID, wire.PhaseTerminating, "deleted by the user"))
	wantErr(t, s.CreateWorkspace(ctx, tenantWorkspace("acme", 1, 1000)), errs.Exhausted,
		"tenant acme: quota max_workspaces: limit 2, in use 2")
	must(t, s.DeleteWorkspace(ctx, a.ID))
	u, err := s.TenantUsage(ctx, "acme")
	must(t, err)
	if want := (wire.Usage{Workspaces: 1, CPUCores: 1, MemoryBytes: 1000}); u != want {
		t.Errorf("TenantUsage after a delete = %+v, want %+v", u, want)
	}
	must(t, s.CreateWorkspace(ctx, tenantWorkspace("acme", 1, 1000)))
}

// testQuotaConcurrentPools: max_pools holds under concurrent creates.
func testQuotaConcurrentPools(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxPools: 3}}))
	ok, failed := createConcurrently(20, func(i int) error {
		return s.CreatePool(ctx, &wire.Pool{ID: fmt.Sprintf("pool-%d", i), TenantID: "acme", TemplateID: "t", Size: 1})
	})
	if ok != 3 || len(failed) != 17 {
		t.Fatalf("20 concurrent pool creates: %d ok, %d failed; want 3 and 17", ok, len(failed))
	}
	for _, err := range failed {
		wantErr(t, err, errs.Exhausted, "tenant acme: quota max_pools: limit 3, in use 3")
	}
	u, err := s.TenantUsage(ctx, "acme")
	must(t, err)
	if u.Pools != 3 {
		t.Errorf("usage %+v, want 3 pools", u)
	}
}

// testQuotaTenantsApart: one tenant's rows do not count against another's
// quota, an empty tenant is the default one, and a tenant without a row
// (the default one before EnsureDefaults) has no limits.
func testQuotaTenantsApart(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "small", Quota: wire.Quota{MaxWorkspaces: 1, MaxPools: 1}}))
	for range 3 {
		must(t, s.CreateWorkspace(ctx, tenantWorkspace("", 0, 0)))
	}
	must(t, s.CreatePool(ctx, &wire.Pool{ID: "default-pool", TemplateID: "t", Size: 1}))
	must(t, s.CreateWorkspace(ctx, tenantWorkspace("small", 0, 0)))
	must(t, s.CreatePool(ctx, &wire.Pool{ID: "small-pool", TenantID: "small", TemplateID: "t", Size: 1}))
	wantErr(t, s.CreateWorkspace(ctx, tenantWorkspace("small", 0, 0)), errs.Exhausted, "tenant small: quota max_workspaces: limit 1, in use 1")
	wantErr(t, s.CreatePool(ctx, &wire.Pool{ID: "small-2", TenantID: "small", TemplateID: "t"}), errs.Exhausted, "tenant small: quota max_pools: limit 1, in use 1")

	for _, tc := range []struct {
		tenant string
		want   wire.Usage
	}{
		{"", wire.Usage{Workspaces: 3, Pools: 1}},
		{wire.DefaultTenantID, wire.Usage{Workspaces: 3, Pools: 1}},
		{"small", wire.Usage{Workspaces: 1, Pools: 1}},
		{"ghost", wire.Usage{}},
	} {
		u, err := s.TenantUsage(ctx, tc.tenant)
		must(t, err)
		if u != tc.want {
			t.Errorf("TenantUsage(%q) = %+v, want %+v", tc.tenant, u, tc.want)
		}
	}
	p, err := s.GetPool(ctx, "default-pool")
	must(t, err)
	if p.TenantID != wire.DefaultTenantID {
		t.Errorf("pool created with no tenant: TenantID %q, want %q", p.TenantID, wire.DefaultTenantID)
	}
}

// TestQuotaTwoProcesses holds a quota across two Stores on one database,
// as two `primer serve` processes would: the in-process gate of each
// cannot see the other's creates, so only the database's lock (the tenant
// row FOR UPDATE on PostgreSQL, the single writer of a SQLite file) keeps
// 50 concurrent creates to the 10 allowed. On PostgreSQL the creates also
// outnumber the connection pool of each Store.
func TestQuotaTwoProcesses(t *testing.T) {
	for _, d := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{DialectSQLite, func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "primer.db") }},
		{DialectPostgres, func(t *testing.T) string { return testenv.PostgresURL(t) }},
	} {
		t.Run(d.name, func(t *testing.T) {
			ctx := t.Context()
			url := d.url(t)
			var stores [2]*Store
			for i := range stores {
				s, err := Open(ctx, Config{URL: url})
				must(t, err)
				t.Cleanup(func() { _ = s.Close() })
				stores[i] = s
			}
			must(t, stores[0].CreateProvider(ctx, &wire.Provider{ID: "p", Provider: wire.BackendLocal}))
			must(t, stores[0].CreateTemplate(ctx, &wire.Template{ID: "t", ProviderID: "p"}))
			must(t, stores[0].CreateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxWorkspaces: 10}}))
			ok, failed := createConcurrently(50, func(i int) error {
				return stores[i%2].CreateWorkspace(ctx, tenantWorkspace("acme", 0, 0))
			})
			if ok != 10 || len(failed) != 40 {
				t.Fatalf("50 concurrent creates through two stores: %d ok, %d failed (%v); want 10 and 40", ok, len(failed), failed)
			}
			for _, err := range failed {
				wantErr(t, err, errs.Exhausted, "tenant acme: quota max_workspaces: limit 10, in use 10")
			}
			u, err := stores[1].TenantUsage(ctx, "acme")
			must(t, err)
			if u.Workspaces != 10 {
				t.Errorf("usage %+v, want 10 workspaces", u)
			}
		})
	}
}

// testQuotaSetLimits: a workspace re-recorded with its template's limits
// at provision or replace (SetWorkspaceLimits) is refused when they would
// pass the tenant's quota, and its recorded limits stay; limits that fit,
// or shrink, are recorded.
func testQuotaSetLimits(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxCPUCores: 2, MaxMemoryBytes: 1 << 30}}))
	a, b := tenantWorkspace("acme", 1, 256<<20), tenantWorkspace("acme", 0.5, 256<<20)
	must(t, s.CreateWorkspace(ctx, a))
	must(t, s.CreateWorkspace(ctx, b))
	for _, tc := range []struct {
		name     string
		cpu      float64
		mem      int64
		wantKind errs.Kind // 0: recorded
		wantMsg  string
	}{
		{"same", 1, 256 << 20, 0, ""},
		{"64 cores", 64, 256 << 20, errs.Exhausted, "quota max_cpu_cores: limit 2, in use 0.5, requested 64"},
		{"no cpu limit", 0, 256 << 20, errs.Invalid, "has no cpu limit"},
		{"no memory limit", 1, 0, errs.Invalid, "has no memory limit"},
		{"too much memory", 1, 1 << 30, errs.Exhausted, "quota max_memory_bytes"},
		{"fits", 1.5, 512 << 20, 0, ""},
		{"shrinks", 0.25, 64 << 20, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := s.GetWorkspace(ctx, a.ID)
			must(t, err)
			err = s.SetWorkspaceLimits(ctx, a.ID, tc.cpu, tc.mem)
			after, gerr := s.GetWorkspace(ctx, a.ID)
			must(t, gerr)
			if tc.wantKind == 0 {
				if err != nil || after.CPUCores != tc.cpu || after.MemoryBytes != tc.mem {
					t.Fatalf("SetWorkspaceLimits(%v, %d) = %v; stored %v, %d", tc.cpu, tc.mem, err, after.CPUCores, after.MemoryBytes)
				}
				return
			}
			if !errs.Is(err, tc.wantKind) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("SetWorkspaceLimits(%v, %d) = %v; want %v saying %q", tc.cpu, tc.mem, err, tc.wantKind, tc.wantMsg)
			}
			if after.CPUCores != before.CPUCores || after.MemoryBytes != before.MemoryBytes {
				t.Errorf("refused limits stored anyway: %v, %d (were %v, %d)", after.CPUCores, after.MemoryBytes, before.CPUCores, before.MemoryBytes)
			}
		})
	}
	if err := s.SetWorkspaceLimits(ctx, "ws-gone", 1, 1); !errs.Is(err, errs.NotFound) {
		t.Errorf("SetWorkspaceLimits(gone) = %v, want NotFound", err)
	}
}

// testQuotaTemplateLimits: a template change is checked against the quota
// of every tenant holding its workspaces, at the new limits for each.
func testQuotaTemplateLimits(t *testing.T, ctx context.Context, s *Store) {
	must(t, s.CreateTenant(ctx, &wire.Tenant{ID: "acme", Quota: wire.Quota{MaxCPUCores: 2, MaxMemoryBytes: 1 << 30}}))
	must(t, s.CreateTemplate(ctx, &wire.Template{ID: "empty", TenantID: "acme", ProviderID: "p"}))
	must(t, s.CreateWorkspace(ctx, tenantWorkspace("acme", 0.5, 128<<20)))
	must(t, s.CreateWorkspace(ctx, tenantWorkspace("acme", 0.5, 128<<20)))
	for _, tc := range []struct {
		name, template, tenant string
		cpu                    float64
		mem                    int64
		wantKind               errs.Kind
		wantMsg                string
	}{
		{"fits", "t", "", 1, 256 << 20, 0, ""},
		{"two at 64 cores", "t", "", 64, 256 << 20, errs.Exhausted, "tenant acme: quota max_cpu_cores: limit 2, in use 1; its 2 workspace(s) of the template at 64 each would make it 128"},
		{"no cpu limit", "t", "", 0, 256 << 20, errs.Invalid, "would have no cpu limit"},
		{"memory", "t", "", 1, 1 << 30, errs.Exhausted, "quota max_memory_bytes"},
		{"none yet, fits", "empty", "acme", 2, 1 << 30, 0, ""},
		{"none yet, one alone too big", "empty", "acme", 3, 1 << 20, errs.Exhausted, "a workspace of the template would need 3"},
		{"none yet, no limit", "empty", "acme", 0, 0, 0, ""},
		{"tenant without quota", "empty", "default", 64, 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.CheckTemplateLimits(ctx, tc.template, tc.tenant, tc.cpu, tc.mem)
			if tc.wantKind == 0 {
				if err != nil {
					t.Fatalf("CheckTemplateLimits = %v, want nil", err)
				}
				return
			}
			if !errs.Is(err, tc.wantKind) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("CheckTemplateLimits = %v; want %v saying %q", err, tc.wantKind, tc.wantMsg)
			}
		})
	}
}
