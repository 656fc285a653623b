package eval

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/errs"
)

func TestResolve(t *testing.T) {
	s := &SuiteSpec{Defaults: CaseDefaults{
		Timeout: Duration(time.Minute),
		Env:     map[string]string{"A": "suite", "B": "suite"},
		Files:   map[string]File{"lib.py": Text("suite"), "conf": Text("suite")},
		Setup:   []string{"pip install x"},
	}}
	c := Case{
		ID:      "a",
		Env:     map[string]string{"B": "case", "C": "case"},
		Files:   map[string]File{"conf": Text("case")},
		Setup:   []string{"make"},
		Timeout: Duration(10 * time.Second),
	}
	got := s.Resolve(c)
	if got.Timeout.D() != 10*time.Second {
		t.Errorf("Timeout = %v, want the case's 10s", got.Timeout.D())
	}
	if want := map[string]string{"A": "suite", "B": "case", "C": "case"}; !reflect.DeepEqual(got.Env, want) {
		t.Errorf("Env = %v, want %v", got.Env, want)
	}
	if string(got.Files["lib.py"].Data) != "suite" || string(got.Files["conf"].Data) != "case" || len(got.Files) != 2 {
		t.Errorf("Files = %v", got.Files)
	}
	if want := []string{"pip install x", "make"}; !reflect.DeepEqual(got.Setup, want) {
		t.Errorf("Setup = %q, want %q", got.Setup, want)
	}

	// The result is the caller's to change: neither suite nor case moves.
	got.Env["A"], got.Files["lib.py"], got.Setup[0] = "x", Text("x"), "x"
	if s.Defaults.Env["A"] != "suite" || string(s.Defaults.Files["lib.py"].Data) != "suite" || s.Defaults.Setup[0] != "pip install x" {
		t.Errorf("Resolve's result shares the suite's defaults: %+v", s.Defaults)
	}
	if len(c.Env) != 2 || len(c.Files) != 1 || c.Setup[0] != "make" {
		t.Errorf("Resolve's result shares the case's maps: %+v", c)
	}

	if got := s.Resolve(Case{}).Timeout.D(); got != time.Minute {
		t.Errorf("Timeout = %v, want the suite default 1m", got)
	}
	bare := (&SuiteSpec{}).Resolve(Case{ID: "b"})
	if bare.Timeout.D() != DefaultTimeout || bare.Env != nil || bare.Files != nil || bare.Setup != nil {
		t.Errorf("Resolve without defaults = %+v", bare)
	}
}

func TestSelect(t *testing.T) {
	cases := []Case{
		{ID: "a", Labels: map[string]string{"level": "easy", "lang": "py"}},
		{ID: "b", Labels: map[string]string{"level": "hard", "lang": "py"}},
		{ID: "c", Labels: map[string]string{"level": "easy", "lang": "go"}},
		{ID: "d"},
	}
	tests := []struct {
		name string
		sel  Selection
		want []int
		err  string
	}{
		{"all", Selection{}, []int{0, 1, 2, 3}, ""},
		{"by id in suite order", Selection{Cases: []string{"d", "a", "a"}}, []int{0, 3}, ""},
		{"by one label", Selection{Labels: map[string]string{"level": "easy"}}, []int{0, 2}, ""},
		{"by every label", Selection{Labels: map[string]string{"level": "easy", "lang": "py"}}, []int{0}, ""},
		{"ids and labels together", Selection{Cases: []string{"a", "b", "c"}, Labels: map[string]string{"lang": "py"}}, []int{0, 1}, ""},
		{"unknown id", Selection{Cases: []string{"a", "zz"}}, nil, `cases: suite has no case "zz"`},
		{"label matches none", Selection{Labels: map[string]string{"level": "medium"}}, nil, "picks no case"},
		{"ids and labels disjoint", Selection{Cases: []string{"d"}, Labels: map[string]string{"lang": "py"}}, nil, "picks no case"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(cases, tt.sel)
			if tt.err != "" {
				if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "cases" || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v (field %q), want invalid cases saying %q", err, errs.FieldOf(err), tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Select: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Select = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := Select(nil, Selection{}); errs.FieldOf(err) != "cases" {
		t.Errorf("Select of no cases: err = %v, want invalid cases", err)
	}
}
