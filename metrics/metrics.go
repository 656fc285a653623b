// Package metrics holds Primer's Prometheus metrics. One Metrics value is
// made at start-up and passed to the activities (probe results and lateness)
// and the API (requests), which serves it on /metrics.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics is the set of Primer's metrics on their own registry.
type Metrics struct {
	Registry *prometheus.Registry

	// ProbeLateness is how late each probe ran against its schedule, in seconds.
	ProbeLateness prometheus.Summary
	// ProbeDuration is how long each probe's ping took, in seconds.
	ProbeDuration prometheus.Summary
	// Probes counts probes by result: hit or miss.
	Probes *prometheus.CounterVec
	// PhaseChanges counts workspace phase changes by the phase entered.
	PhaseChanges *prometheus.CounterVec
	// OrphansRemoved counts sandboxes the reconciler removed for having no
	// workspace.
	OrphansRemoved prometheus.Counter
	// Leases counts pool leases by source: warm (from the pool) or cold (a
	// new workspace because the pool was empty).
	Leases *prometheus.CounterVec
	// HTTPRequests counts API requests by method, route and status code.
	HTTPRequests *prometheus.CounterVec
	// HTTPDuration observes API request durations by method and route.
	HTTPDuration *prometheus.HistogramVec
	// OpenStreams is the number of event streams the API holds open.
	OpenStreams prometheus.Gauge
	// ConsoleSessions is the number of signed-in console sessions.
	ConsoleSessions prometheus.Gauge
}

// New returns a fresh set of metrics registered on a new registry, with the
// Go and process collectors.
func New() *Metrics {
	objectives := map[float64]float64{0.5: 0.01, 0.9: 0.01, 0.99: 0.001}
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		ProbeLateness: prometheus.NewSummary(prometheus.SummaryOpts{
			Name:       "primer_probe_lateness_seconds",
			Help:       "How late each workspace probe ran against its schedule.",
			Objectives: objectives,
			MaxAge:     10 * time.Minute,
		}),
		ProbeDuration: prometheus.NewSummary(prometheus.SummaryOpts{
			Name:       "primer_probe_duration_seconds",
			Help:       "How long each workspace probe's ping took.",
			Objectives: objectives,
			MaxAge:     10 * time.Minute,
		}),
		Probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "primer_probes_total",
			Help: "Workspace probes by result (hit or miss).",
		}, []string{"result"}),
		PhaseChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "primer_workspace_phase_changes_total",
			Help: "Workspace phase changes by the phase entered.",
		}, []string{"to"}),
		OrphansRemoved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "primer_orphans_removed_total",
			Help: "Sandboxes the reconciler removed because no workspace owned them.",
		}),
		Leases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "primer_pool_leases_total",
			Help: "Pool leases by source (warm or cold).",
		}, []string{"source"}),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "primer_http_requests_total",
			Help: "API requests by method, route and status code.",
		}, []string{"method", "route", "code"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "primer_http_request_duration_seconds",
			Help:    "API request durations by method and route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"method", "route"}),
		OpenStreams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "primer_api_open_streams",
			Help: "Event streams (Server-Sent Events) the API holds open.",
		}),
		ConsoleSessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "primer_console_sessions",
			Help: "Signed-in console sessions, expired ones not yet swept included.",
		}),
	}
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.ProbeLateness, m.ProbeDuration, m.Probes, m.PhaseChanges, m.OrphansRemoved, m.Leases, m.HTTPRequests, m.HTTPDuration,
		m.OpenStreams, m.ConsoleSessions,
	)
	return m
}
