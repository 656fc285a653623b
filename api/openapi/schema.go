package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Schema is one JSON Schema (2020-12, as OpenAPI 3.1 uses it), kept as a
// map so the document marshals with sorted keys: the same types always
// give the same bytes, which the docs/openapi.json sync test relies on.
type Schema = map[string]any

// schemas reflects Go types into JSON Schemas. A named struct becomes a
// component (#/components/schemas/Name) the first time it is seen and a
// $ref after; everything else is inline.
type schemas struct {
	defs  map[string]Schema       // component name -> schema
	names map[reflect.Type]string // type -> its component name
	taken map[string]reflect.Type // component name -> the type that has it
}

func newSchemas() *schemas {
	return &schemas{defs: map[string]Schema{}, names: map[reflect.Type]string{}, taken: map[string]reflect.Type{}}
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage{})
	byteType = reflect.TypeOf([]byte{})
)

// of returns the schema of t: a $ref for a named struct, inline otherwise.
func (g *schemas) of(t reflect.Type) Schema {
	if s, ok := customTypes[t]; ok {
		return s()
	}
	switch t {
	case timeType:
		return Schema{"type": "string", "format": "date-time"}
	case rawType:
		// Any JSON value; a field override (overrides.go) says more where
		// the value has a shape.
		return Schema{}
	case byteType:
		return Schema{"type": "string", "contentEncoding": "base64"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(g.of(t.Elem()))
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		return g.ref(t)
	case reflect.Slice, reflect.Array:
		return Schema{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return Schema{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Interface:
		return Schema{}
	case reflect.String:
		return Schema{"type": "string"}
	case reflect.Bool:
		return Schema{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		return Schema{"type": "integer", "format": "int64"}
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return Schema{"type": "integer", "format": "int32"}
	case reflect.Uint, reflect.Uint64:
		return Schema{"type": "integer", "format": "int64", "minimum": 0}
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return Schema{"type": "integer", "format": "int32", "minimum": 0}
	case reflect.Float32:
		return Schema{"type": "number", "format": "float"}
	case reflect.Float64:
		return Schema{"type": "number", "format": "double"}
	}
	panic(fmt.Sprintf("openapi: no schema for Go type %s", t))
}

// ref makes t a component (once) and returns a $ref to it.
func (g *schemas) ref(t reflect.Type) Schema {
	name, ok := g.names[t]
	if !ok {
		name = g.name(t)
		g.names[t], g.taken[name] = name, t
		g.defs[name] = Schema{} // a placeholder, so a recursive type ends
		g.defs[name] = g.object(t)
	}
	return Schema{"$ref": "#/components/schemas/" + name}
}

// name is t's component name: its Go name; wire.Items[T] is TList; a name
// two packages define is prefixed by the package of the second.
func (g *schemas) name(t reflect.Type) string {
	name := t.Name()
	if i := strings.IndexByte(name, '['); i >= 0 {
		// A generic instance: Items[github.com/.../wire.Workspace].
		base, arg := name[:i], strings.TrimSuffix(name[i+1:], "]")
		arg = arg[strings.LastIndexAny(arg, "./")+1:]
		if base == "Items" {
			name = arg + "List"
		} else {
			name = base + arg
		}
	}
	if other, ok := g.taken[name]; ok && other != t {
		pkg := t.PkgPath()[strings.LastIndexByte(t.PkgPath(), '/')+1:]
		name = strings.ToUpper(pkg[:1]) + pkg[1:] + name
	}
	return name
}

// object is the schema of struct t: its JSON fields (embedded structs'
// promoted), a field without omitempty required, and no other field
// allowed, so a response that grows a field the document lacks fails the
// response checks (openapitest).
func (g *schemas) object(t reflect.Type) Schema {
	props := Schema{}
	var required []string
	g.fields(t, t, props, &required)
	if req, ok := requiredOverrides[t]; ok {
		required = req
	}
	s := Schema{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// fields adds struct t's JSON fields to props (owner is the type whose
// component this is, for field overrides).
func (g *schemas) fields(owner, t reflect.Type, props Schema, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				g.fields(owner, et, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		var s Schema
		if o, ok := fieldOverrides[owner.Name()+"."+name]; ok {
			s = o(g)
		} else if o, ok := fieldOverrides[t.Name()+"."+name]; ok {
			s = o(g)
		} else {
			s = g.of(f.Type)
		}
		props[name] = s
		if !strings.Contains(","+opts+",", ",omitempty,") {
			*required = append(*required, name)
		}
	}
}

// nullable lets s be null as well (a Go pointer).
func nullable(s Schema) Schema {
	switch typ := s["type"].(type) {
	case string:
		out := Schema{}
		for k, v := range s {
			out[k] = v
		}
		out["type"] = []any{typ, "null"}
		return out
	case nil:
		if len(s) == 0 {
			return s // any value, null included
		}
	}
	return Schema{"anyOf": []any{s, Schema{"type": "null"}}}
}
