package temporalserver

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

func TestServerLogger(t *testing.T) {
	var buf bytes.Buffer
	stopping := new(atomic.Bool)
	var l log.Logger = serverLogger{
		log:      slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		stopping: stopping,
	}
	l = log.With(l, tag.NewStringTag("shard", "3"))

	l.Debug("debug line")
	l.Info("info line")
	l.Warn("warn line", tag.NewStringTag("queue", "q1"))
	l.Error("error line", tag.Error(errors.New("boom")))
	l.Warn("HTTP API port has not been set. Nexus HTTP endpoints will not be available.")
	l.Error("service failures", tag.Error(errors.New("Frontend is not healthy yet")))

	out := buf.String()
	for _, want := range []string{
		`level=WARN msg="warn line" shard=3 queue=q1`,
		`level=ERROR msg="error line" shard=3 error=boom`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"debug line", "info line", "HTTP API port", "not healthy"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("log has %q:\n%s", unwanted, out)
		}
	}

	buf.Reset()
	stopping.Store(true)
	l.Error("dial error during stop")
	if buf.Len() != 0 {
		t.Errorf("logged while stopping: %s", buf.String())
	}

	err := recoverFatal(func() error {
		l.Fatal("Failed to start gRPC listener", tag.Error(errors.New("address already in use")))
		return nil
	})
	if err == nil || err.Error() != "temporal server: Failed to start gRPC listener: address already in use" {
		t.Errorf("recovered Fatal = %v", err)
	}
}
