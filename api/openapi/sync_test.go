package openapi

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// docPath is the checked-in document, from this package's directory.
var docPath = filepath.Join("..", "..", "docs", "openapi.json")

// TestDocumentInSync fails when docs/openapi.json is not what the route
// table and the wire types generate; `make openapi` writes it again
// (PRIMER_WRITE_OPENAPI=1).
func TestDocumentInSync(t *testing.T) {
	want := JSON()
	if os.Getenv("PRIMER_WRITE_OPENAPI") == "1" {
		if err := os.WriteFile(docPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", docPath, len(want))
		return
	}
	got, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("read %s: %v (make openapi writes it)", docPath, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not the generated document: run make openapi and commit it", docPath)
	}
}
