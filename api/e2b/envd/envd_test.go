package envd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
	"github.com/primerhq/primer/wire"
)

// oneRuntime is Runtimes for a test: every workspace is the one runtime.
type oneRuntime struct{ c *client.Client }

func (o oneRuntime) Client(context.Context, *wire.Workspace) (*client.Client, error) { return o.c, nil }

// door is the envd handler in front of an in-process whole-filesystem
// runtime whose users' homes are under a temporary directory.
type door struct {
	url  string
	home string // the home of "user"; root's is beside it
	env  *runtimetest.Env
}

func startDoor(t *testing.T, whole bool) *door { return startDoorTB(t, whole) }

func startDoorB(b *testing.B) *door { return startDoorTB(b, true) }

func startDoorTB(t testing.TB, whole bool) *door {
	t.Helper()
	dir := t.TempDir()
	homes := filepath.Join(dir, "home")
	etc := filepath.Join(dir, "etc")
	for _, d := range []string{filepath.Join(homes, "user"), filepath.Join(homes, "root"), etc} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Both users are the test's own uid, so nothing needs privileges.
	uid, gid := os.Getuid(), os.Getgid()
	passwd := ""
	for _, u := range []string{"user", "root"} {
		passwd += u + ":x:" + itoa(uid) + ":" + itoa(gid) + "::" + filepath.Join(homes, u) + ":/bin/sh\n"
	}
	if err := os.WriteFile(filepath.Join(etc, "passwd"), []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "group"), []byte("user:x:"+itoa(gid)+":\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := protocol.FSRoot
	if whole {
		fs = protocol.FSWhole
	}
	env := runtimetest.Start(t, server.Config{FS: fs, EtcDir: etc})
	h := New(oneRuntime{env.Client}, Options{HomeDir: func(u string) string { return filepath.Join(homes, u) }})
	sb := &Sandbox{Workspace: &wire.Workspace{ID: "ws-1"}, WholeFS: whole, Backend: "local"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(WithSandbox(r.Context(), sb)))
	}))
	t.Cleanup(srv.Close)
	return &door{url: srv.URL + "/e2b/envd", home: filepath.Join(homes, "user"), env: env}
}

func itoa(n int) string { return strconv.Itoa(n) }

// unary posts body to procedure and returns the status and the body.
func (d *door) unary(t *testing.T, procedure, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", d.url+"/"+procedure, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// stream opens a server stream and returns a function reading its
// messages one by one ("end" payloads prefixed "END ").
func (d *door) stream(t *testing.T, procedure, body string, header ...string) func() string {
	t.Helper()
	env := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(env[1:], uint32(len(body)))
	env = append(env, body...)
	req, _ := http.NewRequest("POST", d.url+"/"+procedure, bytes.NewReader(env))
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("Connect-Protocol-Version", "1")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 {
		t.Fatalf("%s: status %d", procedure, res.StatusCode)
	}
	br := bufio.NewReader(res.Body)
	return func() string {
		t.Helper()
		var head [5]byte
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return "EOF"
		}
		payload := make([]byte, binary.BigEndian.Uint32(head[1:]))
		if _, err := io.ReadFull(br, payload); err != nil {
			t.Fatalf("read payload: %v", err)
		}
		if head[0]&2 != 0 {
			return "END " + string(payload)
		}
		return string(payload)
	}
}

// fields decodes a JSON object and returns its keys, sorted.
func keys(t *testing.T, s string) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not an object: %s", s)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// entryKeys are the fields of filesystem.EntryInfo the door fills (the
// proto's JSON names; symlinkTarget and metadata are optional).
var entryKeys = []string{"group", "mode", "modifiedTime", "name", "owner", "path", "permissions", "size", "type"}

func TestFilesystem(t *testing.T) {
	d := startDoor(t, true)
	h := d.home
	cases := []struct {
		name, proc, body string
		header           []string
		status           int
		want             []string // substrings of the answer
	}{
		{"make dir", "filesystem.Filesystem/MakeDir", `{"path":"d/sub"}`, nil, 200,
			[]string{`"name":"sub"`, `"type":"FILE_TYPE_DIRECTORY"`, `"path":"` + h + `/d/sub"`, `"permissions":"drwxr-xr-x"`, `"owner":"user","group":"user"`}},
		{"make dir again", "filesystem.Filesystem/MakeDir", `{"path":"` + h + `/d/sub"}`, nil, 409,
			[]string{`"code":"already_exists"`}},
		{"stat", "filesystem.Filesystem/Stat", `{"path":"~/d"}`, nil, 200,
			[]string{`"path":"` + h + `/d"`, `"mode":2147484141`}},
		{"stat missing", "filesystem.Filesystem/Stat", `{"path":"nope"}`, nil, 404,
			[]string{`"code":"not_found"`}},
		{"root's home", "filesystem.Filesystem/Stat", `{"path":""}`, []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("root:"))}, 200,
			[]string{`"path":"` + filepath.Join(filepath.Dir(h), "root") + `"`}},
		{"list", "filesystem.Filesystem/ListDir", `{"path":"d","depth":2}`, nil, 200,
			[]string{`{"entries":[{"name":"sub","type":"FILE_TYPE_DIRECTORY","path":"` + h + `/d/sub","size":"`}},
		{"list a file", "filesystem.Filesystem/ListDir", `{"path":"` + h + `/d/f"}`, nil, 404,
			[]string{`"code":"not_found"`}},
		{"move", "filesystem.Filesystem/Move", `{"source":"d/sub","destination":"e/moved"}`, nil, 200,
			[]string{`"path":"` + h + `/e/moved"`, `"name":"moved"`}},
		{"move missing", "filesystem.Filesystem/Move", `{"source":"d/sub","destination":"e/x"}`, nil, 404,
			[]string{`"code":"not_found"`}},
		{"remove", "filesystem.Filesystem/Remove", `{"path":"e"}`, nil, 200, []string{`{}`}},
		{"remove missing", "filesystem.Filesystem/Remove", `{"path":"e"}`, nil, 200, []string{`{}`}},
		{"malformed", "filesystem.Filesystem/Stat", `{"path":1}`, nil, 400, []string{`"code":"invalid_argument"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := d.unary(t, tc.proc, tc.body, tc.header...)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Fatalf("answer %s lacks %s", body, w)
				}
			}
			if status == 200 && strings.Contains(body, `"entry"`) {
				var r struct{ Entry json.RawMessage }
				_ = json.Unmarshal([]byte(body), &r)
				if got := keys(t, string(r.Entry)); !slices.Equal(got, entryKeys) {
					t.Fatalf("entry fields %v, want %v", got, entryKeys)
				}
			}
		})
	}
}

func TestSymlinkEntry(t *testing.T) {
	d := startDoor(t, true)
	if err := os.Symlink("target/dir", filepath.Join(d.home, "link")); err != nil {
		t.Fatal(err)
	}
	status, body := d.unary(t, "filesystem.Filesystem/Stat", `{"path":"link"}`)
	want := `"type":"FILE_TYPE_SYMLINK","path":"` + d.home + `/link"`
	if status != 200 || !strings.Contains(body, want) || !strings.Contains(body, `"symlinkTarget":"`+d.home+`/target/dir"`) {
		t.Fatalf("stat of a symlink: %d %s", status, body)
	}
}

func TestLocalBackendRefusesPaths(t *testing.T) {
	d := startDoor(t, false)
	status, body := d.unary(t, "filesystem.Filesystem/Stat", `{"path":"x"}`)
	if status != 400 || !strings.Contains(body, `"code":"invalid_argument"`) || !strings.Contains(body, "local backend confines paths to the workspace") {
		t.Fatalf("got %d %s", status, body)
	}
	res, err := http.Get(d.url + "/files?path=x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(string(b), "confines paths") {
		t.Fatalf("files: %d %s", res.StatusCode, b)
	}
}

func TestFiles(t *testing.T) {
	d := startDoor(t, true)
	// An octet-stream upload, as the SDK sends for streams and gzip.
	res, err := http.Post(d.url+"/files?path=up/a.bin&username=user", "application/octet-stream", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	want := `[{"path":"` + d.home + `/up/a.bin","name":"a.bin","type":"file"}]`
	if res.StatusCode != 200 || strings.TrimSpace(string(b)) != want {
		t.Fatalf("octet upload: %d %s, want %s", res.StatusCode, b, want)
	}
	// A multipart upload of two files named by their paths (no path query).
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for name, data := range map[string]string{"m/one.txt": "1", d.home + "/m/two.txt": "22"} {
		fw, _ := mw.CreateFormFile("file", name)
		_, _ = fw.Write([]byte(data))
	}
	_ = mw.Close()
	res, err = http.Post(d.url+"/files", mw.FormDataContentType(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `"path":"`+d.home+`/m/two.txt"`) || !strings.Contains(string(b), `"name":"one.txt"`) {
		t.Fatalf("multipart upload: %d %s", res.StatusCode, b)
	}
	for path, want := range map[string]string{"up/a.bin": "hello", d.home + "/m/two.txt": "22", "m/one.txt": "1"} {
		res, err := http.Get(d.url + "/files?path=" + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(b) != want || res.Header.Get("Content-Length") != itoa(len(want)) {
			t.Fatalf("download %s: %d %q (length %s), want %q", path, res.StatusCode, b, res.Header.Get("Content-Length"), want)
		}
	}
	for _, tc := range []struct {
		method, query, ctype, body string
		header                     map[string]string
		status                     int
	}{
		{"GET", "path=missing", "", "", nil, 404},
		{"GET", "path=up", "", "", nil, 400},
		{"POST", "", "application/octet-stream", "x", nil, 400},
		{"POST", "path=x", "application/octet-stream", "x", map[string]string{"X-Metadata-Owner": "me"}, 400},
		{"POST", "path=x", "text/plain", "x", nil, 400},
	} {
		req, _ := http.NewRequest(tc.method, d.url+"/files?"+tc.query, strings.NewReader(tc.body))
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var e struct {
			Message string
			Code    int
		}
		if res.StatusCode != tc.status || json.Unmarshal(b, &e) != nil || e.Code != tc.status || e.Message == "" {
			t.Errorf("%s /files?%s: %d %s, want %d with {message, code}", tc.method, tc.query, res.StatusCode, b, tc.status)
		}
	}
	res, err = http.Get(d.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 204 {
		t.Fatalf("health: %d", res.StatusCode)
	}
}

func TestWatchDir(t *testing.T) {
	d := startDoor(t, true)
	if err := os.MkdirAll(filepath.Join(d.home, "w"), 0o755); err != nil {
		t.Fatal(err)
	}
	next := d.stream(t, "filesystem.Filesystem/WatchDir", `{"path":"w","recursive":true,"includeEntry":true}`)
	if got := next(); got != `{"start":{}}` {
		t.Fatalf("first message %s", got)
	}
	if err := os.WriteFile(filepath.Join(d.home, "w", "new.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := next()
	if !strings.HasPrefix(got, `{"filesystem":{"name":"new.txt","type":"EVENT_TYPE_CREATE","entry":{"name":"new.txt","type":"FILE_TYPE_FILE","path":"`+d.home+`/w/new.txt"`) {
		t.Fatalf("event %s", got)
	}

	// The polled watcher sees the same.
	status, body := d.unary(t, "filesystem.Filesystem/CreateWatcher", `{"path":"w"}`)
	if status != 200 {
		t.Fatalf("create watcher: %d %s", status, body)
	}
	var cw CreateWatcherResponse
	_ = json.Unmarshal([]byte(body), &cw)
	if keys(t, body)[0] != "watcherId" || cw.WatcherID == "" {
		t.Fatalf("create watcher: %s", body)
	}
	if err := os.Remove(filepath.Join(d.home, "w", "new.txt")); err != nil {
		t.Fatal(err)
	}
	// The remove reaches the watcher asynchronously; the streaming watch
	// seeing it first means it was read from inotify, and the poll is
	// retried until the watcher's reader has queued it.
	for {
		got := next()
		if got == `{"filesystem":{"name":"new.txt","type":"EVENT_TYPE_REMOVE"}}` {
			break
		}
		if !strings.HasPrefix(got, `{"filesystem":`) {
			t.Fatalf("watch ended before the remove: %s", got)
		}
	}
	for i := 0; ; i++ {
		_, body = d.unary(t, "filesystem.Filesystem/GetWatcherEvents", `{"watcherId":"`+cw.WatcherID+`"}`)
		if strings.Contains(body, `{"name":"new.txt","type":"EVENT_TYPE_REMOVE"}`) {
			break
		}
		if i > 1000 || !strings.HasPrefix(body, `{"events":[`) {
			t.Fatalf("watcher events: %s", body)
		}
	}
	if status, body := d.unary(t, "filesystem.Filesystem/RemoveWatcher", `{"watcherId":"`+cw.WatcherID+`"}`); status != 200 || body != `{}` {
		t.Fatalf("remove watcher: %d %s", status, body)
	}
	if status, _ := d.unary(t, "filesystem.Filesystem/GetWatcherEvents", `{"watcherId":"`+cw.WatcherID+`"}`); status != 404 {
		t.Fatalf("a removed watcher: %d", status)
	}
}
