package temporalserver

import (
	"log/slog"
	"net"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/dynamicconfig"

	"github.com/primerhq/primer/errs"
)

// Defaults for the zero fields of Config.
const (
	DefaultHost      = "127.0.0.1"
	DefaultPort      = 7233
	DefaultUIPort    = 8233
	DefaultNamespace = "default"
	DefaultRetention = 72 * time.Hour
)

// UIDisabled is the UIPort that starts no web UI.
const UIDisabled = -1

// numHistoryShards is fixed when the database is first created: Temporal keeps
// the persisted value on every later start (and logs a warning if it differs).
// Four shards let history work on four workflows' tasks at once on two cores
// without multiplying the per-shard queue pollers that SQLite has to serve.
const numHistoryShards = 4

// Config says where the embedded Temporal server keeps its data and listens.
type Config struct {
	// DataDir holds the SQLite file temporal.db; it is created if missing.
	DataDir string
	// Host is the IP the frontend and the UI bind to; default 127.0.0.1.
	// "localhost" means 127.0.0.1. The internal services always bind to loopback.
	Host string
	// Port is the frontend gRPC port; default 7233.
	Port int
	// UIPort is the web UI HTTP port; default 8233, UIDisabled (-1) for no UI.
	UIPort int
	// Namespace is created at the first start; default "default".
	Namespace string
	// Retention is how long closed workflows are kept. It applies when the
	// namespace is created; default 72h.
	Retention time.Duration
	// SearchAttributes are custom search attributes registered on the namespace
	// at every start if missing (e.g. PrimerPhase: Keyword).
	SearchAttributes map[string]enumspb.IndexedValueType
	// Logger gets the server's Warn and Error lines; nil discards them.
	Logger *slog.Logger
}

// withDefaults fills the zero fields and validates the rest.
func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" {
		return c, errs.Field("data_dir", "temporal server: data dir is required")
	}
	if c.Host == "" || c.Host == "localhost" {
		if c.Host == "localhost" {
			c.Host = "127.0.0.1"
		} else {
			c.Host = DefaultHost
		}
	}
	// The server binds with BindOnIP, which takes an IP literal only.
	if net.ParseIP(c.Host) == nil {
		return c, errs.Field("host", "temporal server: host %q: not an IP address", c.Host)
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Port < 1 || c.Port > 65535 {
		return c, errs.Field("port", "temporal server: port %d: out of range 1-65535", c.Port)
	}
	switch {
	case c.UIPort == 0:
		c.UIPort = DefaultUIPort
	case c.UIPort == UIDisabled:
	case c.UIPort < 1 || c.UIPort > 65535:
		return c, errs.Field("ui_port", "temporal server: ui port %d: out of range 1-65535, or -1 to disable", c.UIPort)
	}
	if c.UIPort == c.Port {
		return c, errs.Field("ui_port", "temporal server: ui port %d: same as the frontend port", c.UIPort)
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.Retention < time.Hour {
		// The frontend rejects a shorter retention on a local namespace at
		// every later update, so the UI could not edit the namespace.
		return c, errs.Field("retention", "temporal server: retention %s: must be at least 1h", c.Retention)
	}
	for name, typ := range c.SearchAttributes {
		if name == "" {
			return c, errs.Field("search_attributes", "temporal server: search attribute name is empty")
		}
		if _, ok := enumspb.IndexedValueType_name[int32(typ)]; !ok || typ == enumspb.INDEXED_VALUE_TYPE_UNSPECIFIED {
			return c, errs.Field("search_attributes", "temporal server: search attribute %s: type %d is not a valid indexed value type", name, typ)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// dialHost is the address clients use: an unspecified bind address
// (0.0.0.0, ::) is reached on loopback.
func (c Config) dialHost() string {
	if ip := net.ParseIP(c.Host); ip != nil && ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return c.Host
}

// dynamicConfig is the server's dynamic config for a single-node dev server on
// SQLite that runs about a thousand long-lived workflows, each waking on a 30 s
// timer, with one Primer process as its client and the web UI as its viewer.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// Primer's API drives workflows with updates; on by default in this
		// server version, set so a default change cannot silently break it.
		dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key():              true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecutionAsyncAccepted.Key(): true,

		// A thousand workflows restarting together after a restart (or the
		// lead's bench) burst well past the per-instance defaults (2400 RPS,
		// 1200 for matching); being throttled here only adds SDK retries.
		dynamicconfig.FrontendRPS.Key():                        10000,
		dynamicconfig.FrontendMaxNamespaceRPSPerInstance.Key(): 10000,
		dynamicconfig.MatchingRPS.Key():                        10000,
		dynamicconfig.HistoryRPS.Key():                         10000,
		// Long polls and waiting calls (pollers, update-and-wait, GetResult)
		// count against this; 1200 is too close to one per workflow.
		dynamicconfig.FrontendMaxConcurrentLongRunningRequestsPerInstance.Key(): 4000,
		// The default of 10 visibility RPS is one UI tab plus a few API list
		// calls; Primer lists workspaces by search attribute.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 200,

		// One partition per task queue: with a single matching node, several
		// partitions only add forwarding hops, and a backlog in a partition no
		// poller happens to be on waits. The value is read from the start, so
		// no task is ever written to a partition that is later dropped.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,

		// Every history task (a timer firing, a workflow task to hand to
		// matching, a visibility row) loads and saves through the one SQLite
		// connection. 512 workers per queue only turn that queue into context
		// deadlines: after a restart with a thousand open workflows, hundreds
		// of mutable-state loads timed out waiting for the connection and were
		// retried. A few dozen keep the connection busy without the timeouts.
		dynamicconfig.TimerProcessorSchedulerWorkerCount.Key():      32,
		dynamicconfig.TransferProcessorSchedulerWorkerCount.Key():   32,
		dynamicconfig.VisibilityProcessorSchedulerWorkerCount.Key(): 32,

		// A history shard reads its transfer queue (each workflow task and
		// activity task to hand to matching) at most this often a second;
		// the default of 20 is a token bucket of 20 that a single workflow
		// drains in a dozen agent turns, after which every workflow task
		// waited ~40 ms for a token: an agent turn (two workflow tasks)
		// took ~100 ms of which ~80 was this wait. A read is triggered only
		// by new tasks and reads up to a batch of 100, so the cap bounds
		// SQLite reads under a burst, not the steady load.
		dynamicconfig.TransferProcessorMaxPollRPS.Key(): 1000,

		// A run that continues as new less than this after it started has
		// its next run's first workflow task held back until then (and a
		// start that reuses a workflow id that soon is refused). At the
		// default of 1 s an agent run whose 20 turns took 400 ms stalled
		// 600 ms at every continue-as-new; 200 ms still stops a tight loop.
		dynamicconfig.WorkflowIdReuseMinimalInterval.Key(): 200 * time.Millisecond,

		// On a loaded two-core machine a slow health check is not a deadlock;
		// dumping every goroutine into Primer's log helps nobody.
		dynamicconfig.DeadlockDumpGoroutines.Key(): false,

		// Left at false on purpose: with SQL visibility, custom search
		// attributes are aliases on the namespace (refreshed every 2 s), and
		// the cluster-level list they map to never changes; forcing a refresh
		// would read cluster metadata from SQLite under a global lock on every
		// search attribute lookup.
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): false,
	}
}
