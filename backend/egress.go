package backend

import (
	"encoding/json"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// EgressDenyAll is the network.egress value that closes a sandbox's
// outbound network (the runtime connection still reaches it), and the one
// value a workspace's own egress (wire.Workspace.Egress) may take: a
// workspace may narrow its template's egress, never widen it.
const EgressDenyAll = "deny_all"

// egressKinds are the backend kinds whose templates have network.egress:
// those whose sandboxes have a network of their own to close.
var egressKinds = map[string]bool{"container": true, "kubernetes": true}

// CanDenyEgress reports whether a workspace of backend kind may have its
// egress closed (network.egress deny_all).
func CanDenyEgress(kind string) bool { return egressKinds[kind] }

// EgressOf returns a template backend document's network.egress ("" when
// it sets none: the backend's default, allow).
func EgressOf(tmpl json.RawMessage) string {
	var doc struct {
		Network struct {
			Egress string `json:"egress"`
		} `json:"network"`
	}
	_ = json.Unmarshal(tmpl, &doc)
	return doc.Network.Egress
}

// CheckEgress checks a workspace's own egress against the backend kind of
// its template: empty (the template's), or deny_all on a backend that can
// close a sandbox's network. field names the request's field in the error.
func CheckEgress(field, egress, kind string) error {
	switch {
	case egress == "":
		return nil
	case egress != EgressDenyAll:
		return errs.Field(field, "%s: is %q; a workspace may only narrow its template's egress, to %q", field, egress, EgressDenyAll)
	case !CanDenyEgress(kind):
		return errs.Field(field, "%s: the %s backend has no network of its own to close; %q needs a container or kubernetes template", field, kind, EgressDenyAll)
	}
	return nil
}

// WithEgress returns the template backend document tmpl as workspace ws
// is provisioned from it: with network.egress deny_all when ws narrows its
// egress, tmpl itself otherwise. Every other field is kept as it is.
func WithEgress(tmpl json.RawMessage, ws *wire.Workspace) (json.RawMessage, error) {
	if ws.Egress != EgressDenyAll || EgressOf(tmpl) == EgressDenyAll {
		return tmpl, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(tmpl, &doc); err != nil || doc == nil {
		return nil, errs.E(errs.Invalid, "workspace %s: egress: template backend is not a JSON object", ws.ID)
	}
	network := map[string]json.RawMessage{}
	if raw, ok := doc["network"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &network); err != nil {
			return nil, errs.E(errs.Invalid, "workspace %s: egress: template network is not a JSON object", ws.ID)
		}
	}
	network["egress"] = json.RawMessage(`"` + EgressDenyAll + `"`)
	raw, err := json.Marshal(network)
	if err != nil {
		return nil, err
	}
	doc["network"] = raw
	return json.Marshal(doc)
}
