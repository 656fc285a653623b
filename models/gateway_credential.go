package models

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// gatewaySecretName names the platform secret gateway credentials are
// derived from.
const gatewaySecretName = "model-gateway"

// GatewayCredentialPrefix starts every model gateway credential, so one
// is recognised in a log or a leak scan.
const GatewayCredentialPrefix = "pgw-"

// GatewayCredential is workspace id's model gateway credential: an HMAC
// of the id under a platform secret. It is what the sandbox holds in place
// of a model key; the gateway accepts it only on a tunnel of that
// workspace, so it is worthless anywhere else, and nothing per workspace
// is stored.
func (s *Store) GatewayCredential(ctx context.Context, workspaceID string) (string, error) {
	key, err := s.PlatformSecret(ctx, gatewaySecretName)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(workspaceID))
	return GatewayCredentialPrefix + hex.EncodeToString(m.Sum(nil)), nil
}
