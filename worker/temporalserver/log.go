package temporalserver

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts a *slog.Logger to the Temporal server's log.Logger.
// Debug and Info are dropped before any tag is converted: the server logs
// hundreds of Info lines at start and on every shard movement, and none of
// them is a state change of Primer.
type serverLogger struct {
	log *slog.Logger
	// stopping is shared by all loggers derived with With. Once Stop begins,
	// every line is dropped: the services going down one by one make the
	// rest log dozens of dial errors and failed polls, all expected, and
	// Stop's own result says whether stopping failed.
	stopping *atomic.Bool
}

var (
	_ log.Logger     = serverLogger{}
	_ log.WithLogger = serverLogger{}
)

// fatalPanic is what Fatal panics with. The server calls Fatal where it
// cannot go on (a listener it cannot open) and expects the process to exit;
// an embedded server must not exit its host, and carrying on would only
// dereference the nil listener, so Start recovers this panic into an error.
type fatalPanic struct{ msg string }

func (f fatalPanic) String() string { return f.msg }

func (l serverLogger) Debug(string, ...tag.Tag) {}
func (l serverLogger) Info(string, ...tag.Tag)  {}

func (l serverLogger) Warn(msg string, tags ...tag.Tag)   { l.emit(slog.LevelWarn, msg, tags) }
func (l serverLogger) Error(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) DPanic(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }

func (l serverLogger) Panic(msg string, tags ...tag.Tag) {
	l.emit(slog.LevelError, msg, tags)
	panic(msg)
}

func (l serverLogger) Fatal(msg string, tags ...tag.Tag) {
	l.emit(slog.LevelError, msg, tags)
	panic(fatalPanic{msg: fmt.Sprintf("temporal server: %s%s", msg, errorSuffix(tags))})
}

// With binds tags once, so the server's per-service and per-shard loggers do
// not re-convert them on every line.
func (l serverLogger) With(tags ...tag.Tag) log.Logger {
	return serverLogger{log: l.log.With(attrs(tags)...), stopping: l.stopping}
}

func (l serverLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if l.stopping.Load() || !l.log.Enabled(ctx, level) || expected(msg, tags) {
		return
	}
	l.log.Log(ctx, level, msg, attrs(tags)...)
}

// expected reports the warnings and errors every start logs while nothing is
// wrong: the Nexus HTTP port Primer does not use, and the worker service's
// first calls racing the frontend's health check, which it retries.
func expected(msg string, tags []tag.Tag) bool {
	if strings.HasPrefix(msg, "HTTP API port has not been set") {
		return true
	}
	return strings.Contains(errorText(tags), "Frontend is not healthy yet")
}

func attrs(tags []tag.Tag) []any {
	out := make([]any, 0, len(tags))
	for _, t := range tags {
		out = append(out, slog.Any(t.Key(), t.Value()))
	}
	return out
}

// errorSuffix returns ": <error>" when tags hold an error, so a recovered
// Fatal says why it failed.
func errorSuffix(tags []tag.Tag) string {
	if e := errorText(tags); e != "" {
		return ": " + e
	}
	return ""
}

// errorText is the text of the "error" tag, or "". The server's tag.Error
// gives its value as the error's string.
func errorText(tags []tag.Tag) string {
	for _, t := range tags {
		if t.Key() != "error" {
			continue
		}
		switch v := t.Value().(type) {
		case string:
			return v
		case error:
			return v.Error()
		}
	}
	return ""
}
