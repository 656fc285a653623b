package backend

import (
	"encoding/json"
	"regexp"

	"github.com/primerhq/primer/errs"
)

// idPattern bounds workspace ids to characters that are safe as a directory
// name, a container or volume name, a URL path segment and a git branch
// component. The server mints ws-<hex>; tests may use other simple names.
// No dots at all, so neither ".." nor a ".lock" suffix can sneak in.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// CheckID returns an Invalid error unless id is a workspace id every
// backend can use as a name (idPattern). A backend whose names are
// narrower (kubernetes: DNS labels) checks its own rule instead.
func CheckID(id string) error {
	if !idPattern.MatchString(id) {
		return errs.E(errs.Invalid, "workspace %q: invalid id: want letters, digits, '-' or '_'", id)
	}
	return nil
}

// Check checks a handle a backend of type typ was given for a sandbox it
// made: unlike CheckType its Backend must be set and be typ, and its
// workspace id must pass checkID (nil: CheckID). A backend adds the checks
// of its own attributes (a path, a namespace, a host).
func (h Handle) Check(typ string, checkID func(string) error) error {
	if h.Backend != typ {
		return h.wrongType(typ)
	}
	return checkIDWith(h.WorkspaceID, checkID)
}

// CheckTypeID is CheckType and the workspace id's check (checkID, nil:
// CheckID): what a backend asks of a handle that may have been built from
// the workspace id alone before it locks the workspace.
func (h Handle) CheckTypeID(typ string, checkID func(string) error) error {
	if err := h.CheckType(typ); err != nil {
		return err
	}
	return checkIDWith(h.WorkspaceID, checkID)
}

func (h Handle) wrongType(typ string) error {
	return errs.E(errs.Invalid, "workspace %s: handle is for backend %q, not %q", h.WorkspaceID, h.Backend, typ)
}

func checkIDWith(id string, checkID func(string) error) error {
	if checkID == nil {
		checkID = CheckID
	}
	return checkID(id)
}

// OpenProviderConfig is how every backend's ParseProviderConfig opens its
// document: decoded strictly into v (unknown fields named by their path
// under spec.config), its kind (*kind, a field of v) either want or empty,
// and then want.
func OpenProviderConfig(doc json.RawMessage, v any, kind *string, want string) error {
	if err := DecodeStrict(doc, "spec.config", v); err != nil {
		return err
	}
	if err := CheckKind("spec.config", *kind, want, true); err != nil {
		return err
	}
	*kind = want
	return nil
}
