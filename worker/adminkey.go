package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
)

// firstAdminKeyID is the id of the first admin key. It is fixed so that API
// processes starting together on one PostgreSQL make exactly one: every one
// of them inserts this id, the primary key lets one insert through and the
// others see a conflict.
const firstAdminKeyID = "key-first-admin"

// ensureAdminKey makes the first admin key on a database that has no key
// yet and writes it, mode 0600, to DataDir/admin.key, where primectl on
// this machine finds it. The key goes to a file of its own first, the row
// next, and the file becomes admin.key last: a process that loses the race
// removes its file and leaves the winner's admin.key alone (even in a
// shared data dir), and one killed after the row keeps the key on disk in
// admin.key.<pid>.tmp. A process killed before the row leaves no working
// key, and the next start (still no key) makes one. The key itself is never
// logged.
func (s *Server) ensureAdminKey(ctx context.Context) error {
	n, err := s.store.CountAPIKeys(ctx)
	if err != nil || n > 0 {
		return err
	}
	id, key, _ := models.NewAPIKey()
	key = strings.Replace(key, "."+id+".", "."+firstAdminKeyID+".", 1)
	path := s.AdminKeyPath()
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(key+"\n"), 0o600); err != nil {
		return fmt.Errorf("write admin key: %w", err)
	}
	err = s.store.CreateAPIKey(ctx, &wire.APIKey{
		ID: firstAdminKeyID, TenantID: wire.DefaultTenantID, Role: wire.RoleAdmin,
		Name: "first admin key", Hash: models.HashAPIKey(key),
	})
	if errs.Is(err, errs.Conflict) {
		os.Remove(tmp)
		s.logger.Info("another process made the first admin key; it is in that process's data dir", "key_id", firstAdminKeyID)
		return nil
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("create admin key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write admin key: %w (the key is in %s)", err, tmp)
	}
	s.logger.Info("created the first admin key", "key_id", firstAdminKeyID, "path", path)
	return nil
}

// AdminKeyPath is where the first admin key is written (DataDir/admin.key).
func (s *Server) AdminKeyPath() string { return filepath.Join(s.cfg.DataDir, client.AdminKeyFile) }
