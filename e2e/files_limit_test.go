package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/wire"
)

// patternReader delivers n bytes of a fixed pattern that differs from
// one 512 KiB chunk to the next, without holding them: a misplaced chunk
// changes the hash.
type patternReader struct{ n, off int64 }

func (r *patternReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n-r.off)]
	for i := range p {
		o := r.off + int64(i)
		p[i] = byte(o*31 ^ o>>19)
	}
	r.off += int64(len(p))
	return len(p), nil
}

// rawFiles sends a file request to a platform as curl would: the body
// streamed with its Content-Length, the admin key as bearer token.
func rawFiles(t *testing.T, base, key, method, id, path string, body io.Reader, size int64) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, base+"/v1/workspaces/"+id+"/files/"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.ContentLength = size
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return res
}

// TestFileLimitConfigured is issue 22's report as a user meets it: with
// PRIMER_MAX_FILE_BYTES=419430400 on `primer serve`, a 300 MiB file goes
// in with PUT and comes back whole with GET (compared by hash), and a PUT
// one byte over the configured limit is 413 naming 419430400. Before the
// fix the PUT was 413 "314572800 bytes is over the 67108864 byte limit":
// the runtime client and the runtime knew only their 64 MiB default.
func TestFileLimitConfigured(t *testing.T) {
	const limit = 419430400
	const size = 300 << 20
	s := startServe(t, fmt.Sprintf("PRIMER_MAX_FILE_BYTES=%d", limit))
	ctx := ctxT(t, 5*time.Minute)
	key, err := os.ReadFile(filepath.Join(s.dataDir, client.AdminKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := s.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: wire.DefaultTemplateID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil); err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(key))

	sent := sha256.New()
	res := rawFiles(t, s.url, tok, "PUT", ws.ID, "big/300.bin", io.TeeReader(&patternReader{n: size}, sent), size)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT 300 MiB under a 400 MiB limit: %d %s", res.StatusCode, body)
	}

	res = rawFiles(t, s.url, tok, "GET", ws.ID, "big/300.bin", nil, 0)
	got := sha256.New()
	n, err := io.Copy(got, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || err != nil || n != size || res.ContentLength != size {
		t.Fatalf("GET: status %d, %d bytes of Content-Length %d, %v", res.StatusCode, n, res.ContentLength, err)
	}
	if !bytes.Equal(got.Sum(nil), sent.Sum(nil)) {
		t.Fatal("GET returned other bytes than the PUT sent")
	}

	res = rawFiles(t, s.url, tok, "PUT", ws.ID, "big/over.bin", &patternReader{n: limit + 1}, limit+1)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "419430400") {
		t.Errorf("PUT one byte over the configured limit: %d %s; want 413 naming 419430400", res.StatusCode, body)
	}
	if _, err := s.api.StatFile(ctx, ws.ID, "big/over.bin"); err == nil {
		t.Error("the refused upload left a file")
	}
}
