package models

import (
	"context"
	"encoding/json"
	"reflect"

	"gorm.io/gorm/schema"
)

// rawJSON is the `serializer:rawjson` of the wire types' optional JSON
// columns: JSON, except that an absent value (stored as null) reads back
// as none, so it is left out of the API's answers.
type rawJSON struct{ schema.JSONSerializer }

func init() { schema.RegisterSerializer("rawjson", rawJSON{}) }

// Scan decodes dbValue as JSON and turns a null into none.
func (s rawJSON) Scan(ctx context.Context, field *schema.Field, dst reflect.Value, dbValue any) error {
	if err := s.JSONSerializer.Scan(ctx, field, dst, dbValue); err != nil {
		return err
	}
	v := field.ReflectValueOf(ctx, dst)
	if raw, ok := v.Interface().(json.RawMessage); ok && string(raw) == "null" {
		v.Set(reflect.Zero(v.Type()))
	}
	return nil
}
