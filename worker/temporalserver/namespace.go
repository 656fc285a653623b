package temporalserver

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/primerhq/primer/errs"
)

// namespaceRefreshWait covers the services' namespace cache refresh
// (system.namespaceCacheRefreshInterval, 2 s): with SQL visibility a custom
// search attribute is an alias on the namespace, and history only accepts an
// upsert of it once its cache has the alias.
const namespaceRefreshWait = 3 * time.Second

// ensureNamespace waits until the frontend answers and the namespace exists,
// then registers the search attributes it lacks.
func ensureNamespace(ctx context.Context, frontend string, cfg Config) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()

	var c client.Client
	err := poll(ctx, func() error {
		var err error
		c, err = client.DialContext(ctx, client.Options{
			HostPort:  frontend,
			Namespace: cfg.Namespace,
			Logger:    sdklog.NewStructuredLogger(slog.New(minLevel{slog.LevelWarn, cfg.Logger.Handler()})),
		})
		return err
	})
	if err != nil {
		return errs.E(errs.Unavailable, "temporal server %s: not answering: %w", frontend, err)
	}
	defer c.Close()

	err = poll(ctx, func() error {
		_, err := c.WorkflowService().DescribeNamespace(ctx,
			&workflowservice.DescribeNamespaceRequest{Namespace: cfg.Namespace})
		return err
	})
	if err != nil {
		return errs.E(errs.Unavailable, "temporal server: namespace %s: %w", cfg.Namespace, err)
	}
	if len(cfg.SearchAttributes) == 0 {
		return nil
	}

	have, err := searchAttributes(ctx, c, cfg.Namespace)
	if err != nil {
		return err
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range slices.Sorted(maps.Keys(cfg.SearchAttributes)) {
		want := cfg.SearchAttributes[name]
		got, ok := have[name]
		switch {
		case !ok:
			missing[name] = want
		case got != want:
			return errs.E(errs.Conflict,
				"temporal server: search attribute %s: registered as %s, want %s", name, got, want)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        cfg.Namespace,
		SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("temporal server: search attributes %v: add: %w", slices.Sorted(maps.Keys(missing)), err)
	}
	err = poll(ctx, func() error {
		have, err := searchAttributes(ctx, c, cfg.Namespace)
		if err != nil {
			return err
		}
		for name := range missing {
			if _, ok := have[name]; !ok {
				return fmt.Errorf("search attribute %s: not listed yet", name)
			}
		}
		return nil
	})
	if err != nil {
		return errs.E(errs.Unavailable, "temporal server: search attributes: %w", err)
	}
	select {
	case <-time.After(namespaceRefreshWait):
	case <-ctx.Done():
		return errs.E(errs.Canceled, "temporal server: search attributes: %w", ctx.Err())
	}
	cfg.Logger.Info("temporal search attributes added",
		"namespace", cfg.Namespace, "search_attributes", slices.Sorted(maps.Keys(missing)))
	return nil
}

// searchAttributes lists the namespace's custom search attributes.
func searchAttributes(ctx context.Context, c client.Client, namespace string) (map[string]enumspb.IndexedValueType, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx,
		&operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("temporal server: namespace %s: list search attributes: %w", namespace, err)
	}
	return resp.GetCustomAttributes(), nil
}

// minLevel drops records below its level, so the SDK client used for the
// start-up checks logs only what needs attention.
type minLevel struct {
	level slog.Level
	slog.Handler
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{h.level, h.Handler.WithAttrs(attrs)}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.level, h.Handler.WithGroup(name)}
}
