package e2b

import (
	"net/http"
	"strings"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/models"
)

// apiKeyHeader carries the API key of an E2B REST call.
const apiKeyHeader = "X-API-KEY"

// restHandler serves one E2B REST call with a client of /v1 that acts as
// the caller's key.
type restHandler func(w http.ResponseWriter, r *http.Request, api *client.Client)

// rest authenticates nothing itself: it turns the caller's X-API-KEY (a
// Primer key, or its e2b_ form: models.E2BKey) into the bearer of an
// in-process /v1 client, and /v1 authenticates, throttles, authorises and
// audits every call the handler makes with it, exactly as for a /v1 caller
// (a missing or malformed key too: /v1 refuses it 401 and counts it).
func (d *Door) rest(h restHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimSpace(r.Header.Get(apiKeyHeader))
		if models.IsE2BKey(key) {
			if k, err := models.FromE2BKey(key); err == nil {
				key = k
			}
		}
		api := client.New(inprocBase,
			client.WithHTTPClient(&http.Client{Transport: inproc{api: d.cfg.API, from: r}}),
			client.WithToken(key), client.WithTimeout(0), client.WithPollInterval(d.cfg.PollInterval),
			client.WithUserAgent("primer-e2b-door"))
		h(w, r, api)
	}
}
