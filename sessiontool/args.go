package sessiontool

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// decode reads a call's arguments: one JSON object, no unknown fields.
// An error names the field at fault, as the API's body errors do.
func decode(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		if dec.More() {
			return errs.E(errs.Invalid, "arguments: unexpected data after the JSON object at offset %d", dec.InputOffset())
		}
		return nil
	case errors.As(err, &typ) && typ.Field != "":
		return errs.Field(typ.Field, "%s: expected %s, got %s", typ.Field, jsonType(typ.Type), typ.Value)
	case errors.As(err, &typ):
		return errs.E(errs.Invalid, "arguments: expected a JSON object, got %s", typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for it; its message is stable.
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return errs.Field(name, "%s: unknown field", name)
	}
	return errs.E(errs.Invalid, "arguments: malformed JSON: %v", err)
}

// jsonType names a Go type as the JSON it decodes from.
func jsonType(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "a number"
	}
	return "a " + t.String()
}

// execRequest checks an exec's arguments: the program (args, or command
// for sh -c), env, cwd inside the workspace and the timeout.
func execRequest(a ExecArgs, lim Limits) ([]string, protocol.ExecRequest, error) {
	var argv []string
	switch {
	case len(a.Args) > 0 && a.Command != "":
		return nil, protocol.ExecRequest{}, errs.Field("args", "args and command: give one, not both")
	case len(a.Args) > 0:
		if a.Args[0] == "" {
			return nil, protocol.ExecRequest{}, errs.Field("args", "args[0]: must name the program")
		}
		for i, s := range a.Args {
			if strings.IndexByte(s, 0) >= 0 {
				return nil, protocol.ExecRequest{}, errs.Field("args", "args[%d]: contains a NUL byte", i)
			}
		}
		argv = a.Args
	case a.Command != "":
		if strings.IndexByte(a.Command, 0) >= 0 {
			return nil, protocol.ExecRequest{}, errs.Field("command", "command: contains a NUL byte")
		}
		argv = []string{"sh", "-c", a.Command}
	default:
		return nil, protocol.ExecRequest{}, errs.Field("args", "args or command: required (args: the program and its arguments; command: a script for sh -c)")
	}
	req, err := ExecOptions(a.Env, a.Cwd, a.Timeout, lim)
	if err != nil {
		return nil, protocol.ExecRequest{}, err
	}
	req.Args = argv
	if a.Stdin != "" {
		req.Stdin = []byte(a.Stdin)
	}
	return argv, req, nil
}

// ExecOptions checks an exec's env (names, no NUL bytes), cwd (inside the
// workspace) and timeout (a duration within lim) and returns the request
// without its program: the session tools and the workspace exec API check
// them alike.
func ExecOptions(env map[string]string, cwd, timeout string, lim Limits) (protocol.ExecRequest, error) {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return protocol.ExecRequest{}, errs.Field("env", "env: invalid variable name %q", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return protocol.ExecRequest{}, errs.Field("env."+k, "env.%s: value contains a NUL byte", k)
		}
	}
	dir, err := CleanPath("cwd", cwd)
	if err != nil {
		return protocol.ExecRequest{}, err
	}
	d := lim.DefaultExecTimeout
	if timeout != "" {
		var err error
		d, err = time.ParseDuration(timeout)
		switch {
		case err != nil:
			return protocol.ExecRequest{}, errs.Field("timeout", "timeout: %q is not a duration (e.g. 30s, 5m)", timeout)
		case d <= 0:
			return protocol.ExecRequest{}, errs.Field("timeout", "timeout: %s must be above 0", d)
		case lim.MaxExecTimeout > 0 && d > lim.MaxExecTimeout:
			return protocol.ExecRequest{}, errs.Field("timeout", "timeout: %s must be above 0 and at most %s", d, lim.MaxExecTimeout)
		}
	}
	return protocol.ExecRequest{Env: env, Cwd: dir, Timeout: d}, nil
}

// toolPath checks the path of a read or write: a file inside the
// workspace, outside its history.
func toolPath(raw string) (string, error) {
	if raw == "" {
		return "", errs.Field("path", "path: required")
	}
	p, err := CleanPath("path", raw)
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", errs.Field("path", "path %q: is the workspace root, not a file", raw)
	}
	if p == protocol.StateDir || strings.HasPrefix(p, protocol.StateDir+"/") {
		return "", errs.Field("path", "path %q: %s holds the workspace's history and is not open to tools", raw, protocol.StateDir)
	}
	return p, nil
}

// WriteContent decodes a write's content.
func WriteContent(a WriteArgs) ([]byte, error) {
	switch strings.ToLower(a.Encoding) {
	case "", "utf-8", "utf8":
		return []byte(a.Content), nil
	case "base64":
		data, err := base64.StdEncoding.DecodeString(a.Content)
		if err != nil {
			return nil, errs.Field("content", "content: not valid base64: %v", err)
		}
		return data, nil
	}
	return nil, errs.Field("encoding", "encoding: %q is not one of utf-8, base64", a.Encoding)
}

// writeRequest checks a write's arguments: the path, the content (within
// lim.MaxFileBytes) and the mode.
func writeRequest(a WriteArgs, lim Limits) (string, []byte, os.FileMode, error) {
	p, err := toolPath(a.Path)
	if err != nil {
		return "", nil, 0, err
	}
	data, err := WriteContent(a)
	if err != nil {
		return "", nil, 0, err
	}
	if lim.MaxFileBytes > 0 && int64(len(data)) > lim.MaxFileBytes {
		return "", nil, 0, errs.E(errs.TooLarge, "file %s: %d bytes is over the limit of %d", p, len(data), lim.MaxFileBytes)
	}
	var mode os.FileMode
	if a.Mode != "" {
		n, err := strconv.ParseUint(a.Mode, 8, 32)
		if err != nil || n > 0o777 {
			return "", nil, 0, errs.Field("mode", "mode: %q is not an octal permission between 0 and 0777 (e.g. \"0644\")", a.Mode)
		}
		mode = os.FileMode(n)
	}
	return p, data, mode, nil
}

// cleanPath checks and cleans a workspace-relative path given in field.
func CleanPath(field, raw string) (string, error) {
	if strings.IndexByte(raw, 0) >= 0 {
		return "", errs.Field(field, "%s %q: contains a NUL byte", field, raw)
	}
	if strings.HasPrefix(raw, "/") {
		return "", errs.Field(field, "%s %q: absolute paths are not allowed; paths are relative to the workspace root", field, raw)
	}
	if raw == "" {
		return "", nil
	}
	p := path.Clean(raw)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", errs.Field(field, "%s %q: escapes the workspace root", field, raw)
	}
	if p == "." {
		return "", nil
	}
	return p, nil
}
