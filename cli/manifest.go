package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/primerhq/primer/eval"
	"github.com/primerhq/primer/wire"
)

// Manifest is one document of a `primectl create -f` file: a kind and the
// spec that is POSTed for it. Exactly one of the spec fields is set.
type Manifest struct {
	Index int    // 1-based among the file's non-empty documents
	Line  int    // 1-based line of the document's first line in the file
	Kind  string // workspace_provider, workspace_template, workspace_pool, workspace, eval_suite, llm_provider or agent

	Provider  *wire.ProviderSpec
	Template  *wire.TemplateSpec
	Pool      *wire.PoolSpec
	Workspace *wire.CreateWorkspaceRequest
	Suite     *eval.SuiteSpec
	LLM       *wire.LLMProviderSpec
	Agent     *wire.AgentSpec
}

// Name is the document's resource as output lines print it (`kind/id`), or
// just the kind when it has no id yet (workspaces get theirs from the server).
func (m Manifest) Name() string {
	switch {
	case m.Provider != nil && m.Provider.ID != "":
		return m.Kind + "/" + m.Provider.ID
	case m.Template != nil && m.Template.ID != "":
		return m.Kind + "/" + m.Template.ID
	case m.Pool != nil && m.Pool.ID != "":
		return m.Kind + "/" + m.Pool.ID
	case m.Suite != nil && m.Suite.ID != "":
		return m.Kind + "/" + m.Suite.ID
	case m.LLM != nil && m.LLM.ID != "":
		return m.Kind + "/" + m.LLM.ID
	case m.Agent != nil && m.Agent.ID != "":
		return m.Kind + "/" + m.Agent.ID
	}
	return m.Kind
}

// yamlLine finds the line numbers go-yaml puts in its messages.
var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)

// ParseManifests reads a stream of YAML documents separated by `---` lines.
// Empty documents are skipped. Every document must have exactly `kind` and
// `spec`; the kind must be workspace_provider, workspace_template,
// workspace_pool, workspace, eval_suite, llm_provider or agent; the spec's own keys must be the API's (its nested config and
// backend documents are passed through for the server to check). Errors
// name the document, its kind and, for YAML syntax, the line in the file.
func ParseManifests(r io.Reader) ([]Manifest, error) {
	docs, err := splitDocuments(r)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, d := range docs {
		m, err := parseDocument(d)
		if err != nil {
			return nil, err
		}
		if m != nil {
			m.Index = d.index
			out = append(out, *m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no documents")
	}
	return out, nil
}

// document is one `---`-separated part of the stream.
type document struct {
	index int // 1-based among non-empty documents; 0 while unknown
	line  int // first line in the file
	text  []byte
}

// splitDocuments cuts the stream at `---` lines (YAML document markers must
// start a line, so this is exact) and drops documents holding only
// comments and blank lines.
func splitDocuments(r io.Reader) ([]document, error) {
	br := bufio.NewReader(r)
	var docs []document
	cur := document{line: 1}
	lineNo := 0
	flush := func() {
		if !blankYAML(cur.text) {
			cur.index = len(docs) + 1
			docs = append(docs, cur)
		}
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			lineNo++
			t := bytes.TrimRight(line, "\r\n")
			if isDocMarker(t) {
				flush()
				cur = document{line: lineNo + 1}
			} else {
				if lineNo == 1 {
					line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // a BOM
				}
				cur.text = append(cur.text, line...)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
	}
	flush()
	return docs, nil
}

// isDocMarker reports whether a line starts a new document (`---`, maybe
// followed by a space and a comment) or ends one (`...`).
func isDocMarker(line []byte) bool {
	for _, m := range [][]byte{[]byte("---"), []byte("...")} {
		if bytes.Equal(line, m) || (bytes.HasPrefix(line, m) && (line[3] == ' ' || line[3] == '\t')) {
			return true
		}
	}
	return false
}

// blankYAML reports whether text holds only comments and whitespace.
func blankYAML(text []byte) bool {
	for _, l := range bytes.Split(text, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// parseDocument decodes one document; it returns nil for a document that is
// YAML null (e.g. only `~`).
func parseDocument(d document) (*Manifest, error) {
	where := fmt.Sprintf("document %d (line %d)", d.index, d.line)
	// Strict: duplicate keys are an error, not last-one-wins.
	js, err := yaml.YAMLToJSONStrict(d.text)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", where, fileLines(err.Error(), d.line))
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		return nil, fmt.Errorf("%s: want a mapping with kind and spec", where)
	}
	var unknown []string
	for k := range top {
		if k != "kind" && k != "spec" {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	slices.Sort(unknown)
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s: unknown top-level key %s: want only kind and spec", where, strings.Join(unknown, ", "))
	}
	var kind string
	if raw, ok := top["kind"]; !ok {
		return nil, fmt.Errorf("%s: missing kind", where)
	} else if err := json.Unmarshal(raw, &kind); err != nil {
		return nil, fmt.Errorf("%s: kind must be a string", where)
	}
	m := &Manifest{Line: d.line, Kind: kind}
	var spec any
	switch kind {
	case kindProvider:
		m.Provider = &wire.ProviderSpec{}
		spec = m.Provider
	case kindTemplate:
		m.Template = &wire.TemplateSpec{}
		spec = m.Template
	case kindPool:
		m.Pool = &wire.PoolSpec{}
		spec = m.Pool
	case kindWorkspace:
		m.Workspace = &wire.CreateWorkspaceRequest{}
		spec = m.Workspace
	case kindSuite:
		m.Suite = &eval.SuiteSpec{}
		spec = m.Suite
	case kindLLM:
		m.LLM = &wire.LLMProviderSpec{}
		spec = m.LLM
	case kindAgent:
		m.Agent = &wire.AgentSpec{}
		spec = m.Agent
	default:
		return nil, fmt.Errorf("%s: unknown kind %q: want %s, %s, %s, %s, %s, %s or %s", where, kind,
			kindProvider, kindTemplate, kindPool, kindWorkspace, kindSuite, kindLLM, kindAgent)
	}
	where = fmt.Sprintf("document %d (line %d, %s)", d.index, d.line, kind)
	raw, ok := top["spec"]
	if !ok || bytes.Equal(raw, []byte("null")) {
		return nil, fmt.Errorf("%s: missing spec", where)
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%s: spec must be a mapping", where)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(spec); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s: spec.%s: want a %s, not a %s", where, te.Field, te.Type, te.Value)
		}
		return nil, fmt.Errorf("%s: spec: %s", where, strings.TrimPrefix(err.Error(), "json: "))
	}
	return m, nil
}

// fileLines rewrites the document-relative line numbers in a go-yaml
// message to lines of the file, and drops its "yaml: " prefix.
func fileLines(msg string, firstLine int) string {
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.Join(strings.Fields(msg), " ")
	return yamlLine.ReplaceAllStringFunc(msg, func(s string) string {
		n, _ := strconv.Atoi(yamlLine.FindStringSubmatch(s)[1])
		return "line " + strconv.Itoa(n+firstLine-1)
	})
}
