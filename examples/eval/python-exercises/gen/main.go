// Command gen writes cases.jsonl of the example suite python-exercises
// from the Python files under exercises/. Run it from
// examples/eval/python-exercises after changing an exercise:
//
//	go run ./gen
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	exercises "github.com/primerhq/primer/examples/eval/python-exercises"
)

func main() {
	out := flag.String("o", "cases.jsonl", "the file to write")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	cases, err := exercises.Cases()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := exercises.WriteJSONL(&buf, cases); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Printf("%s: %d cases\n", out, len(cases))
	return nil
}
