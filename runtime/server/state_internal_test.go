package server

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func TestParseTrailers(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want []trailer
	}{
		{"subject only", "Primer-Session: s1\n", nil},
		{"no trailers", "write a.txt\n\nsome body\n", nil},
		{"trailers", "write a.txt\n\nPrimer-Session: s1\nPrimer-Tool: write\n", []trailer{{"Primer-Session", "s1"}, {"Primer-Tool", "write"}}},
		{"after a body", "x\n\nbody\n\nKey: v\n", []trailer{{"Key", "v"}}},
		{"continuation", "x\n\nKey: a\n  b\n", []trailer{{"Key", "a b"}}},
		{"trailing blank lines", "x\n\nKey: v\n\n\n", []trailer{{"Key", "v"}}},
		{"space before colon", "x\n\nKey : v\n", []trailer{{"Key", "v"}}},
		{"one line is prose", "x\n\nKey: v\nnot a trailer\n", nil},
		{"bad key", "x\n\nmy key: v\n", nil},
		{"empty value", "x\n\nKey:\n", []trailer{{"Key", ""}}},
		{"CRLF", "x\r\n\r\nKey: v\r\n", []trailer{{"Key", "v"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseTrailers(tt.msg); !slices.Equal(got, tt.want) {
				t.Fatalf("parseTrailers(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
}

// TestCompareTreeEntries checks the tree order against go-git's sorter,
// which implements git's rule, on names made to collide around '/'.
func TestCompareTreeEntries(t *testing.T) {
	alphabet := []string{"a", "b", "-", ".", "0", "~", "x", "a.b", "a-b", "ab"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		seen := map[string]bool{}
		var ents []object.TreeEntry
		for range 12 {
			name := alphabet[rng.IntN(len(alphabet))]
			if rng.IntN(2) == 0 {
				name += alphabet[rng.IntN(len(alphabet))]
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			mode := filemode.Regular
			if rng.IntN(2) == 0 {
				mode = filemode.Dir
			}
			ents = append(ents, object.TreeEntry{Name: name, Mode: mode})
		}
		got := slices.Clone(ents)
		slices.SortFunc(got, compareTreeEntries)
		want := slices.Clone(ents)
		sort.Sort(object.TreeEntrySorter(want))
		if !slices.Equal(got, want) {
			t.Fatalf("order = %v, want %v", got, want)
		}
	}
}
