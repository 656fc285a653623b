package envd

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The requests below are what e2b@2.51.0 (@connectrpc/connect-web 2.3.0,
// JSON codec) sends, byte for byte, captured from the SDK against a
// recording server: sandbox.files.makeDir('dir'), getInfo('a.txt', {user:
// 'root'}), rename('a', 'b'), remove('b'), write('a.txt', 'hello'),
// read('a.txt'), commands.run('echo hi', {envs: {A: 'b'}, cwd: '/tmp',
// timeoutMs: 5000}), commands.list(), pty.create({cols: 80, rows: 24}).
// Changed: ListDir's absolute path is "~" (the test's home is a temporary
// directory) and the PTY runs `tty` instead of an interactive bash.
func TestSDKRequests(t *testing.T) {
	d := startDoor(t, true)
	unary := map[string]string{
		"Connect-Protocol-Version": "1",
		"Content-Type":             "application/json",
		"E2b-Sandbox-Id":           "sbx-1",
		"X-Access-Token":           "tok",
	}
	stream := map[string]string{
		"Connect-Protocol-Version": "1",
		"Content-Type":             "application/connect+json",
		"Connect-Timeout-Ms":       "5000",
		"Keepalive-Ping-Interval":  "50",
	}
	envelope := func(s string) string {
		var b [5]byte
		binary.BigEndian.PutUint32(b[1:], uint32(len(s)))
		return string(b[:]) + s
	}
	multipartBody := "------formdata-undici-021292133667\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: application/octet-stream\r\n\r\nhello\r\n------formdata-undici-021292133667--\r\n"
	cases := []struct {
		name, method, path string
		header             map[string]string
		extra              map[string]string
		body               string
		status             int
		want               []string
	}{
		{"makeDir", "POST", "/filesystem.Filesystem/MakeDir", unary, nil, `{"path":"dir"}`, 200,
			[]string{`{"entry":{"name":"dir","type":"FILE_TYPE_DIRECTORY","path":"` + d.home + `/dir"`}},
		{"write (multipart)", "POST", "/files?path=a.txt", map[string]string{"Content-Type": "multipart/form-data; boundary=----formdata-undici-021292133667"}, nil, multipartBody, 200,
			[]string{`[{"path":"` + d.home + `/a.txt","name":"a.txt","type":"file"}]`}},
		{"read", "GET", "/files?path=a.txt", nil, nil, "", 200, []string{"hello"}},
		{"getInfo as root", "POST", "/filesystem.Filesystem/Stat", unary, map[string]string{"Authorization": "Basic cm9vdDo="}, `{"path":"a.txt"}`, 404,
			[]string{`"code":"not_found"`}},
		{"list", "POST", "/filesystem.Filesystem/ListDir", unary, nil, `{"path":"~","depth":2}`, 200,
			[]string{`"name":"a.txt","type":"FILE_TYPE_FILE"`, `"name":"dir","type":"FILE_TYPE_DIRECTORY"`}},
		{"rename missing", "POST", "/filesystem.Filesystem/Move", unary, nil, `{"source":"a","destination":"b"}`, 404,
			[]string{`"code":"not_found"`}},
		{"remove", "POST", "/filesystem.Filesystem/Remove", unary, nil, `{"path":"b"}`, 200, []string{`{}`}},
		{"commands.run", "POST", "/process.Process/Start", stream, nil,
			envelope(`{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"],"envs":{"A":"b"},"cwd":"/tmp"},"stdin":false}`), 200,
			[]string{`{"event":{"start":{"pid":`, `{"event":{"data":{"stdout":"aGkK"}}}`, `{"event":{"end":{"exitCode":0,"exited":true,"status":"exit status 0"}}}`, "\x02\x00\x00\x00\x02{}"}},
		{"commands.list", "POST", "/process.Process/List", unary, nil, `{}`, 200, []string{`{"processes":[]}`}},
		{"pty.create", "POST", "/process.Process/Start", stream, nil,
			envelope(`{"process":{"cmd":"/bin/sh","args":["-c","tty"],"envs":{"TERM":"xterm-256color","LANG":"C.UTF-8","LC_ALL":"C.UTF-8"}},"pty":{"size":{"cols":80,"rows":24}}}`), 200,
			[]string{`{"event":{"data":{"pty":"L2Rldi9wdHMv`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, d.url+tc.path, bytes.NewReader([]byte(tc.body)))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			for k, v := range tc.extra {
				req.Header.Set(k, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %q", res.StatusCode, tc.status, b)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Fatalf("answer %q lacks %q", b, w)
				}
			}
		})
	}
}
