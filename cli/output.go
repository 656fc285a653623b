package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// list is how -o json and -o yaml print several resources: the API's own
// {"items": [...]} shape.
type list[T any] struct {
	Items []T `json:"items"`
}

// printObject prints v as JSON or YAML; for table output it calls table
// with a tab-separated writer (kubectl-style columns).
func (a *app) printObject(v any, table func(w io.Writer)) error {
	switch a.output {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
		_, err = a.stdout.Write(b)
		return err
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 8, 3, ' ', 0)
	table(tw)
	return tw.Flush()
}

// printStreamed prints one of many objects that arrive over time: a JSON
// line each for -o json, a YAML document each for -o yaml, line() otherwise.
func (a *app) printStreamed(v any, line func() string) error {
	switch a.output {
	case "json":
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
		_, err = fmt.Fprintf(a.stdout, "---\n%s", b)
		return err
	}
	_, err := fmt.Fprintln(a.stdout, line())
	return err
}

// row writes one tab-separated table row; empty cells print as <none>, as
// kubectl does, so columns stay aligned and readable.
func row(w io.Writer, cells ...string) {
	for i, c := range cells {
		if c == "" {
			cells[i] = "<none>"
		}
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// age formats how long ago t was, kubectl-style (45s, 12m, 5h, 3d).
func (a *app) age(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := a.now().Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < 2*time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
}

// backendKind is the `kind` of a template's backend document.
func backendKind(raw json.RawMessage) string {
	var b struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(raw, &b)
	return b.Kind
}

func (a *app) providerTable(ps []wire.Provider) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "PROVIDER", "AGE")
		for _, p := range ps {
			row(w, p.ID, p.Provider, a.age(p.CreatedAt))
		}
	}
}

func (a *app) templateTable(ts []wire.Template) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "PROVIDER", "BACKEND", "AGE", "DESCRIPTION")
		for _, t := range ts {
			row(w, t.ID, t.ProviderID, backendKind(t.Backend), a.age(t.CreatedAt), t.Description)
		}
	}
}

func (a *app) poolTable(ps []wire.PoolView) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "TEMPLATE", "SIZE", "IDLE", "STARTING", "LEASED", "AGE")
		for _, p := range ps {
			row(w, p.ID, p.TemplateID, strconv.Itoa(p.Size), strconv.Itoa(p.Status.Idle), strconv.Itoa(p.Status.Starting),
				strconv.Itoa(p.Status.Leased+p.Status.Returning), a.age(p.CreatedAt))
		}
	}
}

func (a *app) workspaceTable(ws []wire.Workspace) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "PHASE", "TEMPLATE", "BACKEND", "AGE", "REASON")
		for _, x := range ws {
			row(w, x.ID, x.Phase, x.TemplateID, x.Backend, a.age(x.CreatedAt), x.Reason)
		}
	}
}

func (a *app) sessionTable(ss []wire.Session) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "ID", "WORKSPACE", "AGENT", "STATUS", "AGE", "END REASON")
		for _, s := range ss {
			row(w, s.ID, s.WorkspaceID, s.Agent, s.Status, a.age(s.CreatedAt), s.EndReason)
		}
	}
}

func (a *app) historyTable(h []wire.HistoryEntry) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "COMMIT", "AGE", "TOOL", "AUTHOR", "SUMMARY")
		for _, e := range h {
			row(w, shortCommit(e.Commit), a.age(e.Time), e.Tool, e.Author, e.Summary)
		}
	}
}

// shortCommit is a commit id as tables show it, git's 12 characters.
func shortCommit(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func (a *app) fileTable(fs []client.FileInfo) func(io.Writer) {
	return func(w io.Writer) {
		row(w, "MODE", "SIZE", "MODIFIED", "NAME")
		for _, f := range fs {
			name := f.Name
			if f.IsDir {
				name += "/"
			}
			if name == "" {
				name = f.Path
			}
			mod := ""
			if !f.ModTime.IsZero() {
				mod = f.ModTime.Local().Format("2006-01-02 15:04:05")
			}
			row(w, f.FileMode().String(), strconv.FormatInt(f.Size, 10), mod, name)
		}
	}
}

// eventLine is an event as `workspace events` prints it: time, type, data.
func eventLine(ev wire.Event) string {
	var buf bytes.Buffer
	data := "{}"
	if json.Compact(&buf, ev.Data) == nil && buf.Len() > 0 {
		data = buf.String()
	}
	return fmt.Sprintf("%s  %-28s %s", ev.CreatedAt.Format(time.RFC3339), ev.Type, data)
}
