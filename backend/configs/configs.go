// Package configs lists the provider config type of every backend type, so
// that the server's registry and the tests that check the access rules
// (backend.CheckRules) see the same list: a new backend added here without
// rules on its fields fails them.
package configs

import (
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/wire"
)

// Providers returns a zero value of each backend type's provider config,
// by backend type (the `provider` field of a provider).
func Providers() map[string]any {
	return map[string]any{
		wire.BackendLocal:      local.ProviderConfig{},
		wire.BackendWorktree:   local.ProviderConfig{},
		wire.BackendContainer:  container.ProviderConfig{},
		wire.BackendKubernetes: kubernetes.ProviderConfig{},
		wire.BackendVM:         vm.ProviderConfig{},
	}
}
