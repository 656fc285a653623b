package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/primerhq/primer/errs"
)

// DecodeStrict decodes a provider config or template backend document into
// v, refusing unknown fields, wrong types and trailing data. Errors are
// Invalid and name the field at fault under prefix ("spec.backend"), so a
// typo in a YAML document comes back as a 400 that points at it.
func DecodeStrict(doc json.RawMessage, prefix string, v any) error {
	if len(bytes.TrimSpace(doc)) == 0 {
		return errs.Field(prefix, "%s: document is empty", prefix)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(prefix, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errs.Field(prefix, "%s: unexpected data after the document", prefix)
	}
	return nil
}

func decodeError(prefix string, err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		f := prefix + "." + jsonPath(typeErr.Field)
		return errs.Field(f, "%s: must be %s, not %s", f, typeErr.Type, typeErr.Value)
	case errors.As(err, &typeErr):
		return errs.Field(prefix, "%s: must be an object, not %s", prefix, typeErr.Value)
	case errors.As(err, &syntaxErr):
		return errs.Field(prefix, "%s: malformed JSON at offset %d: %v", prefix, syntaxErr.Offset, err)
	}
	// encoding/json reports unknown fields only in the message.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		f := prefix + "." + strings.Trim(name, `"`)
		return errs.Field(f, "%s: unknown field", f)
	}
	return errs.Field(prefix, "%s: %v", prefix, err)
}

// jsonPath drops the Go names of embedded structs (Common) that
// encoding/json puts in a type error's field path; document fields are
// snake_case, Go type names are not.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if p != "" && unicode.IsUpper(rune(p[0])) {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}

// CheckKind returns an Invalid error naming prefix.kind unless kind is want.
// An empty kind is accepted only when optional is true (provider configs may
// leave it out; the provider row already names the type).
func CheckKind(prefix, kind, want string, optional bool) error {
	if kind == want || (kind == "" && optional) {
		return nil
	}
	f := prefix + ".kind"
	if kind == "" {
		return errs.Field(f, "%s: required, must be %q", f, want)
	}
	return errs.Field(f, "%s: is %q, must be %q", f, kind, want)
}

// AbsPath checks that a document's path field is set and absolute, and
// returns it cleaned. field names it ("spec.config.root_path").
func AbsPath(field, p string) (string, error) {
	switch {
	case p == "":
		return "", errs.Field(field, "%s: required", field)
	case !filepath.IsAbs(p):
		return "", errs.Field(field, "%s: %q must be an absolute path", field, p)
	}
	return filepath.Clean(p), nil
}

// Check checks the common part of a template backend document named
// spec.backend: its kind is kind, and Validate passes.
func (c Common) Check(kind string) error {
	if err := CheckKind("spec.backend", c.Kind, kind, false); err != nil {
		return err
	}
	return c.Validate("spec.backend")
}

// Validate checks the common part of a template backend document: file
// paths stay inside the workspace and init commands are not empty. prefix
// names the document ("spec.backend").
func (c Common) Validate(prefix string) error {
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return errs.Field(prefix+".env", "%s.env: invalid variable name %q", prefix, k)
		}
	}
	for p := range c.Files {
		clean := path.Clean(p)
		if p == "" || path.IsAbs(p) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
			return errs.Field(prefix+".files", "%s.files: path %q must be relative and stay inside the workspace", prefix, p)
		}
	}
	for i, cmd := range c.Init {
		if strings.TrimSpace(cmd) == "" {
			return errs.Field(prefix+".init", "%s.init[%d]: empty command", prefix, i)
		}
	}
	return nil
}
