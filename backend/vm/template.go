package vm

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// DefaultRoot is where workspace directories live on a host when the
// template names no root.
const DefaultRoot = "/var/lib/primer/workspaces"

// minMemory is the smallest memory cap a template may ask for: below it
// the runtime itself does not start.
const minMemory = 32 << 20

// Template is the vm template's backend document:
//
//	kind: vm
//	root: /srv/primer        # workspace directories are <root>/<workspace id>
//	user: primer-ws          # runs the runtime and every command; made when missing
//	selector: {gpu: a100}    # labels a host must have (hosts mode)
//	cpu: 1.5                 # cores; a systemd scope or a cgroup v2 directory
//	memory: 2Gi              # bytes, a Kubernetes quantity
//	env, files, init, start_timeout, recovery, lifetime: as on every backend
type Template struct {
	backend.Common
	Root string `json:"root,omitempty"`
	// User runs the workspace's runtime and commands; empty means the
	// connection's user. A user the host lacks is made with useradd and
	// removed with the last workspace that uses it; one the host had is
	// never removed.
	User     string            `json:"user,omitempty"`
	Selector map[string]string `json:"selector,omitempty"`
	CPU      float64           `json:"cpu,omitempty"`
	Memory   string            `json:"memory,omitempty"`

	memBytes int64
}

// userPattern is what useradd accepts on every common distribution.
var userPattern = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// safePath keeps paths that go into the host's shell scripts plain.
var safePath = regexp.MustCompile(`^[A-Za-z0-9/._-]+$`)

// ParseTemplate decodes and checks a vm template document. Every error
// names the field at fault under spec.backend.
func ParseTemplate(doc json.RawMessage) (Template, error) {
	var t Template
	if err := backend.DecodeStrict(doc, "spec.backend", &t); err != nil {
		return t, err
	}
	if err := t.Common.Check(Type); err != nil {
		return t, err
	}
	if t.Root == "" {
		t.Root = DefaultRoot
	}
	switch clean := path.Clean(t.Root); {
	case !path.IsAbs(t.Root):
		return t, errs.Field("spec.backend.root", "spec.backend.root: %q must be an absolute path", t.Root)
	case clean == "/" || !safePath.MatchString(t.Root):
		return t, errs.Field("spec.backend.root", "spec.backend.root: %q must be a directory below / of letters, digits, '.', '_', '-'", t.Root)
	case clean == stateDir || strings.HasPrefix(clean, stateDir+"/") || strings.HasPrefix(clean, runtimeDir):
		return t, errs.Field("spec.backend.root", "spec.backend.root: %q is where Primer keeps its own state on the host", t.Root)
	default:
		t.Root = clean
	}
	if t.User != "" && !userPattern.MatchString(t.User) {
		return t, errs.Field("spec.backend.user", "spec.backend.user: %q is not a user name (lower case letters, digits, '_', '-'; at most 32)", t.User)
	}
	for k := range t.Selector {
		if k == "" {
			return t, errs.Field("spec.backend.selector", "spec.backend.selector: empty label name")
		}
	}
	if t.CPU < 0 || t.CPU > 1024 {
		return t, errs.Field("spec.backend.cpu", "spec.backend.cpu: %v must be between 0 (no cap) and 1024 cores", t.CPU)
	}
	if t.Memory != "" {
		q, err := resource.ParseQuantity(t.Memory)
		if err != nil {
			return t, errs.Field("spec.backend.memory", "spec.backend.memory: %q is not a quantity (\"512Mi\", \"2Gi\"): %v", t.Memory, err)
		}
		if t.memBytes = q.Value(); t.memBytes < minMemory {
			return t, errs.Field("spec.backend.memory", "spec.backend.memory: %s is below the minimum of 32Mi", t.Memory)
		}
	}
	return t, nil
}

// capped reports whether the template asks for a CPU or memory cap.
func (t Template) capped() bool { return t.CPU > 0 || t.memBytes > 0 }

// String describes the template for logs (no env values).
func (t Template) String() string {
	s := fmt.Sprintf("root=%s user=%s", t.Root, t.User)
	if t.capped() {
		s += fmt.Sprintf(" cpu=%v memory=%d", t.CPU, t.memBytes)
	}
	return s
}
