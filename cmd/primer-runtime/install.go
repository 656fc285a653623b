package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// install copies the running executable to the one path it is given,
// through a temporary file and a rename, so a reader never sees half a
// binary: `primer-runtime install /primer/primer-runtime`.
func install(args []string) error {
	if len(args) != 1 || !filepath.IsAbs(args[0]) {
		return errors.New("usage: primer-runtime install /absolute/destination")
	}
	dst := args[0]
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".primer-runtime-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("copy to %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
