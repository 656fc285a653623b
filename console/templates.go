package console

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// templateView is a template as its page shows it: the backend's common
// fields read out, env values never shown.
type templateView struct {
	wire.Template
	Kind     string
	Image    string
	CPU      string
	Memory   string
	Egress   string
	EnvKeys  []string
	Files    []string
	Init     []string
	Document string // the backend document with env values masked
}

// backendDoc is the part of a template backend document the console reads.
type backendDoc struct {
	Kind        string                  `json:"kind"`
	Image       string                  `json:"image"`
	CPUCores    float64                 `json:"cpu_cores"`
	MemoryBytes int64                   `json:"memory_bytes"`
	CPULimit    string                  `json:"cpu_limit"`
	MemoryLimit string                  `json:"memory_limit"`
	Network     struct{ Egress string } `json:"network"`
	Env         map[string]string       `json:"env"`
	Files       map[string]string       `json:"files"`
	Init        []string                `json:"init"`
}

func viewTemplate(t wire.Template) templateView {
	v := templateView{Template: t}
	var d backendDoc
	_ = json.Unmarshal(t.Backend, &d)
	v.Kind, v.Image, v.Egress, v.Init = d.Kind, d.Image, d.Network.Egress, d.Init
	switch {
	case d.CPUCores > 0:
		v.CPU = strconv.FormatFloat(d.CPUCores, 'f', -1, 64)
	case d.CPULimit != "":
		v.CPU = d.CPULimit
	}
	switch {
	case d.MemoryBytes > 0:
		v.Memory = strconv.FormatInt(d.MemoryBytes>>20, 10) + " MiB"
	case d.MemoryLimit != "":
		v.Memory = d.MemoryLimit
	}
	for k := range d.Env {
		v.EnvKeys = append(v.EnvKeys, k)
	}
	sort.Strings(v.EnvKeys)
	for f := range d.Files {
		v.Files = append(v.Files, f)
	}
	sort.Strings(v.Files)
	// The document as shown masks env values: they may hold secrets.
	var m map[string]any
	if json.Unmarshal(t.Backend, &m) == nil {
		if env, ok := m["env"].(map[string]any); ok {
			for k := range env {
				env[k] = "••••••"
			}
		}
		b, _ := json.Marshal(m)
		v.Document = indent(b)
	}
	return v
}

func (c *Console) templates(w http.ResponseWriter, r *http.Request, s *session) {
	ts, err := s.api.ListTemplates(r.Context(), client.TemplateListOptions{})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	rows := make([]templateView, len(ts))
	for i, t := range ts {
		rows[i] = viewTemplate(t)
	}
	c.render(w, r, s, 0, "templates", page{Title: "Templates", Section: "workspaces", Tab: "templates", Data: rows})
}

type templateForm struct {
	Providers []wire.Provider
	Form      map[string]string
}

func (c *Console) newTemplate(w http.ResponseWriter, r *http.Request, s *session) {
	c.templateForm(w, r, s, http.StatusOK, "", map[string]string{"egress": "allow"})
}

func (c *Console) templateForm(w http.ResponseWriter, r *http.Request, s *session, status int, msg string, form map[string]string) {
	ps, err := s.api.ListProviders(r.Context())
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, status, "template_new", page{Title: "New template", Section: "workspaces", Tab: "templates", Error: msg,
		Data: templateForm{Providers: ps, Form: form}})
}

func (c *Console) createTemplate(w http.ResponseWriter, r *http.Request, s *session) {
	spec, err := c.templateSpec(r, s)
	if err == nil {
		_, err = s.api.CreateTemplate(r.Context(), spec)
	}
	if err != nil {
		form := map[string]string{}
		for k, v := range r.PostForm {
			if len(v) > 0 && k != "env" { // env values are not sent back to the page
				form[k] = v[0]
			}
		}
		c.templateForm(w, r, s, statusOf(err), err.Error(), form)
		return
	}
	back(w, r, "/templates", "Template created.")
}

// templateSpec builds a template from the form: the backend kind is the
// provider's type, the caps are named as that backend names them.
func (c *Console) templateSpec(r *http.Request, s *session) (wire.TemplateSpec, error) {
	f := func(name string) string { return strings.TrimSpace(r.FormValue(name)) }
	spec := wire.TemplateSpec{ID: f("id"), ProviderID: f("provider_id"), Description: f("description")}
	if raw := f("backend_json"); raw != "" {
		spec.Backend = json.RawMessage(raw)
		return spec, nil
	}
	kind := ""
	if spec.ProviderID != "" {
		p, err := s.api.GetProvider(r.Context(), spec.ProviderID)
		if err != nil {
			return spec, err
		}
		kind = p.Provider
	}
	doc := map[string]any{"kind": kind}
	if v := f("image"); v != "" {
		doc["image"] = v
	}
	if v := f("cpu"); v != "" {
		if kind == "kubernetes" {
			doc["cpu_limit"] = v
		} else {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return spec, fieldError("cpu", "CPU cores: %q is not a number", v)
			}
			doc["cpu_cores"] = n
		}
	}
	if v := f("memory_mib"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return spec, fieldError("memory_mib", "Memory (MiB): %q is not a whole number", v)
		}
		if kind == "kubernetes" {
			doc["memory_limit"] = v + "Mi"
		} else {
			doc["memory_bytes"] = n << 20
		}
	}
	if v := f("egress"); v != "" && (kind == "container" || kind == "kubernetes") {
		doc["network"] = map[string]string{"egress": v}
	}
	if env := lines(r.FormValue("env")); len(env) > 0 {
		m := map[string]string{}
		for _, l := range env {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return spec, fieldError("env", "Env: line %q is not NAME=value", k)
			}
			m[strings.TrimSpace(k)] = v
		}
		doc["env"] = m
	}
	if p := f("file_path"); p != "" {
		doc["files"] = map[string]string{p: r.FormValue("file_content")}
	}
	if init := lines(r.FormValue("init")); len(init) > 0 {
		doc["init"] = init
	}
	if v := f("repository"); v != "" {
		doc["repository"] = v
	}
	b, err := json.Marshal(doc)
	spec.Backend = b
	return spec, err
}

// lines splits a textarea into its non-blank lines.
func lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if l = strings.TrimRight(l, "\r\n"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func (c *Console) template(w http.ResponseWriter, r *http.Request, s *session) {
	t, err := s.api.GetTemplate(r.Context(), r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "template", page{Title: "Template " + t.ID, Section: "workspaces", Tab: "templates", Data: viewTemplate(*t)})
}

// updateTemplate saves an edited backend document. Env values were masked
// on the page, so a masked value is put back from the stored template.
func (c *Console) updateTemplate(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	old, err := s.api.GetTemplate(r.Context(), id)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	doc, err := unmask(old.Backend, []byte(r.FormValue("backend_json")))
	if err == nil {
		_, err = s.api.UpdateTemplate(r.Context(), id, wire.TemplateSpec{ID: id, ProviderID: old.ProviderID, Description: r.FormValue("description"), Backend: doc})
	}
	if err != nil {
		v := viewTemplate(*old)
		v.Document = r.FormValue("backend_json")
		c.render(w, r, s, statusOf(err), "template", page{Title: "Template " + id, Section: "workspaces", Tab: "templates", Error: err.Error(), Data: v})
		return
	}
	back(w, r, "/templates/"+id, "Template saved.")
}

// unmask puts the stored env values back where the edited document still
// holds the mask.
func unmask(stored, edited []byte) (json.RawMessage, error) {
	var m map[string]any
	if err := json.Unmarshal(edited, &m); err != nil {
		return nil, fieldError("backend_json", "Backend: not a JSON object: %v", err)
	}
	var old struct {
		Env map[string]string `json:"env"`
	}
	_ = json.Unmarshal(stored, &old)
	if env, ok := m["env"].(map[string]any); ok {
		for k, v := range env {
			if v == "••••••" {
				env[k] = old.Env[k]
			}
		}
	}
	return json.Marshal(m)
}

func (c *Console) deleteTemplate(w http.ResponseWriter, r *http.Request, s *session) {
	if err := s.api.DeleteTemplate(r.Context(), r.PathValue("id")); err != nil {
		c.fail(w, r, s, err)
		return
	}
	back(w, r, "/templates", "Template deleted.")
}
