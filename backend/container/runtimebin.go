package container

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/primerhq/primer/errs"
)

// RuntimeBinary is the static primer-runtime the backend adds to every
// workspace image, read once and kept as a ready tar stream.
type RuntimeBinary struct {
	path string

	once   sync.Once
	tar    []byte
	digest string
	err    error
}

// NewRuntimeBinary returns the binary at path, read on first use.
func NewRuntimeBinary(path string) *RuntimeBinary { return &RuntimeBinary{path: path} }

// FindRuntimeBinary returns the primer-runtime to use: explicit when set,
// else the one beside the running executable (bin/primer-runtime after
// `make build`). It does not fail when there is none: the error comes with
// the first container provision, so platforms without containers need none.
func FindRuntimeBinary(explicit string) *RuntimeBinary {
	if explicit != "" {
		return NewRuntimeBinary(explicit)
	}
	if exe, err := os.Executable(); err == nil {
		return NewRuntimeBinary(filepath.Join(filepath.Dir(exe), "primer-runtime"))
	}
	return NewRuntimeBinary("primer-runtime")
}

// Tar returns a tar stream holding .primer/primer-runtime, to extract at /.
func (r *RuntimeBinary) Tar() (io.Reader, error) {
	if err := r.load(); err != nil {
		return nil, err
	}
	return bytes.NewReader(r.tar), nil
}

// Digest returns the binary's SHA-256 in hex: runtime images are keyed by
// it, so a new platform version gets a new runtime image.
func (r *RuntimeBinary) Digest() (string, error) {
	if err := r.load(); err != nil {
		return "", err
	}
	return r.digest, nil
}

func (r *RuntimeBinary) load() error {
	r.once.Do(func() { r.tar, r.digest, r.err = r.build() })
	return r.err
}

func (r *RuntimeBinary) build() ([]byte, string, error) {
	bin, err := os.ReadFile(r.path)
	if err != nil {
		return nil, "", errs.E(errs.Invalid, "container backend: read primer-runtime at %s (build it with `make build` or set PRIMER_RUNTIME_BINARY): %w", r.path, err)
	}
	if err := checkStatic(r.path); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(bin)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: ".primer/", Mode: 0o755, ModTime: now}); err != nil {
		return nil, "", err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: ".primer/primer-runtime", Mode: 0o755, Size: int64(len(bin)), ModTime: now}); err != nil {
		return nil, "", err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, "", err
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), hex.EncodeToString(sum[:]), nil
}

// checkStatic refuses a binary that needs a dynamic loader: it would not
// start in an arbitrary image.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return errs.E(errs.Invalid, "container backend: primer-runtime at %s is not a Linux executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errs.E(errs.Invalid, "container backend: primer-runtime at %s is dynamically linked; build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}
