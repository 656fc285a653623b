package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
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
		return decodeError(doc, prefix, v, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errs.Field(prefix, "%s: unexpected data after the document", prefix)
	}
	return nil
}

func decodeError(doc json.RawMessage, prefix string, v any, err error) error {
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
	// encoding/json reports unknown fields only in the message, by name
	// without their path: find the path in the document.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		p := name
		if found, ok := unknownField(doc, reflect.TypeOf(v), name); ok {
			p = found
		}
		f := prefix + "." + p
		return errs.Field(f, "%s: unknown field", f)
	}
	return errs.Field(prefix, "%s: %v", prefix, err)
}

// unknownField returns the path ("recovery.max_attempt") of the field
// called name in doc that type t has no field for, walking the document
// alongside the type the way encoding/json decodes it.
func unknownField(doc json.RawMessage, t reflect.Type, name string) (string, bool) {
	var generic any
	if json.Unmarshal(doc, &generic) != nil || t == nil {
		return "", false
	}
	return findUnknown(generic, t, name)
}

func findUnknown(doc any, t reflect.Type, name string) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := doc.(map[string]any)
		if !ok {
			return "", false
		}
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			// encoding/json matches keys to fields without regard to case.
			ft, known := fields[strings.ToLower(k)]
			if !known {
				if k == name {
					return k, true
				}
				continue
			}
			if p, ok := findUnknown(obj[k], ft, name); ok {
				return k + "." + p, true
			}
		}
	case reflect.Map:
		obj, ok := doc.(map[string]any)
		if !ok {
			return "", false
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if p, ok := findUnknown(obj[k], t.Elem(), name); ok {
				return k + "." + p, true
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := doc.([]any)
		if !ok {
			return "", false
		}
		for i, e := range arr {
			if p, ok := findUnknown(e, t.Elem(), name); ok {
				return strconv.Itoa(i) + "." + p, true
			}
		}
	}
	return "", false
}

// jsonFields adds the JSON names (lower case) and types of struct t's
// fields to out, those of embedded structs included unless a field of t
// shadows them.
func jsonFields(t reflect.Type, out map[string]reflect.Type) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && tag == "" && ft.Kind() == reflect.Struct {
			embedded = append(embedded, ft)
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		out[strings.ToLower(tag)] = f.Type
	}
	for _, et := range embedded {
		inner := map[string]reflect.Type{}
		jsonFields(et, inner)
		for k, v := range inner {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
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
// paths stay inside the workspace, config_toml is valid TOML holding no env
// value, init commands are not empty, and the
// lifecycle policy's durations, bounds and webhook URL are sound. prefix
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
		if clean == HarnessPath && c.ConfigTOML != "" {
			return errs.Field(prefix+".files", "%s.files: %s is written from %s.config_toml; set it in one place", prefix, HarnessPath, prefix)
		}
	}
	if _, err := c.Harness(prefix); err != nil {
		return err
	}
	for i, cmd := range c.Init {
		if strings.TrimSpace(cmd) == "" {
			return errs.Field(prefix+".init", "%s.init[%d]: empty command", prefix, i)
		}
	}
	if err := c.validatePolicy(prefix); err != nil {
		return err
	}
	if c.ModelGateway != nil {
		if err := c.ModelGateway.validate(prefix); err != nil {
			return err
		}
	}
	return c.validateLifetime(prefix)
}
