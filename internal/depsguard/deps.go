// Package depsguard pins the modules later issues build on, so go mod tidy
// keeps one resolvable set of versions. It has no code.
package depsguard

import (
	_ "github.com/coder/websocket"
	_ "github.com/docker/docker/client"
	_ "github.com/gin-gonic/gin"
	_ "github.com/libtnb/sqlite"
	_ "github.com/temporalio/ui-server/v2/server"
	_ "go.temporal.io/sdk/client"
	_ "go.temporal.io/sdk/testsuite"
	_ "go.temporal.io/sdk/worker"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	_ "go.temporal.io/server/temporal"
	_ "gorm.io/driver/postgres"
	_ "gorm.io/gorm"
)
