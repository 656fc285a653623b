package client_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// pattern is n bytes that differ from chunk to chunk, so a chunk written
// or read at the wrong offset shows.
func pattern(n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>19)
	}
	return b
}

// TestStreamedFiles moves files of sizes around the chunk size, and far
// over the runtime's own frame limit (1 MiB here), through WriteFileFrom
// and OpenFile: the ranged operations are bounded by the caller, not by the
// runtime's MaxFileBytes, which still bounds whole-file frames.
func TestStreamedFiles(t *testing.T) {
	const limit = 1 << 20
	e := runtimetest.Start(t, server.Config{MaxFileBytes: limit})
	ctx, c := runtimetest.Ctx(t), e.Client
	chunk := protocol.DefaultChunkBytes
	for _, tc := range []struct {
		name string
		size int64
		mode os.FileMode
	}{
		{"empty", 0, 0},
		{"one byte", 1, 0},
		{"chunk minus one", chunk - 1, 0},
		{"one chunk", chunk, 0},
		{"chunk plus one", chunk + 1, 0o600},
		{"many chunks, over the runtime limit", 7*chunk + 12345, 0o755},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := pattern(tc.size)
			p := fmt.Sprintf("dir/f%d.bin", tc.size)
			// A longer file there first: the write must end the file.
			if err := os.MkdirAll(filepath.Join(e.Root, "dir"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(e.Root, p), pattern(tc.size+3*chunk), 0o644); err != nil {
				t.Fatal(err)
			}
			fi, err := c.WriteFileFrom(ctx, p, bytes.NewReader(data), tc.size, tc.mode)
			if err != nil {
				t.Fatalf("WriteFileFrom %d bytes: %v", tc.size, err)
			}
			want := tc.mode
			if want == 0 {
				want = 0o644
			}
			if fi.Size != tc.size || fi.FileMode().Perm() != want {
				t.Errorf("WriteFileFrom: size %d mode %v, want %d %v", fi.Size, fi.FileMode().Perm(), tc.size, want)
			}
			if got, err := os.ReadFile(filepath.Join(e.Root, p)); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("on disk: %d bytes (%v), want the %d written", len(got), err, tc.size)
			}
			r, err := c.OpenFile(ctx, p)
			if err != nil {
				t.Fatalf("OpenFile: %v", err)
			}
			defer r.Close()
			if r.Size() != tc.size {
				t.Errorf("Size = %d, want %d", r.Size(), tc.size)
			}
			var got bytes.Buffer
			if _, err := io.Copy(&got, r); err != nil || !bytes.Equal(got.Bytes(), data) {
				t.Fatalf("streamed back %d bytes (%v), want the %d written", got.Len(), err, tc.size)
			}
		})
	}
	// Whole-file frames keep the runtime's limit.
	if _, err := c.ReadFile(ctx, fmt.Sprintf("dir/f%d.bin", 7*chunk+12345)); !errs.Is(err, errs.TooLarge) {
		t.Errorf("ReadFile over the runtime limit: %v, want too_large", err)
	}
}

// TestStreamedFileErrors: OpenFile reports what read reports, before any
// byte, and a file that shrinks while it streams fails the stream rather
// than ending it early as if complete.
func TestStreamedFileErrors(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx, c := runtimetest.Ctx(t), e.Client
	if err := os.Mkdir(filepath.Join(e.Root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Dir, "outside"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside", filepath.Join(e.Root, "out")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		kind errs.Kind
	}{
		{"missing", errs.NotFound},
		{"d", errs.Invalid},
		{"../outside", errs.Invalid},
		{"out", errs.Invalid},
	} {
		if _, err := c.OpenFile(ctx, tc.path); !errs.Is(err, tc.kind) {
			t.Errorf("OpenFile(%q) = %v, want %v", tc.path, err, tc.kind)
		}
	}

	size := 8 * protocol.DefaultChunkBytes
	host := filepath.Join(e.Root, "shrinks")
	if err := os.WriteFile(host, pattern(size), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := c.OpenFile(ctx, "shrinks")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// At most the first few chunks were asked for; the rest is gone.
	if err := os.Truncate(host, 4*protocol.DefaultChunkBytes); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, r)
	if !errs.Is(err, errs.Conflict) || n >= size {
		t.Errorf("stream of a shrunk file: %d bytes, %v; want a conflict before %d bytes", n, err, size)
	}
}
