package container

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"path"
	"strings"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// Engine names accepted in a provider's `runtime` field.
const (
	EngineDocker = "docker"
	EnginePodman = "podman"
)

// Connection kinds and reachability kinds of a provider.
const (
	ConnSocket       = "socket"
	ConnTCP          = "tcp"
	ReachHostPort    = "host_port"
	ReachNetwork     = "network"
	EgressAllow      = "allow"
	EgressDenyAll    = "deny_all"
	DefaultWorkdir   = "/workspace"
	DefaultPidsLimit = 1024
)

// ProviderConfig is the container provider document:
//
//	kind: container
//	runtime: docker                  # or podman (its Docker-compatible API)
//	connection: {kind: socket, socket_path: /var/run/docker.sock}
//	reachability: {kind: host_port, bind_host: 127.0.0.1}
type ProviderConfig struct {
	Kind         string       `json:"kind,omitempty" access:"any"`
	Runtime      string       `json:"runtime,omitempty" access:"any"`
	Connection   Connection   `json:"connection" access:"any"`
	Reachability Reachability `json:"reachability" access:"any"`
}

// Connection says how the platform reaches the engine's API.
type Connection struct {
	Kind string `json:"kind" access:"any,endpoint"`
	// SocketPath is the engine's API socket (kind socket): a path on the
	// platform's host, so admin only.
	SocketPath string `json:"socket_path,omitempty" access:"admin:path,endpoint"`
	// Host is host:port or tcp://host:port (kind tcp).
	Host string `json:"host,omitempty" access:"any,addr"`
	// TLS holds the client certificate for a TLS engine (kind tcp).
	TLS *TLSConfig `json:"tls,omitempty" access:"any"`
}

// TLSConfig is the client certificate of a TLS engine: PEM files on the
// platform's host (an admin's), or the PEM values themselves (secrets,
// which members may give). Each of the three is given one way or the
// other.
type TLSConfig struct {
	CAFile   string `json:"ca_file,omitempty" access:"admin:path"`
	CertFile string `json:"cert_file,omitempty" access:"admin:path"`
	KeyFile  string `json:"key_file,omitempty" access:"admin:path"`
	CA       string `json:"ca,omitempty" access:"secret"`
	Cert     string `json:"cert,omitempty" access:"secret"`
	Key      string `json:"key,omitempty" access:"secret"`
}

// Reachability says how the platform reaches a workspace's runtime.
type Reachability struct {
	Kind string `json:"kind" access:"any"`
	// BindHost is the host address published runtime ports bind to
	// (host_port). Only that address listens; 127.0.0.1 keeps them local.
	BindHost string `json:"bind_host,omitempty" access:"any"`
	// ConnectHost is the address the platform dials for a published port
	// when it differs from BindHost (a remote engine bound to 0.0.0.0).
	ConnectHost string `json:"connect_host,omitempty" access:"any,addr"`
	// Network is the engine network workspaces join and the platform
	// reaches them on by container address (network), for a platform that
	// itself runs in a container on that network. Admin only: every
	// workspace of the provider, whatever its tenant, joins it, and it
	// may never be a tenant's network (checked again at provision).
	Network string `json:"network,omitempty" access:"admin:network"`
}

// ParseProviderConfig decodes and checks a container provider config.
func ParseProviderConfig(doc json.RawMessage) (ProviderConfig, error) {
	var c ProviderConfig
	if err := backend.OpenProviderConfig(doc, &c, &c.Kind, Type); err != nil {
		return c, err
	}
	switch c.Runtime {
	case "":
		c.Runtime = EngineDocker
	case EngineDocker, EnginePodman:
	default:
		return c, errs.Field("spec.config.runtime", "spec.config.runtime: is %q, must be %q or %q", c.Runtime, EngineDocker, EnginePodman)
	}

	conn := &c.Connection
	switch conn.Kind {
	case ConnSocket:
		var err error
		if conn.SocketPath, err = backend.AbsPath("spec.config.connection.socket_path", conn.SocketPath); err != nil {
			return c, err
		}
		if conn.Host != "" || conn.TLS != nil {
			return c, errs.Field("spec.config.connection", "spec.config.connection: host and tls are for kind tcp")
		}
	case ConnTCP:
		if conn.Host == "" {
			return c, errs.Field("spec.config.connection.host", "spec.config.connection.host: required for kind tcp")
		}
		h := strings.TrimPrefix(conn.Host, "tcp://")
		if _, port, err := net.SplitHostPort(h); err != nil || port == "" {
			return c, errs.Field("spec.config.connection.host", "spec.config.connection.host: %q must be host:port", conn.Host)
		}
		conn.Host = h
		if t := conn.TLS; t != nil {
			for _, p := range []struct{ name, file, value string }{{"ca", t.CAFile, t.CA}, {"cert", t.CertFile, t.Cert}, {"key", t.KeyFile, t.Key}} {
				f := "spec.config.connection.tls." + p.name
				switch {
				case p.file != "" && p.value != "":
					return c, errs.Field(f, "%s: give %s or %s_file, not both", f, f, p.name)
				case p.file == "" && p.value == "":
					return c, errs.Field(f, "%s: required (the PEM value, or %s_file naming a file on the Primer host)", f, p.name)
				}
			}
		}
	case "":
		return c, errs.Field("spec.config.connection.kind", "spec.config.connection.kind: required, %q or %q", ConnSocket, ConnTCP)
	default:
		return c, errs.Field("spec.config.connection.kind", "spec.config.connection.kind: is %q, must be %q or %q", conn.Kind, ConnSocket, ConnTCP)
	}

	r := &c.Reachability
	switch r.Kind {
	case ReachHostPort:
		if r.Network != "" {
			return c, errs.Field("spec.config.reachability.network", "spec.config.reachability.network: only for kind network")
		}
		if r.BindHost == "" {
			r.BindHost = "127.0.0.1"
		}
		if net.ParseIP(r.BindHost) == nil {
			return c, errs.Field("spec.config.reachability.bind_host", "spec.config.reachability.bind_host: %q must be an IP address", r.BindHost)
		}
		if r.ConnectHost == "" {
			r.ConnectHost = defaultConnectHost(r.BindHost, conn)
		}
	case ReachNetwork:
		if r.Network == "" {
			return c, errs.Field("spec.config.reachability.network", "spec.config.reachability.network: required for kind network")
		}
		if r.BindHost != "" || r.ConnectHost != "" {
			return c, errs.Field("spec.config.reachability", "spec.config.reachability: bind_host and connect_host are for kind host_port")
		}
	case "":
		return c, errs.Field("spec.config.reachability.kind", "spec.config.reachability.kind: required, %q or %q", ReachHostPort, ReachNetwork)
	default:
		return c, errs.Field("spec.config.reachability.kind", "spec.config.reachability.kind: is %q, must be %q or %q", r.Kind, ReachHostPort, ReachNetwork)
	}
	return c, nil
}

// defaultConnectHost is where the platform dials a port published on bind:
// bind itself, or for a wildcard bind the engine's host (loopback for a
// local socket).
func defaultConnectHost(bind string, conn *Connection) string {
	if ip := net.ParseIP(bind); ip == nil || !ip.IsUnspecified() {
		return bind
	}
	if conn.Kind == ConnTCP {
		if h, _, err := net.SplitHostPort(conn.Host); err == nil {
			return h
		}
	}
	return "127.0.0.1"
}

// Template is the container template's backend document:
//
//	kind: container
//	image: primer/python:1.0
//	cpu_cores: 1
//	memory_bytes: 536870912
//	pids_limit: 1024
//	network: {egress: deny_all}
//	workdir: /workspace
//	user: user               # commands run as, files belong to; made when missing
//	labels: {team: evals}
//	env, files, init: as on every backend
type Template struct {
	backend.Common
	Image       string        `json:"image"`
	CPUCores    float64       `json:"cpu_cores,omitempty"`
	MemoryBytes int64         `json:"memory_bytes,omitempty"`
	PidsLimit   int64         `json:"pids_limit,omitempty"`
	Network     NetworkPolicy `json:"network,omitzero"`
	Workdir     string        `json:"workdir,omitempty"`
	// User is the sandbox user commands run as and files are created for
	// when a request names none; empty means root. Made in the container
	// when its image lacks it.
	User   string            `json:"user,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Storage is where the workspace's files live: StorageVolume (the
	// default), a volume of its own mounted at Workdir, or StorageLayer,
	// the container's own layer. A layer workspace's snapshot (and so its
	// fork) is one commit, with no copy of the volume's files; its reset
	// always makes the container again (see layer.go).
	Storage string `json:"storage,omitempty"`
}

// Workspace storage (Template.Storage).
const (
	StorageVolume = "volume"
	StorageLayer  = "layer"
)

// NetworkPolicy is a template's network section.
type NetworkPolicy struct {
	// Egress is allow (the default) or deny_all: the workspace opens no
	// connection to anything outside itself (internet, host, other
	// workspaces); only the platform's connection to its runtime flows.
	Egress string `json:"egress,omitempty"`
}

// minMemory is the smallest memory limit engines accept (6 MiB) rounded up
// to leave the runtime room.
const minMemory = 16 << 20

// reservedDirs may not be a workdir: the volume would hide the system.
var reservedDirs = []string{"/", "/bin", "/dev", "/etc", "/lib", "/lib64", "/proc", "/sbin", "/sys", "/usr", "/.primer"}

// ParseTemplate decodes and checks a container template and fills defaults.
func ParseTemplate(doc json.RawMessage) (Template, error) {
	var t Template
	if err := backend.DecodeStrict(doc, "spec.backend", &t); err != nil {
		return t, err
	}
	if err := t.Common.Check(Type); err != nil {
		return t, err
	}
	if strings.TrimSpace(t.Image) == "" {
		return t, errs.Field("spec.backend.image", "spec.backend.image: required")
	}
	if strings.ContainsAny(t.Image, " \t\n") {
		return t, errs.Field("spec.backend.image", "spec.backend.image: %q is not an image reference", t.Image)
	}
	if err := backend.CheckTemplateUser(t.User); err != nil {
		return t, err
	}
	if t.CPUCores < 0 || math.IsNaN(t.CPUCores) || t.CPUCores > 1024 {
		return t, errs.Field("spec.backend.cpu_cores", "spec.backend.cpu_cores: %v must be between 0 (no limit) and 1024", t.CPUCores)
	}
	if t.MemoryBytes != 0 && t.MemoryBytes < minMemory {
		return t, errs.Field("spec.backend.memory_bytes", "spec.backend.memory_bytes: %d is below the minimum of %d (16 MiB)", t.MemoryBytes, minMemory)
	}
	switch {
	case t.PidsLimit < 0:
		return t, errs.Field("spec.backend.pids_limit", "spec.backend.pids_limit: %d must be positive", t.PidsLimit)
	case t.PidsLimit == 0:
		t.PidsLimit = DefaultPidsLimit
	case t.PidsLimit < 16:
		return t, errs.Field("spec.backend.pids_limit", "spec.backend.pids_limit: %d leaves no room for the runtime and a shell (minimum 16)", t.PidsLimit)
	}
	switch t.Network.Egress {
	case "":
		t.Network.Egress = EgressAllow
	case EgressAllow, EgressDenyAll:
	default:
		return t, errs.Field("spec.backend.network.egress", "spec.backend.network.egress: is %q, must be %q or %q", t.Network.Egress, EgressAllow, EgressDenyAll)
	}
	switch t.Storage {
	case "":
		t.Storage = StorageVolume
	case StorageVolume, StorageLayer:
	default:
		return t, errs.Field("spec.backend.storage", "spec.backend.storage: is %q, must be %q or %q", t.Storage, StorageVolume, StorageLayer)
	}
	if t.Workdir == "" {
		t.Workdir = DefaultWorkdir
	}
	if !path.IsAbs(t.Workdir) || path.Clean(t.Workdir) != t.Workdir {
		return t, errs.Field("spec.backend.workdir", "spec.backend.workdir: %q must be a clean absolute path", t.Workdir)
	}
	for _, d := range reservedDirs {
		if t.Workdir == d {
			return t, errs.Field("spec.backend.workdir", "spec.backend.workdir: %q is a system directory", t.Workdir)
		}
	}
	for k := range t.Labels {
		if k == "" || strings.HasPrefix(k, labelPrefix) {
			return t, errs.Field("spec.backend.labels", "spec.backend.labels: %q: keys under %q are the platform's", k, labelPrefix)
		}
	}
	return t, nil
}

// String describes a template's limits for logs and events.
func (t Template) String() string {
	return fmt.Sprintf("image=%s cpu=%v memory=%d pids=%d egress=%s", t.Image, t.CPUCores, t.MemoryBytes, t.PidsLimit, t.Network.Egress)
}
