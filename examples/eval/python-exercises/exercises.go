// Package exercises builds the cases of the example eval suite
// python-exercises from the Python files under exercises/: each directory
// exercises/<name>/ holds solution.py (a function) and test_<name>.py
// (plain asserts, "ok" printed at the end, only the standard library), and
// the table Exercises gives each its labels. `go run ./gen` writes the
// cases to cases.jsonl, which `primectl create -f suite.yaml --cases
// cases.jsonl` loads.
package exercises

import (
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"

	"github.com/primerhq/primer/eval"
)

// sources are the exercises' Python files.
//
//go:embed exercises
var sources embed.FS

// Exercise is one exercise of the suite.
type Exercise struct {
	// Name is the exercise's directory under exercises/ and its case id.
	Name string
	// Topic and Level become the case's labels topic and level.
	Topic, Level string
	// Buggy marks a solution that is wrong on purpose, so that a run
	// shows real failures: the case is labelled expected=fail.
	Buggy bool
	// Scored tests write score.json (a score and metrics) and
	// report.txt, which the case keeps as its score and an artifact.
	Scored bool
}

// Exercises are the suite's cases, in the order of cases.jsonl.
var Exercises = []Exercise{
	// strings
	{Name: "reverse_words", Topic: "strings", Level: "easy"},
	{Name: "is_palindrome", Topic: "strings", Level: "easy"},
	{Name: "count_vowels", Topic: "strings", Level: "easy"},
	{Name: "squeeze_spaces", Topic: "strings", Level: "easy"},
	{Name: "caesar_cipher", Topic: "strings", Level: "easy", Buggy: true, Scored: true},
	{Name: "run_length_encode", Topic: "strings", Level: "medium"},
	{Name: "common_prefix", Topic: "strings", Level: "medium"},
	{Name: "camel_to_snake", Topic: "strings", Level: "medium", Scored: true},
	{Name: "roman_to_int", Topic: "strings", Level: "medium", Scored: true},
	{Name: "valid_ipv4", Topic: "strings", Level: "medium", Scored: true},
	// math
	{Name: "factorial", Topic: "math", Level: "easy"},
	{Name: "fibonacci", Topic: "math", Level: "easy"},
	{Name: "gcd", Topic: "math", Level: "easy"},
	{Name: "lcm", Topic: "math", Level: "easy"},
	{Name: "digit_sum", Topic: "math", Level: "easy"},
	{Name: "fizzbuzz", Topic: "math", Level: "easy", Scored: true},
	{Name: "is_prime", Topic: "math", Level: "easy", Buggy: true, Scored: true},
	{Name: "collatz_steps", Topic: "math", Level: "easy"},
	{Name: "to_binary", Topic: "math", Level: "easy"},
	{Name: "median", Topic: "math", Level: "easy"},
	{Name: "perfect_number", Topic: "math", Level: "medium"},
	{Name: "integer_sqrt", Topic: "math", Level: "medium"},
	{Name: "matrix_multiply", Topic: "math", Level: "medium"},
	// lists
	{Name: "flatten", Topic: "lists", Level: "easy"},
	{Name: "chunk", Topic: "lists", Level: "easy"},
	{Name: "dedupe", Topic: "lists", Level: "easy"},
	{Name: "rotate_list", Topic: "lists", Level: "easy"},
	{Name: "second_largest", Topic: "lists", Level: "easy", Buggy: true},
	{Name: "running_sum", Topic: "lists", Level: "easy"},
	{Name: "transpose", Topic: "lists", Level: "easy"},
	{Name: "move_zeros", Topic: "lists", Level: "easy"},
	{Name: "merge_sorted", Topic: "lists", Level: "medium"},
	{Name: "two_sum", Topic: "lists", Level: "medium"},
	{Name: "max_subarray", Topic: "lists", Level: "medium", Scored: true},
	{Name: "binary_search", Topic: "lists", Level: "medium", Buggy: true},
	{Name: "bubble_sort", Topic: "lists", Level: "medium"},
	// dicts
	{Name: "invert_dict", Topic: "dicts", Level: "easy"},
	{Name: "group_by_length", Topic: "dicts", Level: "easy"},
	{Name: "word_frequency", Topic: "dicts", Level: "easy", Buggy: true},
	{Name: "merge_counts", Topic: "dicts", Level: "easy"},
	{Name: "nested_sum", Topic: "dicts", Level: "easy"},
	{Name: "deep_get", Topic: "dicts", Level: "medium"},
	{Name: "top_k_frequent", Topic: "dicts", Level: "medium"},
	{Name: "inventory", Topic: "dicts", Level: "medium"},
	// sets
	{Name: "unique_chars", Topic: "sets", Level: "easy"},
	{Name: "common_elements", Topic: "sets", Level: "easy"},
	// parsing
	{Name: "balanced_brackets", Topic: "parsing", Level: "medium", Scored: true},
	{Name: "eval_rpn", Topic: "parsing", Level: "medium"},
	{Name: "parse_duration", Topic: "parsing", Level: "medium"},
	{Name: "csv_totals", Topic: "parsing", Level: "medium"},
}

// What the cases run and expect, and the files scored tests write.
const (
	ScoreFile  = "score.json"
	ReportFile = "report.txt"
	// OK is what every test prints last when all its asserts held.
	OK = "ok"
)

// Cases returns the suite's cases, one per exercise in the order of
// Exercises. It fails when a directory under exercises/ is not in the
// table, or an exercise lacks one of its two files.
func Cases() ([]eval.Case, error) {
	dirs, err := fs.ReadDir(sources, "exercises")
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	for _, e := range Exercises {
		if listed[e.Name] {
			return nil, fmt.Errorf("exercise %s: listed twice", e.Name)
		}
		listed[e.Name] = true
	}
	for _, d := range dirs {
		if !listed[d.Name()] {
			return nil, fmt.Errorf("exercises/%s: not in the table Exercises", d.Name())
		}
	}
	cases := make([]eval.Case, 0, len(Exercises))
	for _, e := range Exercises {
		c, err := e.Case()
		if err != nil {
			return nil, err
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// Case returns the exercise's case: its two files, the test as the
// command, exit code 0 and "ok" on stdout expected, and its labels.
func (e Exercise) Case() (eval.Case, error) {
	test := "test_" + e.Name + ".py"
	files := map[string]eval.File{}
	for _, name := range []string{"solution.py", test} {
		data, err := fs.ReadFile(sources, path.Join("exercises", e.Name, name))
		if err != nil {
			return eval.Case{}, fmt.Errorf("exercise %s: %w", e.Name, err)
		}
		files[name] = eval.File{Data: data}
	}
	exit := 0
	expected := "pass"
	if e.Buggy {
		expected = "fail"
	}
	c := eval.Case{
		ID:      e.Name,
		Files:   files,
		Command: eval.Command{Args: []string{"python3", test}},
		Expect:  eval.Expect{ExitCode: &exit, StdoutContains: []string{OK}},
		Labels:  map[string]string{"topic": e.Topic, "level": e.Level, "expected": expected},
	}
	if e.Scored {
		c.ScoreFile = ScoreFile
		c.Collect = []string{ReportFile}
	}
	return c, nil
}

// WriteJSONL writes cases one JSON object a line, as
// eval.ReadCasesJSONL reads them. HTML characters are left as they are,
// so the Python in the files stays readable.
func WriteJSONL(w io.Writer, cases []eval.Case) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, c := range cases {
		if err := enc.Encode(c); err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
	}
	return nil
}
