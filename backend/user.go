package backend

import (
	"regexp"

	"github.com/primerhq/primer/errs"
)

// userName is a user name as useradd accepts it on every common
// distribution, and as the runtime's user.ensure does.
var userName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// CheckTemplateUser checks a container or Kubernetes template's user, the
// sandbox user its workspaces' commands run as and its files belong to by
// default (primer-runtime --user): empty, or a user name. The runtime
// creates it in the sandbox when the image lacks it; a request may still
// name another, root included (the sandbox is the workspace's own).
func CheckTemplateUser(name string) error {
	if name != "" && !userName.MatchString(name) {
		return errs.Field("spec.backend.user", "spec.backend.user: %q is not a user name (lower case letters, digits, '_', '-'; at most 32)", name)
	}
	return nil
}
