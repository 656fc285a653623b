package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// PreviewCookie is the cookie a preview host ({port}-{id}.{domain})
// sets on a browser's first visit with the link's token, so that the
// program's own absolute paths keep the link's access. Like the console's
// cookie, the port proxies remove it from what reaches the program.
const PreviewCookie = "primer_preview"

// PreviewQuery is the query parameter a preview link on a preview host
// carries its token in on the first visit; the platform swaps it for
// PreviewCookie and redirects to the same URL without it.
const PreviewQuery = "primer_preview"

// DefaultPreviewTTL and MaxPreviewTTL bound how long a preview link
// lives: a link is a bearer credential a browser holds, so it is short by
// default and never long.
const (
	DefaultPreviewTTL = time.Hour
	MaxPreviewTTL     = 7 * 24 * time.Hour
)

// Preview is a preview link: a signed URL a browser opens, with no API
// key, to reach 127.0.0.1:Port inside a workspace until ExpiresAt, unless
// revoked or the workspace is gone (or returned to its pool) first. The
// row holds no secret: the link's token is derived from the ID with a key
// of the platform, so a stored row cannot be turned back into a link.
type Preview struct {
	ID          string `gorm:"primaryKey;size:64" json:"id"` // pv-<hex>
	TenantID    string `gorm:"size:64;not null;default:'default';index" json:"tenant_id"`
	WorkspaceID string `gorm:"size:64;not null;index" json:"workspace_id"`
	Port        int    `gorm:"not null" json:"port"`
	// CreatedBy is the id of the API key that made the link.
	CreatedBy string     `gorm:"size:64;not null;default:''" json:"created_by,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `gorm:"not null" json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// PreviewRequest is the body of POST /v1/workspaces/{id}/previews.
type PreviewRequest struct {
	// Port is the port inside the workspace, 1 to 65535.
	Port int `json:"port"`
	// TTL is how long the link lives: a Go duration ("1h", "90m") or a
	// number of seconds (3600 or "3600"); empty is DefaultPreviewTTL, more
	// than MaxPreviewTTL is refused.
	TTL string `json:"ttl,omitempty"`
}

// UnmarshalJSON takes ttl as a string or as a JSON number of seconds.
func (r *PreviewRequest) UnmarshalJSON(b []byte) error {
	var raw struct {
		Port int             `json:"port"`
		TTL  json.RawMessage `json:"ttl"`
	}
	// The API refuses unknown fields; a custom decoder must say so too.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	r.Port, r.TTL = raw.Port, ""
	t := bytes.TrimSpace(raw.TTL)
	switch {
	case len(t) == 0 || string(t) == "null":
	case t[0] == '"':
		if err := json.Unmarshal(t, &r.TTL); err != nil {
			return err
		}
	default:
		var n json.Number
		if err := json.Unmarshal(t, &n); err != nil {
			return fmt.Errorf("ttl: want a duration string or a number of seconds")
		}
		r.TTL = n.String()
	}
	return nil
}

// PreviewLink is the answer to a create: the row and the URL, which is
// shown this once (the token in it is not stored).
type PreviewLink struct {
	Preview
	// URL opens the program in a browser with no API key. On a preview
	// host it carries the token as a query parameter the first visit
	// turns into a cookie.
	URL string `json:"url"`
}
