package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/primerhq/primer/wire"
)

// providerTypes are the provider types the New provider form offers.
var providerTypes = []string{"container", "kubernetes", "local", "worktree", "vm"}

// reservedProvider is the built-in provider the API keeps read only.
const reservedProvider = "local"

type providerRow struct {
	wire.Provider
	Reserved bool
}

func (c *Console) providers(w http.ResponseWriter, r *http.Request, s *session) {
	ps, err := s.api.ListProviders(r.Context())
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	rows := make([]providerRow, len(ps))
	for i, p := range ps {
		rows[i] = providerRow{Provider: p, Reserved: p.ID == reservedProvider}
	}
	c.render(w, r, s, 0, "providers", page{Title: "Providers", Section: "workspaces", Tab: "providers", Data: rows})
}

// providerForm is what the New provider and edit pages show.
type providerForm struct {
	Types  []string
	Type   string
	ID     string
	Config string // the config as indented JSON (edit, and the advanced box)
	Edit   bool
	Form   map[string]string
}

func (c *Console) newProvider(w http.ResponseWriter, r *http.Request, s *session) {
	c.render(w, r, s, 0, "provider_new", page{Title: "New provider", Section: "workspaces", Tab: "providers",
		Data: providerForm{Types: providerTypes, Type: "container", Form: map[string]string{}}})
}

func (c *Console) createProvider(w http.ResponseWriter, r *http.Request, s *session) {
	typ := r.FormValue("type")
	cfg, err := providerConfig(r, typ)
	if err == nil {
		_, err = s.api.CreateProvider(r.Context(), wire.ProviderSpec{ID: strings.TrimSpace(r.FormValue("id")), Provider: typ, Config: cfg})
	}
	if err != nil {
		form := map[string]string{}
		for k, v := range r.PostForm {
			if len(v) > 0 {
				form[k] = v[0]
			}
		}
		c.render(w, r, s, statusOf(err), "provider_new", page{Title: "New provider", Section: "workspaces", Tab: "providers", Error: err.Error(),
			Data: providerForm{Types: providerTypes, Type: typ, ID: r.FormValue("id"), Config: r.FormValue("config_json"), Form: form}})
		return
	}
	back(w, r, "/providers", "Provider created.")
}

func (c *Console) provider(w http.ResponseWriter, r *http.Request, s *session) {
	p, err := s.api.GetProvider(r.Context(), r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "provider", page{Title: "Provider " + p.ID, Section: "workspaces", Tab: "providers",
		Data: providerForm{Type: p.Provider, ID: p.ID, Config: indent(p.Config), Edit: p.ID != reservedProvider}})
}

func (c *Console) updateProvider(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	cfg := json.RawMessage(strings.TrimSpace(r.FormValue("config_json")))
	_, err := s.api.UpdateProvider(r.Context(), id, wire.ProviderSpec{ID: id, Provider: r.FormValue("type"), Config: cfg})
	if err != nil {
		c.render(w, r, s, statusOf(err), "provider", page{Title: "Provider " + id, Section: "workspaces", Tab: "providers", Error: err.Error(),
			Data: providerForm{Type: r.FormValue("type"), ID: id, Config: string(cfg), Edit: true}})
		return
	}
	back(w, r, "/providers/"+id, "Provider saved.")
}

func (c *Console) deleteProvider(w http.ResponseWriter, r *http.Request, s *session) {
	if err := s.api.DeleteProvider(r.Context(), r.PathValue("id")); err != nil {
		c.fail(w, r, s, err)
		return
	}
	back(w, r, "/providers", "Provider deleted.")
}

// providerConfig builds the provider's config document from the form's
// fields for typ. A non-empty advanced JSON box wins: it is passed through
// unchanged, so every field the API knows is reachable from the console.
func providerConfig(r *http.Request, typ string) (json.RawMessage, error) {
	if raw := strings.TrimSpace(r.FormValue("config_json")); raw != "" {
		return json.RawMessage(raw), nil
	}
	f := func(name string) string { return strings.TrimSpace(r.FormValue(name)) }
	doc := map[string]any{"kind": typ}
	switch typ {
	case "container":
		doc["runtime"] = f("runtime")
		conn := map[string]any{"kind": f("connection")}
		if f("connection") == "tcp" {
			conn["host"] = f("tcp_host")
			tls := map[string]string{}
			for _, k := range []string{"ca_file", "cert_file", "key_file"} {
				if v := f("tls_" + k); v != "" {
					tls[k] = v
				}
			}
			if len(tls) > 0 {
				conn["tls"] = tls
			}
		} else {
			conn["socket_path"] = f("socket_path")
		}
		doc["connection"] = conn
		reach := map[string]any{"kind": f("reachability")}
		if f("reachability") == "network" {
			reach["network"] = f("network")
		} else {
			reach["bind_host"] = f("bind_host")
			if v := f("connect_host"); v != "" {
				reach["connect_host"] = v
			}
		}
		doc["reachability"] = reach
	case "kubernetes":
		conn := map[string]any{"kind": f("k8s_connection")}
		if f("k8s_connection") == "kubeconfig" {
			if v := f("kubeconfig"); v != "" {
				conn["path"] = v
			}
			if v := f("k8s_context"); v != "" {
				conn["context"] = v
			}
		}
		doc["connection"] = conn
		if v := f("namespace"); v != "" {
			doc["namespace"] = v
		}
		doc["reachability"] = map[string]any{"kind": f("k8s_reachability")}
	case "local", "worktree":
		doc["root_path"] = f("root_path")
	case "vm":
		// A fixed fleet of hosts reached over SSH; a machines (create and
		// destroy commands) provider is written in the advanced JSON box.
		conn := map[string]any{"user": f("vm_user"), "known_hosts": f("vm_known_hosts")}
		if v := f("vm_port"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fieldError("vm_port", "Port: %q is not a number", v)
			}
			conn["port"] = n
		}
		if v := f("vm_key_file"); v != "" {
			conn["private_key_file"] = v
		}
		if f("vm_tofu") == "on" {
			conn["trust_on_first_use"] = true
		}
		doc["connection"] = conn
		hosts := []map[string]string{}
		for h := range strings.FieldsSeq(f("vm_hosts")) {
			hosts = append(hosts, map[string]string{"address": h})
		}
		doc["hosts"] = hosts
	}
	return json.Marshal(doc)
}

// indent pretty-prints a JSON document for an edit box.
func indent(doc json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, doc, "", "  "); err != nil {
		return string(doc)
	}
	return b.String()
}
