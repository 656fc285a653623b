package backend

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/primerhq/primer/errs"
)

// A template's config_toml is written into every workspace as HarnessPath,
// relative to the workspace root, with mode HarnessMode. The platform
// writes it once, through the runtime's file API, in the same step that
// writes the template's files (after Provision, on a replacement and on a
// pool reset), so a backend does nothing for it: any backend whose sandbox
// runs primer-runtime (local, worktree, container, Kubernetes, vm) gets the
// file, owned by the user the runtime runs as, which is the user that runs
// the workspace's commands.
const (
	HarnessPath             = "harness.toml"
	HarnessMode os.FileMode = 0o600
)

// MinSecretLen is the length, in bytes, from which an env value must not
// appear in config_toml. Shorter values ("1", "on", "dev") are too common
// in any config file to tell a leaked secret from a setting, and too short
// to be secrets worth the name.
const MinSecretLen = 4

// HarnessTOML checks a template's config_toml against its env and returns
// the content of harness.toml: configTOML itself, byte for byte, or nil
// when it is empty (no file is written). field names the document field
// ("spec.backend.config_toml") in the Invalid errors it returns:
//
//   - config_toml must be valid TOML; the error gives the parser's line and
//     column.
//   - harness.toml is not a secret, and the isolation seed keeps secrets
//     out of it: an env value of MinSecretLen bytes or more found in any
//     key, any string value (nested tables, inline tables and arrays
//     included) or any comment is refused. The error names the key path
//     ("model.api_key", "servers[1].token"; for a key that is itself the
//     secret, its table) or the comment's line, and the env variable,
//     never the value.
//
// Numbers, booleans and dates are not compared: an env value "8080" and a
// port = 8080 are a setting, not a leak.
func HarnessTOML(field, configTOML string, env map[string]string) ([]byte, error) {
	if configTOML == "" {
		return nil, nil
	}
	secrets := secretValues(env)
	var doc map[string]any
	if err := toml.Unmarshal([]byte(configTOML), &doc); err != nil {
		return nil, tomlError(field, configTOML, err, secrets)
	}
	w := leakWalker{secrets: secrets}
	w.table("", doc)
	if w.found != nil {
		return nil, errs.Field(field, "%s: %s holds the value of env %s: secrets travel as env, never in harness.toml",
			field, w.found.where, w.found.name)
	}
	line, name, err := commentLeak(configTOML, secrets)
	switch {
	case err != nil:
		return nil, tomlError(field, configTOML, err, secrets)
	case name != "":
		return nil, errs.Field(field, "%s: the comment on line %d holds the value of env %s: secrets travel as env, never in harness.toml",
			field, line, name)
	}
	return []byte(configTOML), nil
}

// Harness returns the content of the template's harness.toml (nil when it
// has no config_toml), checked as HarnessTOML does.
func (c Common) Harness(prefix string) ([]byte, error) {
	return HarnessTOML(prefix+".config_toml", c.ConfigTOML, c.Env)
}

// secret is an env variable whose value must not appear in harness.toml.
type secret struct{ name, value string }

// secretValues returns env's values of MinSecretLen bytes or more, by
// variable name so that errors are stable.
func secretValues(env map[string]string) []secret {
	var out []secret
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if len(env[k]) >= MinSecretLen {
			out = append(out, secret{k, env[k]})
		}
	}
	return out
}

// leaked returns the name of the env variable whose value s contains.
func leaked(s string, secrets []secret) (string, bool) {
	for _, sec := range secrets {
		if strings.Contains(s, sec.value) {
			return sec.name, true
		}
	}
	return "", false
}

// redacted returns s with every secret replaced, for parser messages that
// may quote the document.
func redacted(s string, secrets []secret) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec.value, "(redacted)")
	}
	return s
}

func tomlError(field, doc string, err error, secrets []secret) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return errs.Field(field, "%s: invalid TOML at line %d, column %d: %s", field, line, col,
			redacted(strings.TrimPrefix(de.Error(), "toml: "), secrets))
	}
	msg := redacted(strings.TrimPrefix(err.Error(), "toml: "), secrets)
	if line := errorLine(doc, err); line > 0 {
		return errs.Field(field, "%s: invalid TOML at line %d: %s", field, line, msg)
	}
	return errs.Field(field, "%s: invalid TOML: %s", field, msg)
}

// errorLine finds the line of an error the decoder gives without a
// position (a key defined twice): the first line whose prefix of the
// document fails with the same message. It gives up (0) on documents too
// large to parse once per line cheaply.
func errorLine(doc string, err error) int {
	const maxLines = 2000
	lines := strings.SplitAfter(doc, "\n")
	if len(lines) > maxLines {
		return 0
	}
	var v map[string]any
	end := 0
	for i, l := range lines {
		end += len(l)
		if e := toml.Unmarshal([]byte(doc[:end]), &v); e != nil && e.Error() == err.Error() {
			return i + 1
		}
		clear(v)
	}
	return 0
}

// leakWalker finds the first key or string value, in key order, that holds
// an env value.
type leakWalker struct {
	secrets []secret
	found   *struct{ where, name string }
}

func (w *leakWalker) report(where, name string) {
	w.found = &struct{ where, name string }{where, name}
}

func (w *leakWalker) table(path string, t map[string]any) {
	for _, k := range slices.Sorted(maps.Keys(t)) {
		if w.found != nil {
			return
		}
		if name, ok := leaked(k, w.secrets); ok {
			// The key's own text is the secret: name where it is.
			where := "a key at the top level"
			if path != "" {
				where = "a key of " + path
			}
			w.report(where, name)
			return
		}
		w.value(joinKey(path, k), t[k])
	}
}

func (w *leakWalker) value(path string, v any) {
	switch v := v.(type) {
	case string:
		if name, ok := leaked(v, w.secrets); ok {
			w.report("key "+path, name)
		}
	case map[string]any:
		w.table(path, v)
	case []any:
		for i, e := range v {
			if w.found != nil {
				return
			}
			w.value(path+"["+strconv.Itoa(i)+"]", e)
		}
	}
}

// joinKey appends key k to a dotted path, quoting it the TOML way when it
// is not a bare key, so that the path reads as the document would write it.
func joinKey(path, k string) string {
	if !bareKey(k) {
		k = strconv.Quote(k)
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

func bareKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// commentLeak finds a comment of doc (valid TOML) that holds a secret and
// returns its line and the env variable's name; name is empty when no
// comment holds one. Comments are not in the decoded document, so the
// parser is asked to keep them; they hang off the expressions anywhere in
// the tree (after a key-value, inside a multi-line array), so every node is
// visited.
func commentLeak(doc string, secrets []secret) (line int, name string, err error) {
	if len(secrets) == 0 || !strings.Contains(doc, "#") {
		return 0, "", nil
	}
	data := []byte(doc)
	p := unstable.Parser{KeepComments: true}
	p.Reset(data)
	var visit func(n *unstable.Node) bool
	visit = func(n *unstable.Node) bool {
		for ; n != nil; n = n.Next() {
			if n.Kind == unstable.Comment {
				var ok bool
				if name, ok = leaked(string(n.Data), secrets); ok {
					line = 1 + bytes.Count(data[:n.Raw.Offset], []byte{'\n'})
					return true
				}
			}
			if visit(n.Child()) {
				return true
			}
		}
		return false
	}
	for p.NextExpression() {
		if visit(p.Expression()) {
			return line, name, nil
		}
	}
	// The document decoded, so this parser, the decoder's own, should not
	// fail on it; if it does, the comments went unchecked: refuse.
	return 0, "", p.Error()
}
