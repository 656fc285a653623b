package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/models"
)

// ensureAdminKey makes the first admin key on a database that has no key
// yet and writes it, mode 0600, to DataDir/admin.key, where primectl on
// this machine finds it. The file is written before the row: a crash
// between the two leaves no working key without its file, and the next
// start (still no key) writes a new one. The key itself is never logged.
func (s *Server) ensureAdminKey(ctx context.Context) error {
	n, err := s.store.CountAPIKeys(ctx)
	if err != nil || n > 0 {
		return err
	}
	id, key, hash := models.NewAPIKey()
	path := s.AdminKeyPath()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(key+"\n"), 0o600); err != nil {
		return fmt.Errorf("write admin key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write admin key: %w", err)
	}
	if err := s.store.CreateAPIKey(ctx, &models.APIKey{
		ID: id, TenantID: models.DefaultTenantID, Role: models.RoleAdmin, Name: "first admin key", Hash: hash,
	}); err != nil {
		return fmt.Errorf("create admin key: %w", err)
	}
	s.logger.Info("created the first admin key", "key_id", id, "path", path)
	return nil
}

// AdminKeyPath is where the first admin key is written (DataDir/admin.key).
func (s *Server) AdminKeyPath() string { return filepath.Join(s.cfg.DataDir, client.AdminKeyFile) }
