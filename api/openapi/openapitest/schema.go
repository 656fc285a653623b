package openapitest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// validator checks JSON values against the schemas of one document.
type validator struct {
	components map[string]any // #/components/schemas
}

// validate returns what is wrong with v (decoded with UseNumber) under
// schema s, each problem prefixed with its JSON path; nil when v conforms.
func (x *validator) validate(v any, s map[string]any, at string) []string {
	if ref, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/components/schemas/")
		target, ok := x.components[name].(map[string]any)
		if !found || !ok {
			return []string{at + ": $ref " + ref + " does not resolve"}
		}
		return x.validate(v, target, at)
	}
	var errs []string
	if t, ok := s["type"]; ok && !typeMatches(v, t) {
		return []string{fmt.Sprintf("%s: %s is not of type %v", at, kindOf(v), t)}
	}
	if enum, ok := s["enum"].([]any); ok && !inEnum(v, enum) {
		errs = append(errs, fmt.Sprintf("%s: %v is not one of %v", at, v, enum))
	}
	if any, ok := s["anyOf"].([]any); ok {
		if n, first := x.matches(v, any, at); n == 0 {
			errs = append(errs, fmt.Sprintf("%s: matches none of anyOf (first branch: %s)", at, first))
		}
	}
	if one, ok := s["oneOf"].([]any); ok {
		if n, first := x.matches(v, one, at); n != 1 {
			errs = append(errs, fmt.Sprintf("%s: matches %d branches of oneOf, not 1 (%s)", at, n, first))
		}
	}
	switch val := v.(type) {
	case map[string]any:
		errs = append(errs, x.object(val, s, at)...)
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range val {
				errs = append(errs, x.validate(e, items, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	case string:
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, val); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %q is not a date-time", at, val))
			}
		}
		if s["contentEncoding"] == "base64" {
			if _, err := base64.StdEncoding.DecodeString(val); err != nil {
				errs = append(errs, fmt.Sprintf("%s: not base64: %v", at, err))
			}
		}
	case json.Number:
		if min, ok := s["minimum"].(float64); ok {
			if f, err := val.Float64(); err == nil && f < min {
				errs = append(errs, fmt.Sprintf("%s: %s is below the minimum %v", at, val, min))
			}
		}
	}
	return errs
}

// matches counts the branches v conforms to, with the first branch's
// problems for the message.
func (x *validator) matches(v any, branches []any, at string) (int, string) {
	n, first := 0, ""
	for i, b := range branches {
		bs, _ := b.(map[string]any)
		e := x.validate(v, bs, at)
		if len(e) == 0 {
			n++
		} else if i == 0 {
			first = strings.Join(e, "; ")
		}
	}
	return n, first
}

func (x *validator) object(val map[string]any, s map[string]any, at string) []string {
	var errs []string
	props, _ := s["properties"].(map[string]any)
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			name, _ := r.(string)
			if _, present := val[name]; !present {
				errs = append(errs, fmt.Sprintf("%s: required field %q is missing", at, name))
			}
		}
	}
	keys := make([]string, 0, len(val))
	for k := range val {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ps, ok := props[k].(map[string]any); ok {
			errs = append(errs, x.validate(val[k], ps, at+"."+k)...)
			continue
		}
		switch ap := s["additionalProperties"].(type) {
		case bool:
			if !ap {
				errs = append(errs, fmt.Sprintf("%s: field %q is not in the document", at, k))
			}
		case map[string]any:
			errs = append(errs, x.validate(val[k], ap, at+"."+k)...)
		}
	}
	return errs
}

// typeMatches reports whether v is of the schema type t (a name or a list).
func typeMatches(v any, t any) bool {
	switch tt := t.(type) {
	case string:
		return isType(v, tt)
	case []any:
		for _, e := range tt {
			if name, _ := e.(string); isType(v, name) {
				return true
			}
		}
	}
	return false
}

func isType(v any, name string) bool {
	switch name {
	case "null":
		return v == nil
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		if _, err := n.Int64(); err == nil {
			return true
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f)
	}
	return false
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func inEnum(v any, enum []any) bool {
	for _, e := range enum {
		if fmt.Sprint(e) == fmt.Sprint(v) {
			return true
		}
	}
	return false
}
