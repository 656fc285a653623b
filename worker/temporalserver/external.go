package temporalserver

import (
	"context"
	"errors"
	"log/slog"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/primerhq/primer/errs"
)

// PrepareExternal readies a Temporal cluster that Primer did not start
// (deploy/temporal, or an operator's own): it waits until the frontend at
// address answers, registers cfg.Namespace when it is missing and
// createNamespace is set (with cfg.Retention), and adds the search attributes
// of cfg.SearchAttributes that the namespace lacks. DataDir, ports and UI
// are not used. Several processes may run it at once: adding an attribute
// another just added is not an error.
func PrepareExternal(ctx context.Context, address string, cfg Config, createNamespace bool) error {
	cfg.DataDir = "external" // withDefaults requires one; nothing is written
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var c client.Client
	err = poll(ctx, func() error {
		var err error
		c, err = client.DialContext(ctx, client.Options{
			HostPort:  address,
			Namespace: cfg.Namespace,
			Logger:    sdklog.NewStructuredLogger(slog.New(minLevel{slog.LevelWarn, cfg.Logger.Handler()})),
		})
		return err
	})
	if err != nil {
		return errs.E(errs.Unavailable, "temporal %s: not answering: %w", address, err)
	}
	defer c.Close()

	_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: cfg.Namespace})
	var notFound *serviceerror.NamespaceNotFound
	switch {
	case errors.As(err, &notFound) && createNamespace:
		_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace:                        cfg.Namespace,
			WorkflowExecutionRetentionPeriod: durationpb.New(cfg.Retention),
		})
		var exists *serviceerror.NamespaceAlreadyExists
		if err != nil && !errors.As(err, &exists) {
			return errs.E(errs.Unavailable, "temporal %s: namespace %s: register: %w", address, cfg.Namespace, err)
		}
		// The services learn of a new namespace at their next namespace
		// cache refresh; until then the operator service says not found.
		err = poll(ctx, func() error {
			_, err := searchAttributes(ctx, c, cfg.Namespace)
			return err
		})
		if err != nil {
			return errs.E(errs.Unavailable, "temporal %s: namespace %s: registered, not served yet: %w", address, cfg.Namespace, err)
		}
		cfg.Logger.Info("temporal namespace registered", "namespace", cfg.Namespace, "retention", cfg.Retention)
	case errors.As(err, &notFound):
		return errs.E(errs.NotFound, "temporal %s: namespace %s does not exist: register it first (primer temporal-setup, or deploy/temporal/cluster.sh up)", address, cfg.Namespace)
	case err != nil:
		return errs.E(errs.Unavailable, "temporal %s: namespace %s: %w", address, cfg.Namespace, err)
	}
	// ensureNamespace waits until the namespace is visible and adds the
	// search attributes it lacks. Another process may add the same ones
	// between its list and its add, which the server refuses: the second
	// pass then finds them all listed.
	if err := ensureNamespace(ctx, address, cfg); err != nil {
		if ensureNamespace(ctx, address, cfg) != nil {
			return err
		}
	}
	return nil
}
