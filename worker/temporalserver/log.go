package temporalserver

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts a *slog.Logger to the Temporal server's log.Logger.
// Debug and Info are dropped before any tag is converted: the server logs
// hundreds of Info lines at start and on every shard movement, and none of
// them is a state change of Primer.
type serverLogger struct {
	log *slog.Logger
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
	return serverLogger{log: l.log.With(attrs(tags)...)}
}

func (l serverLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	l.log.Log(ctx, level, msg, attrs(tags)...)
}

func attrs(tags []tag.Tag) []any {
	out := make([]any, 0, len(tags))
	for _, t := range tags {
		out = append(out, slog.Any(t.Key(), t.Value()))
	}
	return out
}

// errorSuffix returns ": <error>" for the first error tag, so a recovered
// Fatal says why it failed.
func errorSuffix(tags []tag.Tag) string {
	for _, t := range tags {
		if err, ok := t.Value().(error); ok && err != nil {
			return ": " + err.Error()
		}
	}
	return ""
}
