//go:build bench

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// TestBenchAuth measures what authentication adds to an API call (issue
// 13: under 0.2 ms at p50): exec of `true` through the API on a running
// local workspace, with a key against a platform that requires one, and
// without a key against a second platform started with OpenAccess, in the
// same process and run. The two sides alternate in rounds, each round
// starting with the other side, so drift of the machine (caches, CPU
// frequency, the platforms' background work) falls on both alike.
func TestBenchAuth(t *testing.T) {
	requireBench(t)
	ctx := ctxT(t, 10*time.Minute)
	keyed := startPrimer(t, withProbeInterval(30*time.Second))
	open := startPrimer(t, withProbeInterval(30*time.Second), withOpenAccess())

	// The open platform's client sends no key at all.
	openAPI := client.New(open.srv.URL())
	if _, err := client.New(keyed.srv.URL()).ListWorkspaces(ctx, client.WorkspaceListOptions{}); err == nil {
		t.Fatal("the keyed platform answered a request without a key")
	}

	wsKeyed := createRunning(t, keyed, wire.DefaultTemplateID)
	wsOpen := createRunning(t, open, wire.DefaultTemplateID)
	execKeyed := execTrue(ctx, keyed.api, wsKeyed.ID)
	execOpen := execTrue(ctx, openAPI, wsOpen.ID)

	const warmup, rounds, perRound = 100, 20, 50 // 1,000 timed calls a side
	timeN(t, warmup, execKeyed)
	timeN(t, warmup, execOpen)
	var withKey, withoutKey []time.Duration
	for r := range rounds {
		if r%2 == 0 {
			withKey = append(withKey, timeN(t, perRound, execKeyed)...)
			withoutKey = append(withoutKey, timeN(t, perRound, execOpen)...)
		} else {
			withoutKey = append(withoutKey, timeN(t, perRound, execOpen)...)
			withKey = append(withKey, timeN(t, perRound, execKeyed)...)
		}
	}

	printTable(t, "Authentication (issue 13)", []row{
		{name: "exec `true` via API, with a key", target: "added p50 < 0.2 ms", samples: withKey,
			baseName: "same, no key (OpenAccess)", baseline: withoutKey},
	})
	added := pct(withKey, .5) - pct(withoutKey, .5)
	ok := "yes"
	if added >= 200*time.Microsecond {
		ok = "NO"
		t.Errorf("authentication adds %s at p50 (with a key %s, without %s), target under 0.2 ms",
			ms(added), ms(pct(withKey, .5)), ms(pct(withoutKey, .5)))
	}
	fmt.Printf("# auth: p50 with a key %s, without %s: added %s (%.3fx); p90 %s vs %s; target added p50 < 0.2 ms: %s\n\n",
		ms(pct(withKey, .5)), ms(pct(withoutKey, .5)), ms(added),
		float64(pct(withKey, .5))/float64(pct(withoutKey, .5)),
		ms(pct(withKey, .9)), ms(pct(withoutKey, .9)), ok)
}

// execTrue runs `true` in workspace id through api.
func execTrue(ctx context.Context, api *client.Client, id string) func() error {
	return func() error {
		res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"true"}})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d", res.ExitCode)
		}
		return err
	}
}
