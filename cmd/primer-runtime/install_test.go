package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestInstallCopiesItself(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "sub", "primer-runtime")
	if err := install([]string{dst}); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	want, _ := os.ReadFile(self)
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("installed copy: %d bytes, %v; want the %d bytes of %s", len(got), err, len(want), self)
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", fi.Mode().Perm())
	}
	if err := install([]string{"relative/path"}); err == nil {
		t.Error("install to a relative path: no error")
	}
}
