package models

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Config says which database the Store opens.
type Config struct {
	// URL is empty or sqlite://PATH for a SQLite file, or postgres://... for PostgreSQL.
	URL string
	// SQLitePath is the SQLite file used when URL is empty.
	SQLitePath string
	Logger     *slog.Logger
}

// Store reads and writes Primer's resources. Every method takes ctx first and
// returns errs-kinded errors: NotFound for unknown ids, Conflict for
// duplicates, Invalid for rows that break a rule.
//
// Rules that span rows (a template needs its provider, a provider in use
// cannot go) are checked in one transaction that locks the referenced row
// (FOR SHARE / FOR UPDATE on PostgreSQL; SQLite has a single writer), so a
// concurrent delete cannot slip between the check and the write.
type Store struct {
	// w takes writes and write transactions; on SQLite it is one connection.
	w *gorm.DB
	// r serves plain reads; on PostgreSQL (and SQLite :memory:) it is w.
	r       *gorm.DB
	dialect string
	log     *slog.Logger
	// hub wakes this process's event streams (event_notify.go); origin
	// names the store in its PostgreSQL notifications, sent on channel to
	// the processes that LISTEN with url. closed ends the listener.
	hub       *eventHub
	origin    string
	url       string
	channel   string
	closed    chan struct{}
	closeOnce sync.Once
	// quotaGates holds one chan struct{} (capacity 1) per tenant id: the
	// quota-checked creates of a tenant take turns in this process before
	// they open a transaction (quota.go).
	quotaGates sync.Map
	// secrets holds the platform secrets read (platform_secret.go), by
	// name: they never change once made.
	secrets sync.Map
}

// Row locks; the SQLite driver drops them (its writer is already exclusive).
var (
	forShare  = clause.Locking{Strength: "SHARE"}
	forUpdate = clause.Locking{Strength: "UPDATE"}
)

// localConfig is the config document of the reserved local provider.
type localConfig struct {
	Kind     string `json:"kind"`
	RootPath string `json:"root_path"`
}

// seedTemplate is the backend document of the default template.
const seedTemplate = `{"kind":"local"}`

// EnsureDefaults creates the default tenant, the reserved local provider
// (root_path given) and the default template on it when they do not exist. Idempotent: existing rows,
// even changed ones, are left alone, and concurrent callers are safe because
// the inserts are ON CONFLICT DO NOTHING.
func (s *Store) EnsureDefaults(ctx context.Context, localRoot string) error {
	if localRoot == "" {
		return errs.E(errs.Invalid, "provider %s: root_path is empty", wire.LocalProviderID)
	}
	cfg, err := json.Marshal(localConfig{Kind: wire.BackendLocal, RootPath: localRoot})
	if err != nil {
		return errs.E(errs.Other, "provider %s: config: %w", wire.LocalProviderID, err)
	}
	p := &wire.Provider{ID: wire.LocalProviderID, Provider: wire.BackendLocal, Config: cfg}
	t := &wire.Template{
		ID:          wire.DefaultTemplateID,
		ProviderID:  wire.LocalProviderID,
		Description: "default template on the local provider",
		Backend:     json.RawMessage(seedTemplate),
		Generation:  1,
		// The platform wrote it: the host rule lets it run on local.
		AdminWritten: true,
	}
	tenant := &wire.Tenant{ID: wire.DefaultTenantID, Description: "the first tenant; owns what was made before tenants existed"}
	var created []string
	err = s.w.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(tenant)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected > 0 {
			created = append(created, "tenant "+tenant.ID)
		}
		res = tx.Clauses(clause.OnConflict{DoNothing: true}).Create(p)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected > 0 {
			created = append(created, "provider "+p.ID)
		}
		res = tx.Clauses(clause.OnConflict{DoNothing: true}).Create(t)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected > 0 {
			created = append(created, "template "+t.ID)
			return nil
		}
		// A default template stored before the host rule has no
		// AdminWritten; one never changed since its seed (generation 1,
		// the seed's document) is still the platform's own.
		return tx.Model(&wire.Template{}).
			Where("id = ? AND generation = 1 AND provider_id = ? AND admin_written = ?", t.ID, wire.LocalProviderID, false).
			Where("backend = ?", seedTemplate).
			UpdateColumn("admin_written", true).Error
	})
	if err != nil {
		return dbError(ctx, err, "provider "+wire.LocalProviderID+": ensure defaults")
	}
	for _, c := range created {
		s.log.Info("created default", "object", c, "root_path", localRoot)
	}
	return nil
}

// lockRow locks the row of model with id in tx; NotFound if there is none.
func lockRow(tx *gorm.DB, lock clause.Locking, model any, kind, id string) error {
	var ids []string
	if err := tx.Model(model).Clauses(lock).Where("id = ?", id).Pluck("id", &ids).Error; err != nil {
		return err
	}
	if len(ids) == 0 {
		return notFound(kind, id)
	}
	return nil
}

// firstID returns the smallest id of a model row matching where, or "".
func firstID(tx *gorm.DB, model any, where string, args ...any) (string, error) {
	var ids []string
	err := tx.Model(model).Where(where, args...).Order("id").Limit(1).Pluck("id", &ids).Error
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

// inUse returns err if set, else Conflict saying which row still references kind id.
func inUse(err error, kind, id, refKind, refID string) error {
	if err != nil {
		return err
	}
	return errs.E(errs.Conflict, "%s %s: in use by %s %s", kind, id, refKind, refID)
}

// reload reads the stored row with id back into dst.
func reload[T any](tx *gorm.DB, dst *T, id string) error {
	var fresh T
	if err := tx.Take(&fresh, "id = ?", id).Error; err != nil {
		return err
	}
	*dst = fresh
	return nil
}

// storedTime is t as the store keeps it (UTC, microseconds, like the NowFunc
// in gormConfig), so a caller-set timestamp reads back equal and SQLite's text
// timestamps keep sorting in time order. Zero stays zero for GORM to fill.
func storedTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

// notFound is the NotFound error for kind id.
func notFound(kind, id string) error {
	return errs.E(errs.NotFound, "%s %s: not found", kind, id)
}

// readError maps a failed single-row read of kind id.
func readError(ctx context.Context, err error, kind, id string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return notFound(kind, id)
	}
	return dbError(ctx, err, kind+" "+id+": get")
}

// writeError maps a failed write of kind id: errors that already have a kind
// pass through, a duplicate key is Conflict, anything else goes to dbError.
// A nil err stays nil.
func writeError(ctx context.Context, err error, kind, id, action string) error {
	var e *errs.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return err
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return errs.E(errs.Conflict, "%s %s: already exists", kind, id)
	case errors.Is(err, gorm.ErrRecordNotFound):
		return notFound(kind, id)
	}
	return dbError(ctx, err, kind+" "+id+": "+action)
}

// checkJSON returns Invalid (naming field) when raw is set but not JSON, so
// bad documents fail with a clear message instead of a serializer error.
func checkJSON(field, object string, raw []byte) error {
	if len(raw) > 0 && !json.Valid(raw) {
		return errs.Field(field, "%s: %s is not valid JSON", object, field)
	}
	return nil
}

// jsonColumn is how a JSON document is written by map updates, matching
// GORM's json serializer on create: NULL when empty, compact text otherwise.
// The caller has checked raw with checkJSON.
func jsonColumn(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	b, err := json.Marshal(json.RawMessage(raw))
	if err != nil || string(b) == "null" {
		return nil
	}
	return string(b)
}
