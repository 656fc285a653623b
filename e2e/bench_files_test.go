//go:build bench

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// procRSS is the resident set size of process pid now, in bytes.
func procRSS(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestBenchDownloads is issue 22's download target: the RSS of a real
// `primer serve` grows by less than 50 MiB while 8 clients download a
// 500 MiB file at once (three rounds), sampled every 10 ms. The baseline
// is 8 readers of the same file straight from disk, in the same run.
func TestBenchDownloads(t *testing.T) {
	requireBench(t)
	const size = 500 << 20
	const clients, rounds = 8, 3
	s := startServe(t, "PRIMER_MAX_FILE_BYTES=1073741824")
	ctx := ctxT(t, 20*time.Minute)
	key, err := os.ReadFile(filepath.Join(s.dataDir, client.AdminKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(key))
	ws, err := s.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
	if err != nil {
		t.Fatal(err)
	}
	if ws, err = s.api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil); err != nil {
		t.Fatal(err)
	}
	res := rawFiles(t, s.url, tok, "PUT", ws.ID, "big.bin", &patternReader{n: size}, size)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT 500 MiB: %d", res.StatusCode)
	}
	pid := s.cmd.Process.Pid

	var api, raw []time.Duration
	var growth []int64
	for range rounds {
		before := procRSS(pid)
		var peak atomic.Int64
		peak.Store(before)
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if r := procRSS(pid); r > peak.Load() {
						peak.Store(r)
					}
				}
			}
		}()
		api = append(api, concurrently(t, clients, func() (int64, error) {
			res := rawFiles(t, s.url, tok, "GET", ws.ID, "big.bin", nil, 0)
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return 0, fmt.Errorf("GET: %d", res.StatusCode)
			}
			return io.Copy(io.Discard, res.Body)
		}, size)...)
		close(stop)
		<-sampled
		growth = append(growth, peak.Load()-before)

		raw = append(raw, concurrently(t, clients, func() (int64, error) {
			f, err := os.Open(filepath.Join(ws.Path, "big.bin"))
			if err != nil {
				return 0, err
			}
			defer f.Close()
			return io.Copy(io.Discard, struct{ io.Reader }{f})
		}, size)...)
	}

	printTable(t, fmt.Sprintf("%d clients downloading a 500 MiB file at once, %d rounds (issue 22)", clients, rounds), []row{
		{name: "500 MiB GET via API + runtime (local), one client's time", target: "-", samples: api, baseName: "read from disk, 8 at once", baseline: raw},
	})
	worst := growth[0]
	for _, g := range growth {
		worst = max(worst, g)
	}
	ok := "yes"
	if worst >= 50<<20 {
		ok = "NO"
		t.Errorf("platform RSS grew by %d MiB during the downloads, target under 50 MiB", worst>>20)
	}
	fmt.Println("| measure | value | target | ok |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| platform RSS growth per round (max - before) | %s MiB | - | - |\n", mibs(growth))
	fmt.Printf("| platform RSS growth, worst round | %.1f MiB | < 50 MiB | %s |\n", float64(worst)/(1<<20), ok)
	fmt.Printf("| aggregate throughput via API, p50 client | %.0f MiB/s | - | - |\n\n", float64(clients*size>>20)/pct(api, .5).Seconds())
}

func mibs(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.1f", float64(x)/(1<<20))
	}
	return strings.Join(s, " / ")
}

// concurrently runs f on n goroutines at once and returns each one's
// duration; each must deliver want bytes.
func concurrently(t *testing.T, n int, f func() (int64, error), want int64) []time.Duration {
	t.Helper()
	out := make([]time.Duration, n)
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			got, err := f()
			out[i] = time.Since(start)
			if err == nil && got != want {
				err = fmt.Errorf("%d bytes, want %d", got, want)
			}
			if err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	return out
}
