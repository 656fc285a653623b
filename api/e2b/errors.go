package e2b

import (
	"errors"
	"net/http"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/errs"
)

// apiError is E2B's error body: {"code": <HTTP status>, "message"}. The
// SDKs read code (404 means "not found" to kill and connect) and show
// message.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// fail answers err as E2B's error body. A refusal from /v1 keeps /v1's
// status and message (its tenancy, roles, quotas); the door's own errors get
// the status of their errs kind, through the API's one mapping.
func (d *Door) fail(w http.ResponseWriter, err error) {
	status := d.cfg.StatusOf(errs.KindOf(err))
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status >= 400 {
		status = ce.Status
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `ApiKey realm="primer", header="X-API-KEY"`)
	}
	writeJSON(w, status, apiError{Code: status, Message: err.Error()})
}
