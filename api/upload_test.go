package api

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/primerhq/primer/wire"
)

// zeros is a body of n bytes that is never in memory whole (and has no
// length the client could announce).
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	clear(p[:k])
	z.n -= k
	return int(k), nil
}

// TestUploadSpooled checks an upload goes through a file on disk, not
// memory: an oversized body of unknown length is refused 413 while the
// server allocates far less than the limit, nothing reaches the
// workspace and no spool file is left; a body under the limit arrives
// whole, and its spool file is gone afterwards too.
func TestUploadSpooled(t *testing.T) {
	const limit = 16 << 20
	spool := t.TempDir()
	h := newHarness(t, func(c *Config) { c.MaxFileBytes = limit; c.UploadDir = spool })
	w, dir := h.runningWorkspace()
	base := "/v1/workspaces/" + w.ID + "/files/"

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h.do("PUT", base+"big", &zeros{n: limit + 8<<20}).expectError(t, 413, "too_large", "", "over the limit of 16777216 bytes")
	runtime.ReadMemStats(&after)
	// Buffering the body would allocate at least the limit (twice, growing
	// a buffer by doubling); spooling it, a few copy buffers.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > limit/4 {
		t.Errorf("an oversized upload allocated %d bytes; the body is held in memory", grew)
	}
	if _, err := os.Stat(filepath.Join(dir, "big")); !os.IsNotExist(err) {
		t.Fatalf("the oversized upload was written: %v", err)
	}

	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	h.do("PUT", base+"fits", io.MultiReader(bytes.NewReader(data))).expect(t, 200)
	if got, err := os.ReadFile(filepath.Join(dir, "fits")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("uploaded file: %d bytes (err %v), want the %d sent", len(got), err, len(data))
	}
	h.do("PUT", base+"empty", "").expect(t, 200)
	if fi, err := os.Stat(filepath.Join(dir, "empty")); err != nil || fi.Size() != 0 {
		t.Fatalf("empty upload: %v, %v", fi, err)
	}
	if left, _ := os.ReadDir(spool); len(left) != 0 {
		t.Fatalf("spool dir holds %d files after the uploads, want none", len(left))
	}
}

// The uploads here are the admin's: members may not reach into the local
// backend's workspaces, and the caps are the tenant's whatever the role.

// TestUploadCap checks a tenant's uploads in flight are capped: past the
// cap an upload is 429 naming it, with Retry-After; another tenant is not
// held; when one finishes, the next is allowed.
func TestUploadCap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxUploadsPerTenant = 1 })
	w, dir := h.runningWorkspace()
	url := h.url + "/v1/workspaces/" + w.ID + "/files/slow"

	// An upload whose body is still coming holds the tenant's one place.
	pr, pw := io.Pipe()
	// Before the harness's server closes (it waits for this request).
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) })
	req, _ := http.NewRequest("PUT", url, pr)
	req.Header.Set("Authorization", "Bearer "+h.adminKey)
	done := make(chan int, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		res.Body.Close()
		done <- res.StatusCode
	}()
	if _, err := pw.Write([]byte("first half ")); err != nil {
		t.Fatal(err)
	}
	waitCount(t, h.srv.uploads, "tenant\x00"+wire.DefaultTenantID, 1)

	r := h.do("PUT", "/v1/workspaces/"+w.ID+"/files/other", "x")
	r.expectError(t, 429, "resource_exhausted", "", "tenant default has 1 uploads in flight, the cap for one tenant")
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); !os.IsNotExist(err) {
		t.Fatal("the refused upload was written")
	}
	// A session's write tool carries a file in its body: an upload too.
	ses := h.session(w, "claude")
	h.do("POST", "/v1/sessions/"+ses.ID+"/tools/"+ToolWrite, `{"path":"tool.txt","content":"x"}`).
		expectError(t, 429, "resource_exhausted", "", "uploads in flight")
	if _, err := os.Stat(filepath.Join(dir, "tool.txt")); !os.IsNotExist(err) {
		t.Fatal("the refused tool write was written")
	}
	// A directory is not an upload.
	h.do("PUT", "/v1/workspaces/"+w.ID+"/files/d?mkdir=true", nil).expect(t, 200)

	if _, err := pw.Write([]byte("second half")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if status := <-done; status != 200 {
		t.Fatalf("the slow upload: status %d", status)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "slow")); string(got) != "first half second half" {
		t.Fatalf("slow upload wrote %q", got)
	}
	waitCount(t, h.srv.uploads, "tenant\x00"+wire.DefaultTenantID, 0)
	h.do("PUT", "/v1/workspaces/"+w.ID+"/files/other", "x").expect(t, 200)
	h.do("POST", "/v1/sessions/"+ses.ID+"/tools/"+ToolWrite, `{"path":"tool.txt","content":"x"}`).expect(t, 200)
}

// TestFilesStreamPastRuntimeLimit checks files larger than the runtime's
// own whole-frame limit (64 MiB by default) go both ways within the
// configured MaxFileBytes, and that a download streams: the server
// allocates a small part of the file's size while serving it. Over the
// configured limit, both directions are 413 naming it.
func TestFilesStreamPastRuntimeLimit(t *testing.T) {
	const limit = 100 << 20
	const size = 80 << 20 // over protocol.DefaultMaxFileBytes
	h := newHarness(t, func(c *Config) { c.MaxFileBytes = limit; c.UploadDir = t.TempDir() })
	w, dir := h.runningWorkspace()
	base := "/v1/workspaces/" + w.ID + "/files/"

	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i ^ i>>17)
	}
	h.do("PUT", base+"up.bin", data).expect(t, 200)
	if got, err := os.ReadFile(filepath.Join(dir, "up.bin")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("uploaded file: %d bytes (%v), want the %d sent", len(got), err, size)
	}

	// Holding the file would keep at least its size live; streaming keeps a
	// few chunks. The peak of the heap over the download tells them apart
	// whatever the runtime (in this process too) allocates and frees: the
	// collector runs often (10%), so garbage does not pile up to the size.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0, peak := ms.HeapAlloc, ms.HeapAlloc
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	req, _ := http.NewRequest("GET", h.url+base+"up.bin", nil)
	req.Header.Set("Authorization", "Bearer "+h.adminKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.New()
	n, err := io.Copy(sum, res.Body)
	res.Body.Close()
	close(stop)
	<-sampled
	if res.StatusCode != 200 || err != nil || n != size || res.ContentLength != size {
		t.Fatalf("GET: status %d, %d bytes of Content-Length %d, %v", res.StatusCode, n, res.ContentLength, err)
	}
	if want := sha256.Sum256(data); !bytes.Equal(sum.Sum(nil), want[:]) {
		t.Fatal("downloaded content differs from the file")
	}
	grew := int64(peak) - int64(heap0)
	t.Logf("heap peak over the download: +%d bytes (file %d)", grew, size)
	// Holding the body costs at least its size; streaming measured +5 MB
	// on a quiet machine and +21 MB in CI under -race beside the worker's
	// own allocations. Half the size keeps a wide margin on both sides.
	if grew > size/2 {
		t.Errorf("a %d byte download grew the heap by %d bytes at its peak; the file is held in memory", size, grew)
	}

	if err := os.Truncate(filepath.Join(dir, "up.bin"), limit+1); err != nil {
		t.Fatal(err)
	}
	h.do("GET", base+"up.bin", nil).expectError(t, 413, "too_large", "", "over the limit of 104857600")
	h.do("PUT", base+"over.bin", &zeros{n: limit + 1}).expectError(t, 413, "too_large", "", "over the limit of 104857600")
}
