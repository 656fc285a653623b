package vm

import (
	"fmt"

	"github.com/primerhq/primer/errs"
)

// rootUser is the one user whose name alone says it is root; the host's
// start script refuses the others as powerful (uid 0 under another name, a
// sudoer, a member of sudo, wheel, docker, ...) before it makes anything.
const rootUser = "root"

// workspaceUser returns the user a template's workspaces run as: its own,
// else the connection's.
func (c ProviderConfig) workspaceUser(t Template) string {
	if t.User != "" {
		return t.User
	}
	return c.Connection.User
}

// checkUser refuses a template whose workspaces would run as root on the
// host, or as the connection's user (root, or a user the backend needs
// passwordless sudo for), unless the provider sets allow_root_user. On a
// fleet the host is shared by every tenant's workspaces: a member's
// commands run as root there would own them all. It asks nothing of the
// host, so a refused template runs nothing there; the start script checks
// the user on the host as well.
func (c ProviderConfig) checkUser(t Template) error {
	if c.AllowRootUser {
		return nil
	}
	user := c.workspaceUser(t)
	var why string
	switch {
	case user == rootUser && t.User == "":
		why = "empty runs workspaces as the connection's user, root"
	case user == rootUser:
		why = fmt.Sprintf("%q runs workspaces as root", user)
	case user == c.Connection.User && t.User == "":
		why = fmt.Sprintf("empty runs workspaces as the connection's user %s, whom the backend needs passwordless sudo for", user)
	case user == c.Connection.User:
		why = fmt.Sprintf("%q is the connection's user, whom the backend needs passwordless sudo for", user)
	default:
		return nil
	}
	return &errs.Error{Kind: errs.Forbidden, Field: "spec.backend.user", Msg: "spec.backend.user: " + why +
		" on the provider's hosts; name an unprivileged user (made on the host when missing), or have an admin set allow_root_user on the provider"}
}
