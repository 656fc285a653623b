//go:build bench

package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/connector"
	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
	"github.com/primerhq/primer/wire"
)

// TestBenchBeacon measures the liveness beacon against today's Prober
// (pings) on the same idle fleets of 1,000 and 5,000 workspaces in one run:
// process CPU per 1,000 workspaces and database statements per minute over
// a window. The fleet is in-process runtime servers (runtime/server) on
// loopback WebSockets, one connection per workspace through the real pool,
// connector and Prober on SQLite rows, not containers: 5,000 containers
// are too heavy for this 2-core machine. The CPU is the whole process's,
// so it includes the runtimes' side (beacon ticks, ping answers).
//
// Times are compressed sixfold so four cases fit in about two minutes: a
// 5 s probe interval (the default is 30 s), a 10 s beacon backstop ping
// (60 s), a beacon every interval/3, a 10 s window; the CPU and statements
// are also given scaled to the default 30 s interval (divided by 6), since
// both sides do a fixed amount of work per probe, beacon and ping.
// Detection after docker kill is e2e TestBenchBeaconDetection.
func TestBenchBeacon(t *testing.T) {
	if os.Getenv("PRIMER_BENCH") == "" {
		t.Skip("benchmark: run with `make bench` (PRIMER_BENCH=1)")
	}
	const (
		interval = 5 * time.Second
		ping     = 10 * time.Second
		window   = 10 * time.Second
		scale    = 30 * time.Second / interval
		servers  = 8
	)
	ctx := context.Background()
	dir := t.TempDir()
	store, err := models.Open(ctx, models.Config{SQLitePath: filepath.Join(dir, "primer.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var statements atomic.Int64
	if err := store.CountStatements(&statements); err != nil {
		t.Fatal(err)
	}
	fleet := &fleetBackend{}
	for range servers {
		fleet.urls = append(fleet.urls, runtimetest.Start(t, server.Config{}).URL)
	}
	reg := backend.NewRegistry(map[string]backend.Factory{"fleet": func(json.RawMessage) (backend.Backend, error) { return fleet, nil }})
	if err := store.CreateProvider(ctx, &wire.Provider{ID: "fleet", Provider: "fleet", Config: json.RawMessage(`{"kind":"fleet"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateTemplate(ctx, &wire.Template{ID: "tmpl-fleet", ProviderID: "fleet", Backend: json.RawMessage(`{"kind":"fleet"}`)}); err != nil {
		t.Fatal(err)
	}
	const most = 5000
	handles := make([]backend.Handle, most)
	for i := range most {
		id := fmt.Sprintf("ws-fleet-%05d", i)
		handles[i] = backend.Handle{Backend: "fleet", WorkspaceID: id}
		raw, _ := json.Marshal(handles[i])
		if err := store.CreateWorkspace(ctx, &wire.Workspace{ID: id, TemplateID: "tmpl-fleet", ProviderID: "fleet", Backend: "fleet",
			Phase: wire.PhaseRunning, RuntimeToken: runtimetest.Token, Handle: raw}); err != nil {
			t.Fatal(err)
		}
	}

	type result struct {
		n          int
		beacon     bool
		cpu        time.Duration
		statements int64
		probes     int64
		signals    int64
	}
	var results []result
	for _, n := range []int{1000, 5000} {
		for _, beacon := range []bool{false, true} {
			pool := client.NewPool()
			a := &Activities{Store: store, Backends: reg, Connector: &connector.Connector{Store: store, Backends: reg, Pool: pool},
				Metrics: metrics.New(), ProbeTimeout: 5 * time.Second, BeaconOff: !beacon}
			var probes, signals atomic.Int64
			p := NewProber(func(ctx context.Context, in ProbeInput, held *probeTarget) (ProbeOutput, *probeTarget, error) {
				probes.Add(1)
				out, held := a.probeWatched(ctx, in, held)
				return out, held, nil
			}, func(context.Context, string, LivenessSignal) error {
				signals.Add(1)
				return nil
			}, 0)
			p.beaconPing = ping
			a.Prober = p
			// Watch the fleet as the workflows' probes do, 16 at a time.
			var wg sync.WaitGroup
			next := atomic.Int64{}
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
						h := handles[i]
						out, err := a.Probe(ctx, ProbeInput{WorkspaceID: h.WorkspaceID, Handle: h,
							Watch: &WatchRequest{WorkflowID: "workspace-" + h.WorkspaceID, Interval: interval, Backstop: time.Hour, MissesToFail: 3}})
						if err != nil || !out.Hit || !out.Watched {
							t.Errorf("probe of %s = %+v, %v", h.WorkspaceID, out, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			// Let every watch reach its own cadence before the window.
			time.Sleep(interval)
			cpu0, st0, pr0, sg0 := processCPU(t), statements.Load(), probes.Load(), signals.Load()
			time.Sleep(window)
			r := result{n: n, beacon: beacon, cpu: processCPU(t) - cpu0, statements: statements.Load() - st0,
				probes: probes.Load() - pr0, signals: signals.Load() - sg0}
			results = append(results, r)
			p.Stop()
			pool.Close()
		}
	}

	perMin := func(v int64) float64 { return float64(v) * float64(time.Minute) / float64(window) }
	cores := func(r result) float64 { return r.cpu.Seconds() / window.Seconds() / (float64(r.n) / 1000) }
	t.Logf("bench beacon: in-process runtime servers (%d, runtime/server) on loopback WebSockets, one connection per workspace, real pool and Prober, SQLite; not containers", servers)
	fmt.Printf("| workspaces | liveness | cores per 1,000 (5 s interval) | at 30 s | DB statements/min (5 s) | at 30 s | per idle workspace | probes run in window | signals |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		mode := "prober (pings)"
		if r.beacon {
			mode = "beacon"
		}
		fmt.Printf("| %d | %s | %.4f | %.4f | %.0f | %.0f | %.3f | %d | %d |\n", r.n, mode, cores(r), cores(r)/float64(scale),
			perMin(r.statements), perMin(r.statements)/float64(scale), perMin(r.statements)/float64(r.n), r.probes, r.signals)
	}
	for i := 0; i+1 < len(results); i += 2 {
		ping, beacon := results[i], results[i+1]
		fmt.Printf("# bench beacon %d: beacon/prober CPU ratio %.2f\n", ping.n, cores(beacon)/cores(ping))
		if beacon.signals != 0 || ping.signals != 0 {
			t.Errorf("%d idle workspaces: signals %d (prober), %d (beacon), want none", ping.n, ping.signals, beacon.signals)
		}
		if beacon.statements != 0 {
			t.Errorf("%d idle beacon-backed workspaces ran %d statements, want none", beacon.n, beacon.statements)
		}
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fleetBackend reaches the bench's in-process runtime servers, a
// workspace on one of them by its id: the endpoint of a container found
// without an engine call.
type fleetBackend struct{ urls []string }

func (f *fleetBackend) Capabilities() backend.Capabilities     { return backend.Capabilities{} }
func (f *fleetBackend) ValidateTemplate(json.RawMessage) error { return nil }
func (f *fleetBackend) Provision(context.Context, backend.ProvisionRequest) (backend.Handle, error) {
	return backend.Handle{}, fmt.Errorf("fleet: provision: the bench's runtimes are started by the bench")
}
func (f *fleetBackend) Endpoint(_ context.Context, h backend.Handle, _ string) (backend.Endpoint, error) {
	var sum int
	for _, c := range h.WorkspaceID {
		sum += int(c)
	}
	return backend.Endpoint{URL: f.urls[sum%len(f.urls)]}, nil
}
func (f *fleetBackend) Destroy(context.Context, backend.Handle) error { return nil }
