package vm

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// DefaultMachinesTimeout bounds one run of a machines create or destroy
// command when the provider sets no timeout.
const DefaultMachinesTimeout = 5 * time.Minute

// ProviderConfig is the vm provider document:
//
//	kind: vm
//	connection: {user: root, private_key_file: /etc/primer/id_ed25519, known_hosts: /etc/primer/known_hosts}
//	hosts:                              # a fixed fleet ...
//	  - {address: 10.0.0.5, labels: {gpu: a100}, max_workspaces: 8}
//	machines:                           # ... or one machine per workspace
//	  {create: [/opt/vm/create.sh], destroy: [/opt/vm/destroy.sh], timeout: 5m}
//	allow_root_user: false              # templates may run workspaces as root (admin only)
//
// Exactly one of hosts and machines is set.
type ProviderConfig struct {
	Kind       string       `json:"kind,omitempty" access:"any"`
	Connection Connection   `json:"connection" access:"any"`
	Hosts      []HostConfig `json:"hosts,omitempty" access:"any"`
	Machines   *Machines    `json:"machines,omitempty" access:"any"`
	// AllowRootUser lets the provider's templates run workspaces as root or
	// a user as powerful (see checkUser); without it they are refused when
	// the template is stored and again at every provision. Only an admin
	// sets it.
	AllowRootUser bool `json:"allow_root_user,omitempty" access:"admin:root"`
}

// HostConfig is one host of a fixed fleet.
type HostConfig struct {
	// Address is host or host:port (the connection's port by default).
	Address string            `json:"address" access:"any,addr"`
	Labels  map[string]string `json:"labels,omitempty" access:"any"`
	// MaxWorkspaces bounds the workspaces placed on the host; nil means no
	// bound.
	MaxWorkspaces *int `json:"max_workspaces,omitempty" access:"any"`
}

// Machines are the commands that make and remove one machine per
// workspace, run on the platform's host. Each gets the workspace id as its
// last argument and in PRIMER_WORKSPACE_ID; create prints
// {"address":"host[:port]"} on stdout. Both are idempotent on the id.
// They run on the platform's host with its environment: admin only.
type Machines struct {
	Create  []string `json:"create" access:"admin:command,endpoint"`
	Destroy []string `json:"destroy" access:"admin:command"`
	// Timeout bounds one run, as a Go duration; default
	// DefaultMachinesTimeout.
	Timeout string `json:"timeout,omitempty" access:"any"`

	timeout time.Duration
}

// ParseProviderConfig decodes and checks a vm provider config. Every error
// names the field at fault under spec.config.
func ParseProviderConfig(doc json.RawMessage) (ProviderConfig, error) {
	var c ProviderConfig
	if err := backend.OpenProviderConfig(doc, &c, &c.Kind, Type); err != nil {
		return c, err
	}
	if err := c.Connection.Validate("spec.config.connection"); err != nil {
		return c, err
	}
	switch {
	case c.Hosts != nil && c.Machines != nil:
		return c, errs.Field("spec.config.machines", "spec.config.machines: set either hosts or machines, not both")
	case c.Hosts == nil && c.Machines == nil:
		return c, errs.Field("spec.config.hosts", "spec.config.hosts: one of hosts (a fixed fleet) or machines (create and destroy commands) is required")
	case c.Machines != nil:
		return c, c.Machines.check("spec.config.machines")
	}
	if len(c.Hosts) == 0 {
		return c, errs.Field("spec.config.hosts", "spec.config.hosts: empty host list")
	}
	seen := map[string]bool{}
	for i := range c.Hosts {
		h := &c.Hosts[i]
		f := "spec.config.hosts." + strconv.Itoa(i)
		if err := checkAddress(f+".address", h.Address); err != nil {
			return c, err
		}
		key := hostPort(h.Address, c.Connection.Port)
		if seen[key] {
			return c, errs.Field(f+".address", "%s.address: %s is listed twice", f, h.Address)
		}
		seen[key] = true
		if h.MaxWorkspaces != nil && *h.MaxWorkspaces < 1 {
			return c, errs.Field(f+".max_workspaces", "%s.max_workspaces: is %d, must be at least 1 (leave it out for no bound)", f, *h.MaxWorkspaces)
		}
		for k := range h.Labels {
			if k == "" {
				return c, errs.Field(f+".labels", "%s.labels: empty label name", f)
			}
		}
	}
	return c, nil
}

func (m *Machines) check(f string) error {
	for _, cmd := range []struct {
		name string
		argv []string
	}{{"create", m.Create}, {"destroy", m.Destroy}} {
		switch {
		case len(cmd.argv) == 0:
			return errs.Field(f+"."+cmd.name, "%s.%s: required, the command and its arguments", f, cmd.name)
		case !filepath.IsAbs(cmd.argv[0]):
			return errs.Field(f+"."+cmd.name, "%s.%s: %q must be an absolute path", f, cmd.name, cmd.argv[0])
		}
	}
	m.timeout = DefaultMachinesTimeout
	if m.Timeout != "" {
		d, err := time.ParseDuration(m.Timeout)
		if err != nil || d <= 0 {
			return errs.Field(f+".timeout", "%s.timeout: %q must be a positive Go duration (\"5m\")", f, m.Timeout)
		}
		m.timeout = d
	}
	return nil
}

// checkAddress accepts host or host:port, without a scheme or user.
func checkAddress(field, addr string) error {
	switch {
	case strings.TrimSpace(addr) == "":
		return errs.Field(field, "%s: required", field)
	case strings.ContainsAny(addr, "/@ "):
		return errs.Field(field, "%s: %q must be host or host:port", field, addr)
	}
	if _, port, err := net.SplitHostPort(addr); err == nil && port == "" {
		return errs.Field(field, "%s: %q has an empty port", field, addr)
	}
	return nil
}
