// Package testenv gives tests the outside dependencies they need (a
// PostgreSQL database, the git CLI) in one place, with one rule for when one
// is missing: the test skips with a message saying how to provide it, and
// under CI (CI set, as .ci/run does) it fails instead, so nothing skips there.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// DatabaseURLEnv names the variable holding the PostgreSQL the tests use.
const DatabaseURLEnv = "PRIMER_TEST_DATABASE_URL"

// schemaPrefix starts the name of every schema the tests create, followed by
// the creation time in Unix seconds, so a later run can drop what a killed
// run left behind.
const schemaPrefix = "primer_test_"

// staleAfter is how old a test schema must be before a later run drops it:
// well past the longest test timeout, so no running test loses its schema.
const staleAfter = 6 * time.Hour

// Missing skips t with the message, which says how to get what is missing;
// with CI set it fails t instead: in CI nothing skips.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("CI: %s", msg)
	}
	t.Skip(msg)
}

// Git returns the path of the git CLI, or skips t (fails it in CI) when git
// is not installed.
func Git(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("git")
	if err != nil {
		Missing(t, "git is not on PATH; install git to run this test (.ci/run does)")
	}
	return path
}

// admin is the process's one connection pool to the database of
// PRIMER_TEST_DATABASE_URL, which creates and drops the tests' schemas.
var admin struct {
	once sync.Once
	db   *gorm.DB
	err  error
}

// PostgresURL returns the URL of a fresh, empty schema of its own in the
// database of PRIMER_TEST_DATABASE_URL (its search_path names the schema),
// dropped when t ends, so tests and concurrent runs never see each other's
// rows. The connection that creates the schemas is opened once per test
// process, which also drops schemas killed runs left behind. Without the
// variable t skips (fails in CI).
func PostgresURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(DatabaseURLEnv)
	if url == "" {
		Missing(t, "set %s=postgres://... to run this test on PostgreSQL (.ci/run does; deploy/ci/postgres.sh starts one and prints its URL)", DatabaseURLEnv)
	}
	admin.once.Do(func() {
		admin.db, admin.err = gorm.Open(postgres.Open(url), &gorm.Config{Logger: logger.Discard})
		if admin.err == nil {
			dropStale(admin.db)
		}
	})
	if admin.err != nil {
		t.Fatalf("connect to %s: %v", DatabaseURLEnv, admin.err)
	}
	schema := schemaPrefix + strconv.FormatInt(time.Now().Unix(), 10) + "_" + randomHex(6)
	if err := admin.db.Exec("CREATE SCHEMA " + schema).Error; err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if err := admin.db.Exec("DROP SCHEMA " + schema + " CASCADE").Error; err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

// dropStale drops the test schemas older than staleAfter. It is best effort:
// a schema it cannot drop stays for the next run.
func dropStale(db *gorm.DB) {
	var names []string
	if err := db.Raw("SELECT nspname FROM pg_namespace WHERE nspname LIKE ?", schemaPrefix+"%").Scan(&names).Error; err != nil {
		return
	}
	cutoff := time.Now().Add(-staleAfter).Unix()
	for _, name := range names {
		created, _, ok := strings.Cut(strings.TrimPrefix(name, schemaPrefix), "_")
		if !ok {
			continue
		}
		if sec, err := strconv.ParseInt(created, 10, 64); err == nil && sec < cutoff {
			db.Exec("DROP SCHEMA " + name + " CASCADE")
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TemporalAddressEnv names the variable holding the frontend address of an
// external Temporal cluster the tests may use (deploy/temporal).
const TemporalAddressEnv = "PRIMER_TEST_TEMPORAL_ADDRESS"

// TemporalAddress returns the host:port of the external Temporal cluster of
// PRIMER_TEST_TEMPORAL_ADDRESS, or skips t (fails it in CI) without one.
// The cluster is shared by every test of a run: a test that runs Primer's
// workers on it takes a namespace of its own (TemporalNamespace), so no
// other test's worker picks up its workflows.
func TemporalAddress(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(TemporalAddressEnv)
	if addr == "" {
		Missing(t, "set %s=host:port to run this test on a real Temporal cluster: `make temporal-cluster-up` starts one on PostgreSQL and prints the address (.ci/run does)", TemporalAddressEnv)
	}
	return addr
}

// TemporalNamespace registers a fresh namespace on the external Temporal
// cluster (TemporalAddress; skips or fails without one) and returns the
// address and the namespace, which is deleted when t ends. Primer adds its
// search attributes to it at start. It returns once the cluster serves the
// namespace (its services' namespace caches have it).
func TemporalNamespace(t testing.TB) (address, namespace string) {
	t.Helper()
	address = TemporalAddress(t)
	namespace = "primer-test-" + strconv.FormatInt(time.Now().Unix(), 10) + "-" + randomHex(4)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: address, Logger: quietLogger{}})
	if err != nil {
		t.Fatalf("connect to Temporal at %s (%s): %v", address, TemporalAddressEnv, err)
	}
	t.Cleanup(c.Close)
	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	if err != nil {
		t.Fatalf("register namespace %s: %v", namespace, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.OperatorService().DeleteNamespace(ctx, &operatorservice.DeleteNamespaceRequest{Namespace: namespace}); err != nil {
			t.Logf("delete namespace %s: %v", namespace, err)
		}
	})
	// The operator service answers from the namespace cache, which learns
	// of a new namespace at its next refresh (2 s).
	for {
		_, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		if err == nil {
			return address, namespace
		}
		select {
		case <-ctx.Done():
			t.Fatalf("namespace %s: not served within a minute: %v", namespace, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// quietLogger drops the Temporal SDK's log lines.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
