package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/primerhq/primer/errs"
)

func TestReadLimited(t *testing.T) {
	tests := []struct {
		name         string
		content      int
		size, limit  int64
		wantTooLarge bool
	}{
		{"exact size", 4096, 4096, 1 << 20, false},
		{"empty", 0, 0, 10, false},
		{"reports size 0 like /proc", 3000, 0, 1 << 20, false},
		{"grew after stat", 5000, 100, 1 << 20, false},
		{"at the limit", 1024, 0, 1024, false},
		{"over the limit, size hidden", 1025, 0, 1024, true},
		{"over the limit after growing", 5000, 100, 1024, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := bytes.Repeat([]byte("x"), tt.content)
			got, err := readLimited(bytes.NewReader(content), tt.size, tt.limit)
			if tt.wantTooLarge {
				if !errs.Is(err, errs.TooLarge) {
					t.Fatalf("err = %v, want too_large", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("got %d bytes, %v; want %d", len(got), err, tt.content)
			}
		})
	}
}

func TestCleanPath(t *testing.T) {
	tests := []struct {
		in, want string
		invalid  bool
	}{
		{"", ".", false},
		{".", ".", false},
		{"a/b/../c", "a/c", false},
		{"./a//b/", "a/b", false},
		{"..", "", true},
		{"../x", "", true},
		{"a/../../x", "", true},
		{"/etc/passwd", "", true},
		{"a\x00b", "", true},
	}
	for _, tt := range tests {
		got, err := cleanPath("read", "path", tt.in)
		if tt.invalid {
			if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != "path" || !strings.HasPrefix(err.Error(), "read ") {
				t.Errorf("cleanPath(%q) = %q, %v; want invalid", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("cleanPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
