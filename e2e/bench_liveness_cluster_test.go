//go:build bench

package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/internal/testenv"
)

// This file is the "@cluster" setup of TestBenchLiveness: the platform
// scaled apart as a deployment runs it (startCluster: one API and one
// worker process, PostgreSQL, the Temporal cluster of deploy/temporal), so
// the worker's CPU time is the worker's alone, and what the Temporal server
// and PostgreSQL spend serving it is read from their processes beside it.

// livenessClusterMissing says how to get what an @cluster row needs, or is
// empty when both are set. The bench then skips the row rather than failing
// (testenv fails under CI): a benchmark never fails for a missing service.
func livenessClusterMissing() string {
	var missing []string
	if os.Getenv(testenv.TemporalAddressEnv) == "" {
		missing = append(missing, testenv.TemporalAddressEnv+" (`make temporal-cluster-up` prints it)")
	}
	if os.Getenv(testenv.DatabaseURLEnv) == "" {
		missing = append(missing, testenv.DatabaseURLEnv+" (`bash deploy/ci/postgres.sh` prints it)")
	}
	if len(missing) == 0 {
		return ""
	}
	return "set " + strings.Join(missing, " and ") + " to measure it"
}

// livenessCluster starts one API and one worker process on the Temporal
// cluster (a namespace of the test's own) and PostgreSQL (a schema of its
// own), with probes every interval and the Prober on or off.
func livenessCluster(t *testing.T, interval time.Duration, prober bool) *livenessRig {
	env := []string{
		// startCluster's reconciler runs every 2 s for its crash tests; the
		// default, as on embedded defaults, so it is not in the figures.
		"PRIMER_RECONCILE_INTERVAL=1m",
		"PRIMER_ORPHAN_GRACE=2m",
	}
	if !prober {
		env = append(env, activities.ProberEnv+"=off")
	}
	c := startCluster(t, clusterConfig{APIs: 1, Workers: 1, Probe: interval, Env: env})
	api, w := c.apis[0], c.workers[0]
	workerPID, apiPID := w.pid(), api.pid()
	metricsURL := w.url + "/metrics"
	return &livenessRig{
		api:      api.api,
		temporal: c.temporal,
		probes: func() int64 {
			var n float64
			for _, v := range scrapeMetric(t, metricsURL, "primer_probes_total") {
				n += v
			}
			return int64(n)
		},
		lateness: func() map[float64]float64 {
			out := map[float64]float64{}
			for sample, v := range scrapeMetric(t, metricsURL, "primer_probe_lateness_seconds") {
				_, rest, ok := strings.Cut(sample, `quantile="`)
				if !ok {
					continue
				}
				if q, err := strconv.ParseFloat(strings.TrimSuffix(rest, `"}`), 64); err == nil {
					out[q] = v
				}
			}
			return out
		},
		cpu: func() time.Duration {
			d, ok := procCPU(workerPID, false)
			if !ok {
				t.Fatalf("worker (pid %d): no /proc/%d/stat", workerPID, workerPID)
			}
			return d
		},
		peakRSS: func() int64 { return procPeakRSS(workerPID) },
		others: []sideCost{
			{name: "Temporal server process", cpu: temporalServerCPU},
			{name: "PostgreSQL, all its processes (Temporal's persistence and visibility, and Primer's database)", cpu: postgresCPU},
			{name: "API process (idle in the window)", cpu: func() (time.Duration, bool) { return procCPU(apiPID, false) }},
		},
		stop: func() {
			w.stop()
			api.stop()
		},
	}
}

// scrapeMetric reads the samples of metric name (a counter's or a summary's
// quantiles) from a Prometheus /metrics page, by the sample as printed
// (name and labels).
func scrapeMetric(t *testing.T, url, name string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape %s: line %q: %v", url, line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// procStat is the command name and the fields after it of /proc/<pid>/stat.
func procStat(pid int) (comm string, fields []string, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", nil, false
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 > len(s) {
		return "", nil, false
	}
	return s[open+1 : end], strings.Fields(s[end+2:]), true
}

// procCPU is the user+system CPU time of process pid; with children, also
// that of its children it has reaped (how a PostgreSQL backend that exited
// stays counted).
func procCPU(pid int, children bool) (time.Duration, bool) {
	_, f, ok := procStat(pid)
	if !ok || len(f) < 15 {
		return 0, false
	}
	// utime, stime, cutime, cstime are fields 14 to 17 of stat, in clock
	// ticks (100 a second on Linux, as cpuTime assumes).
	var ticks int64
	last := 12
	if children {
		last = 14
	}
	for i := 11; i <= last; i++ {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100, true
}

// procPeakRSS is process pid's high-water resident set size in bytes.
func procPeakRSS(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// temporalServerCPU is the CPU time of the Temporal server that
// deploy/temporal/cluster.sh started on this machine, found by its pid
// file (the same state directory the script uses); false when there is
// none here (a cluster elsewhere) or the pid is not a temporal-server.
func temporalServerCPU() (time.Duration, bool) {
	state := os.Getenv("PRIMER_TEMPORAL_STATE")
	if state == "" {
		base := os.Getenv("XDG_STATE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return 0, false
			}
			base = filepath.Join(home, ".local", "state")
		}
		state = filepath.Join(base, "primer-temporal")
	}
	data, err := os.ReadFile(filepath.Join(state, "temporal.pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, false
	}
	if comm, _, ok := procStat(pid); !ok || !strings.HasPrefix(comm, "temporal-server") {
		return 0, false
	}
	return procCPU(pid, false)
}

// postgresCPU is the CPU time of every PostgreSQL process on this machine
// (the postmaster, its backends and helpers), with the children each has
// reaped, so backends that came and went are counted; false when there are
// none (a database elsewhere). It is the whole server's: Temporal's
// persistence and visibility, Primer's database, and anything else it
// serves in the window.
func postgresCPU() (time.Duration, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	var total time.Duration
	found := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, _, ok := procStat(pid); !ok || comm != "postgres" {
			continue
		}
		if d, ok := procCPU(pid, true); ok {
			total += d
			found = true
		}
	}
	return total, found
}
