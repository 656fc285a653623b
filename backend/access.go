package backend

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/primerhq/primer/errs"
)

// Redacted stands in for a secret in every answer of the API. Sent back
// unchanged in an update it keeps the stored value.
const Redacted = "(redacted)"

// Access rules. Every field of every provider config type says, in an
// `access` struct tag, who may set it:
//
//	access:"any"           whoever may write the provider
//	access:"secret"        whoever may write it; an inline credential, stored
//	                       but never answered (Redacted), and dropped when an
//	                       endpoint changes
//	access:"admin:<why>"   only an admin: its effect lands on the platform's
//	                       host (why is a key of reasons)
//
// and an ",endpoint" option marks the fields that say where the platform
// connects: a change of one drops the stored secrets the update does not
// send again. The rule "the host is the admin's" is these tags; the route
// matrix fails for a field without one.
const (
	AccessAny    = "any"
	AccessSecret = "secret"
	AccessAdmin  = "admin"
)

// reasons are the why of admin-only fields, as the refusal says them.
var reasons = map[string]string{
	"path":     "names a path on the Primer host",
	"env":      "names an environment variable of the Primer host",
	"command":  "runs a command on the Primer host",
	"hostfile": "writes a file on the Primer host",
	"network":  "joins workspaces to an engine network other tenants' workspaces or the platform may be on",
	"platform": "uses the Primer host's own credentials",
	"root":     "lets workspaces run as root on the provider's hosts",
}

// Rule is one field's access rule.
type Rule struct {
	// Kind is AccessAny, AccessSecret or AccessAdmin.
	Kind string
	// Why says, for an admin-only field, what it does to the host.
	Why string
	// Endpoint marks a field that says where the platform connects.
	Endpoint bool
	// Addr marks an endpoint field holding an address the platform dials
	// (host, host:port or tcp://host:port): a non-admin's is checked
	// against the outbound policy (",addr" implies ",endpoint").
	Addr bool
}

// ParseRule parses an access tag.
func ParseRule(tag string) (Rule, error) {
	parts := strings.Split(tag, ",")
	var r Rule
	for _, o := range parts[1:] {
		switch o {
		case "endpoint":
			r.Endpoint = true
		case "addr":
			r.Endpoint, r.Addr = true, true
		default:
			return r, fmt.Errorf("access tag %q: unknown option %q", tag, o)
		}
	}
	kind, why, _ := strings.Cut(parts[0], ":")
	switch kind {
	case AccessAny, AccessSecret:
		if why != "" {
			return r, fmt.Errorf("access tag %q: only admin takes a reason", tag)
		}
	case AccessAdmin:
		if reasons[why] == "" {
			return r, fmt.Errorf("access tag %q: admin needs a reason, one of %s", tag, strings.Join(slices.Sorted(maps.Keys(reasons)), ", "))
		}
		why = reasons[why]
	case "":
		return r, fmt.Errorf("no access tag")
	default:
		return r, fmt.Errorf("access tag %q: want any, secret or admin:<reason>", tag)
	}
	r.Kind, r.Why = kind, why
	return r, nil
}

// Setting is an admin-only setting a document makes.
type Setting struct {
	// Path is the field ("spec.config.connection.private_key_file").
	Path string
	// Why says what it does to the host.
	Why string
}

// Err is the refusal of s to a caller that is not an admin.
func (s Setting) Err() error {
	return &errs.Error{Kind: errs.Forbidden, Field: s.Path, Msg: fmt.Sprintf("%s: %s; only an admin may set it", s.Path, s.Why)}
}

// HostEffecter is a config whose effect on the host depends on values, not
// only on which fields are set: a Kubernetes connection without
// credentials of its own falls back to the platform's.
type HostEffecter interface {
	HostEffects(prefix string) []Setting
}

// field is one field of a walked value.
type field struct {
	path string
	rule Rule
	v    reflect.Value
}

// walk calls fn for every leaf field of v (a struct or a pointer to one)
// with its path under prefix; structs, pointers to structs and slices of
// structs are walked into, everything else is a leaf. A field without a
// valid rule is given to bad (nil: skipped).
func walk(v reflect.Value, prefix string, fn func(field), bad func(path string, err error)) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		path := prefix + "." + name
		if sf.Anonymous && sf.Tag.Get("json") == "" {
			path = prefix
		}
		// A field without a valid rule is walked with an empty Kind, which
		// AdminSettings treats as admin-only.
		rule, err := ParseRule(sf.Tag.Get("access"))
		if err != nil && !(sf.Anonymous && sf.Tag.Get("json") == "") && bad != nil {
			bad(path, err)
		}
		fv := v.Field(i)
		inner := sf.Type
		for inner.Kind() == reflect.Pointer {
			inner = inner.Elem()
		}
		switch {
		case inner.Kind() == reflect.Struct:
			walk(fv, path, fn, bad)
		case inner.Kind() == reflect.Slice && elemStruct(inner):
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if fv.Len() == 0 {
				// Walk the element type once, so a type without values
				// still has its rules checked.
				walk(reflect.New(inner.Elem()), path+".0", func(field) {}, bad)
			}
			for j := range fv.Len() {
				walk(fv.Index(j), path+"."+strconv.Itoa(j), fn, bad)
			}
		default:
			fn(field{path: path, rule: rule, v: fv})
		}
	}
}

func elemStruct(t reflect.Type) bool {
	e := t.Elem()
	for e.Kind() == reflect.Pointer {
		e = e.Elem()
	}
	return e.Kind() == reflect.Struct
}

// CheckRules returns an error naming every field of config type t (and the
// types it holds) that has no valid access rule, so that a new field
// cannot skip the question.
func CheckRules(t reflect.Type) error {
	var missing []string
	walk(reflect.New(t), "", func(field) {}, func(path string, err error) {
		missing = append(missing, strings.TrimPrefix(path, ".")+": "+err.Error())
	})
	if len(missing) > 0 {
		return fmt.Errorf("%s: fields without an access rule: %s", t, strings.Join(missing, "; "))
	}
	return nil
}

// Rules returns the rule of every leaf field of config type t by path
// (slice elements as ".0"); tests enumerate them.
func Rules(t reflect.Type) map[string]Rule {
	out := map[string]Rule{}
	v := reflect.New(t)
	fill(v)
	walk(v, "", func(f field) { out[strings.TrimPrefix(f.path, ".")] = f.rule }, nil)
	return out
}

// fill gives every nil pointer and empty slice of structs under v one
// element, so that walk reaches every field.
func fill(v reflect.Value) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		t := f.Type()
		switch {
		case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
			fill(f)
		case t.Kind() == reflect.Struct:
			fill(f)
		case t.Kind() == reflect.Slice && elemStruct(t):
			f.Set(reflect.MakeSlice(t, 1, 1))
			fill(f.Index(0).Addr())
		}
	}
}

// AdminSettings returns the admin-only settings config (a decoded provider
// config, a pointer to its type) makes, with paths under prefix
// ("spec.config"): the admin fields it sets, and what a HostEffecter
// reports. A field without a rule counts as admin-only: a rule nobody
// wrote is not a permission.
func AdminSettings(config any, prefix string) []Setting {
	var out []Setting
	walk(reflect.ValueOf(config), prefix, func(f field) {
		switch {
		case f.v.IsZero():
		case f.rule.Kind == AccessAdmin:
			out = append(out, Setting{Path: f.path, Why: f.rule.Why})
		case f.rule.Kind == "":
			out = append(out, Setting{Path: f.path, Why: "has no access rule"})
		}
	}, nil)
	if h, ok := config.(HostEffecter); ok {
		out = append(out, h.HostEffects(prefix)...)
	}
	return out
}

// secrets returns the settable secret fields of config by path.
func secrets(config any) map[string]reflect.Value {
	out := map[string]reflect.Value{}
	walk(reflect.ValueOf(config), "", func(f field) {
		if f.rule.Kind == AccessSecret && f.v.Kind() == reflect.String {
			out[f.path] = f.v
		}
	}, nil)
	return out
}

// HasSecrets reports whether config sets an inline secret.
func HasSecrets(config any) bool {
	for _, v := range secrets(config) {
		if v.String() != "" {
			return true
		}
	}
	return false
}

// RedactSecrets replaces every inline secret config (a pointer) sets with
// Redacted, and reports whether there was one.
func RedactSecrets(config any) bool {
	found := false
	for _, v := range secrets(config) {
		if v.String() != "" && v.CanSet() {
			v.SetString(Redacted)
			found = true
		}
	}
	return found
}

// Endpoints returns the values of config's endpoint fields by path, to
// compare an update with the stored config.
func Endpoints(config any) map[string]string {
	out := map[string]string{}
	walk(reflect.ValueOf(config), "", func(f field) {
		if f.rule.Endpoint {
			b, _ := json.Marshal(f.v.Interface())
			out[f.path] = string(b)
		}
	}, nil)
	return out
}

// Addresses returns the non-empty values of config's address fields (the
// ",addr" option) by path under prefix, for the outbound policy.
func Addresses(config any, prefix string) map[string]string {
	out := map[string]string{}
	walk(reflect.ValueOf(config), prefix, func(f field) {
		if f.rule.Addr && f.v.Kind() == reflect.String && f.v.String() != "" {
			out[f.path] = f.v.String()
		}
	}, nil)
	return out
}

// RestoreSecrets replaces every Redacted secret in config (an update) with
// old's value of the same field (old: the stored config of the same type,
// or nil on create), and reports whether it changed config. A placeholder
// with no stored value is refused, and so is one in an update that
// changes an endpoint: a stored credential never follows the provider to
// an endpoint its sender did not give it for (the update must send it
// again). prefix names the document in errors.
func RestoreSecrets(config, old any, prefix string) (bool, error) {
	var stored map[string]reflect.Value
	moved := ""
	if old != nil {
		stored = secrets(old)
		now, was := Endpoints(config), Endpoints(old)
		for _, k := range slices.Sorted(maps.Keys(now)) {
			if was[k] != now[k] {
				moved = k
				break
			}
		}
		for _, k := range slices.Sorted(maps.Keys(was)) {
			if _, ok := now[k]; !ok && moved == "" {
				moved = k
			}
		}
	}
	changed := false
	cur := secrets(config)
	for _, path := range slices.Sorted(maps.Keys(cur)) {
		v := cur[path]
		if v.String() != Redacted {
			continue
		}
		f := prefix + path
		switch ov, ok := stored[path]; {
		case moved != "":
			return changed, errs.Field(f, "%s: %s keeps the stored value only while the endpoint stays; %s%s changed, so send the value again", f, Redacted, prefix, moved)
		case !ok || ov.String() == "" || ov.String() == Redacted:
			return changed, errs.Field(f, "%s: %s is a placeholder, and the stored provider has no value for it", f, Redacted)
		default:
			v.SetString(ov.String())
		}
		changed = true
	}
	return changed, nil
}
