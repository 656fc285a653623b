//go:build bench

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// TestBenchTypeScriptSDK measures issue 24's TypeScript target: the
// per-call overhead of @primer/sdk over raw fetch for exec `true` on a
// local workspace (p50 added < 0.3 ms), both timed in one node process
// (sdk/typescript/bench/exec.mjs), taking turns.
func TestBenchTypeScriptSDK(t *testing.T) {
	requireBench(t)
	dir := tsSDKDir(t)
	p := startPrimer(t)
	ctx := ctxT(t, 10*time.Minute)
	ws, err := p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PRIMER_URL="+p.srv.URL(), "PRIMER_TOKEN="+p.key)
	out := tsRun(t, dir, env, 5*time.Minute, "node", filepath.Join("bench", "exec.mjs"), ws.ID, "1000")
	var res struct{ SDK, Raw []float64 }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("bench/exec.mjs printed %q: %v", out, err)
	}
	durs := func(v []float64) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, m := range v {
			d[i] = time.Duration(m * float64(time.Millisecond))
		}
		return d
	}
	sdk, raw := durs(res.SDK), durs(res.Raw)
	diff := make([]time.Duration, len(sdk))
	for i := range sdk {
		diff[i] = sdk[i] - raw[i]
	}
	printTable(t, "TypeScript SDK: exec true on local, per call (issue 24)", []row{
		{name: "sdk: workspace.exec(['true'])", target: "added p50 < 0.3 ms", samples: sdk, baseName: "raw fetch + JSON", baseline: raw},
		{name: "sdk - raw, paired", target: "< 0.3 ms", samples: diff},
	})
	added := pct(sdk, .5) - pct(raw, .5)
	fmt.Printf("TypeScript SDK overhead over raw fetch: p50 %s (sdk %s, raw %s), paired p50 %s\n", ms(added), ms(pct(sdk, .5)), ms(pct(raw, .5)), ms(pct(diff, .5)))
	if added >= 300*time.Microsecond {
		t.Errorf("the SDK adds %s at p50 over raw fetch; target < 0.3 ms", ms(added))
	}
}
