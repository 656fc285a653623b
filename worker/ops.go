package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/primerhq/primer/metrics"
	"github.com/primerhq/primer/models"
)

// opsTimeout bounds one /readyz check, as the API's does.
const opsTimeout = 5 * time.Second

// opsHandler is what a worker-role process serves on its address: /healthz
// (the process runs), /readyz (the database and Temporal answer) and
// /metrics (its activities' figures), for an orchestrator's probes and a
// scraper. Everything else, /v1 included, is 404: the API lives in the api
// role, so a load balancer that reaches a worker by mistake gets no answer
// that looks like one.
func opsHandler(store *models.Store, m *metrics.Metrics, ready func(context.Context) error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), opsTimeout)
		defer cancel()
		if err := store.Ping(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": "readyz: database: " + err.Error()})
			return
		}
		if err := ready(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": "readyz: temporal: " + err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{
			"status": "not_found",
			"error":  "route " + r.Method + " " + r.URL.Path + ": not found: this is a worker (--role worker); the API is served by --role api or all",
		})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
