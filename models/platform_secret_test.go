package models

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
)

// TestPlatformSecret: a secret is made once, concurrent first callers
// agree on it, two names get two secrets, and each caller's copy is its
// own; on every dialect.
func TestPlatformSecret(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			s := d.open(t)
			ctx := t.Context()
			got := make([][]byte, 8)
			var wg sync.WaitGroup
			for i := range got {
				wg.Add(1)
				go func() {
					defer wg.Done()
					b, err := s.PlatformSecret(ctx, "test_a")
					if err != nil {
						t.Error(err)
					}
					got[i] = b
				}()
			}
			wg.Wait()
			for _, b := range got {
				if len(b) != 32 || !bytes.Equal(b, got[0]) {
					t.Fatalf("secrets %x, want one of 32 bytes", got)
				}
			}
			other, err := s.PlatformSecret(ctx, "test_b")
			if err != nil || bytes.Equal(other, got[0]) {
				t.Fatalf("second name: %x, %v; want another secret", other, err)
			}
			if _, err := s.PlatformSecret(ctx, ""); err == nil {
				t.Fatal("an empty name was accepted")
			}
			// Once read, a secret costs no statement: the model gateway
			// asks for one at every call.
			var n atomic.Int64
			if err := s.CountStatements(&n); err != nil {
				t.Fatal(err)
			}
			if again, err := s.PlatformSecret(ctx, "test_a"); err != nil || !bytes.Equal(again, got[0]) {
				t.Fatalf("read again: %x, %v; want the same secret", again, err)
			}
			if n.Load() != 0 {
				t.Errorf("reading a known secret again ran %d statements, want none", n.Load())
			}
			// A caller that writes into its copy changes no other's.
			want := bytes.Clone(got[0])
			clear(got[0])
			if again, err := s.PlatformSecret(ctx, "test_a"); err != nil || !bytes.Equal(again, want) {
				t.Fatalf("after a caller cleared its copy: %x, %v; want the secret %x", again, err, want)
			}
		})
	}
}
