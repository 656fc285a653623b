package eval

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
)

func TestReadJSONL(t *testing.T) {
	big := strings.Repeat("x", 300<<10) // longer than any bufio buffer
	bin := base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 255})
	in := "\n" + // leading empty lines are skipped
		`{"id": "s", "pool_id": "warm", "cases": [{"id": "inline", "command": "true"}]}` + "\r\n" +
		`{"id": "a", "command": ["python3", "a.py"], "files": {"a.py": "` + big + `", "b.bin": {"base64": "` + bin + `"}}}` + "\n" +
		"   \n\n" +
		`{"id": "b", "command": "echo b", "timeout": 30}` // no final newline
	s, err := ReadJSONL(strings.NewReader(in), 0)
	if err != nil {
		t.Fatalf("ReadJSONL: %v", err)
	}
	if s.ID != "s" || s.PoolID != "warm" {
		t.Errorf("spec = %+v", s)
	}
	var ids []string
	for _, c := range s.Cases {
		ids = append(ids, c.ID)
	}
	if got := strings.Join(ids, ","); got != "inline,a,b" {
		t.Fatalf("case ids = %s, want inline,a,b", got)
	}
	if got := s.Cases[1].Files["a.py"]; string(got.Data) != big {
		t.Errorf("long file: %d bytes, want %d", len(got.Data), len(big))
	}
	if got := s.Cases[1].Files["b.bin"]; !bytes.Equal(got.Data, []byte{0, 1, 2, 255}) || !got.Binary {
		t.Errorf("base64 file = %+v", got)
	}
	if s.Cases[2].Timeout.D() != 30*time.Second || s.Cases[2].Command.Script != "echo b" {
		t.Errorf("case b = %+v", s.Cases[2])
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

func TestReadJSONLErrors(t *testing.T) {
	spec := `{"id": "s", "template_id": "t"}`
	tests := []struct {
		name  string
		in    string
		kind  errs.Kind
		field string
		msg   string
	}{
		{"empty", "\n \n", errs.Invalid, "spec", "empty"},
		{"spec not JSON", "{id\n", errs.Invalid, "spec", "line 1:"},
		{"spec unknown field", `{"id": "s", "templat_id": "t"}`, errs.Invalid, "spec", `unknown field "templat_id"`},
		{"case unknown field", spec + "\n" + `{"id": "a", "command": "true"}` + "\n\n" + `{"id": "b", "comand": "true"}`, errs.Invalid, "spec.cases", "line 4: "},
		{"case bad JSON", spec + "\n" + `{"id": "a", "command": "true"`, errs.Invalid, "spec.cases", "line 2: "},
		{"case bad command", spec + "\n" + `{"id": "a", "command": 3}`, errs.Invalid, "spec.cases", "line 2: "},
		{"two objects on a line", spec + "\n" + `{"id": "a", "command": "true"} {"id": "b"}`, errs.Invalid, "spec.cases", "line 2: unexpected data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadJSONL(strings.NewReader(tt.in), 0)
			if err == nil {
				t.Fatal("ReadJSONL passed")
			}
			if got := errs.KindOf(err); got != tt.kind {
				t.Errorf("kind = %v, want %v (%v)", got, tt.kind, err)
			}
			if got := errs.FieldOf(err); got != tt.field {
				t.Errorf("field = %q, want %q (%v)", got, tt.field, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
		})
	}
}

// jsonlSuite returns a JSONL suite of n cases.
func jsonlSuite(n int) string {
	var b strings.Builder
	b.WriteString(`{"id": "big", "template_id": "python", "concurrency": 32}` + "\n")
	for i := range n {
		fmt.Fprintf(&b, `{"id": "case-%05d", "command": ["python3", "-c", "print(%d)"], "expect": {"stdout_contains": ["%d"]}, "labels": {"shard": "%d"}}`+"\n", i, i, i, i%4)
	}
	return b.String()
}

func TestReadJSONLTenThousandCases(t *testing.T) {
	in := jsonlSuite(10000)
	start := time.Now()
	s, err := ReadJSONL(strings.NewReader(in), MaxSuiteBytes)
	if err != nil {
		t.Fatalf("ReadJSONL: %v", err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	took := time.Since(start)
	if len(s.Cases) != 10000 || s.Cases[9999].ID != "case-09999" {
		t.Fatalf("read %d cases, last %q", len(s.Cases), s.Cases[len(s.Cases)-1].ID)
	}
	// About 50 ms on a laptop; the bound leaves room for a busy CI machine
	// while still catching a quadratic reader.
	if took > 5*time.Second {
		t.Errorf("reading and checking 10,000 cases took %v", took)
	}
	t.Logf("10,000 cases (%d bytes) read and checked in %v", len(in), took)
}

// endless yields spaces forever: a body too large must fail without
// being read whole.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.read += int64(len(p))
	return len(p), nil
}

func TestReadJSONLTooLarge(t *testing.T) {
	in := jsonlSuite(100)
	tests := []struct {
		name string
		r    func() io.Reader
		max  int64
		ok   bool
	}{
		{"exactly max", func() io.Reader { return strings.NewReader(in) }, int64(len(in)), true},
		{"one byte over", func() io.Reader { return strings.NewReader(in) }, int64(len(in)) - 1, false},
		{"far over", func() io.Reader { return strings.NewReader(in) }, 1000, false},
		{"one long line", func() io.Reader { return strings.NewReader(`{"id": "` + strings.Repeat("a", 1<<20) + `"}`) }, 64 << 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadJSONL(tt.r(), tt.max)
			if tt.ok {
				if err != nil {
					t.Fatalf("ReadJSONL: %v", err)
				}
				return
			}
			if !errs.Is(err, errs.TooLarge) {
				t.Fatalf("err = %v (%v), want too_large", err, errs.KindOf(err))
			}
			if _, err := ReadCasesJSONL(tt.r(), tt.max); !errs.Is(err, errs.TooLarge) {
				t.Errorf("ReadCasesJSONL: err = %v, want too_large", err)
			}
		})
	}

	// No limit to speak of: the limit arithmetic must not overflow.
	if _, err := ReadJSONL(strings.NewReader(in), math.MaxInt64); err != nil {
		t.Errorf("max of MaxInt64: %v", err)
	}

	e := &endless{}
	if _, err := ReadJSONL(e, 1<<20); !errs.Is(err, errs.TooLarge) {
		t.Fatalf("endless stream: err = %v, want too_large", err)
	}
	if e.read > 2<<20 {
		t.Errorf("read %d bytes of an endless stream with a limit of 1 MiB", e.read)
	}
}

func TestReadCasesJSONL(t *testing.T) {
	in := `{"id": "a", "command": "true"}` + "\n\n" + `{"id": "b", "command": ["false"]}` + "\n"
	cases, err := ReadCasesJSONL(strings.NewReader(in), 0)
	if err != nil {
		t.Fatalf("ReadCasesJSONL: %v", err)
	}
	if len(cases) != 2 || cases[0].ID != "a" || cases[1].Command.Args[0] != "false" {
		t.Errorf("cases = %+v", cases)
	}
	_, err = ReadCasesJSONL(strings.NewReader(in+`{"id": "c", "cmd": "x"}`), 0)
	if errs.FieldOf(err) != "spec.cases" || !strings.Contains(fmt.Sprint(err), "line 4: ") {
		t.Errorf("err = %v (field %q), want spec.cases naming line 4", err, errs.FieldOf(err))
	}
	cases, err = ReadCasesJSONL(strings.NewReader(""), 0)
	if err != nil || len(cases) != 0 {
		t.Errorf("empty input: %v, %v", cases, err)
	}
}
