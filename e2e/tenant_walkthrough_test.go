package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/models"
)

// TestTenantReadmeWalkthrough is issue 13's zero-step start: after a fresh
// `make run` (the real `primer serve` binary, its data in ./.data of the
// working directory) and with no key set by hand (no PRIMER_TOKEN, no
// --token, a home directory with nothing in it), the README's walkthrough
// runs with the real `primectl` binary from that working directory exactly
// as before keys existed, because primectl finds the admin key the first
// start wrote. The API itself still refuses a request without a key; the
// probes do not need one; the key file is 0600; a second start on the same
// data dir keeps the key it has.
func TestTenantReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries; run without -short")
	}
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..")
	checkMakeRun(t, repo)

	// The working directory a user runs `make run` in: bin/ and .data/.
	wd := t.TempDir()
	bin := filepath.Join(wd, "bin")
	for _, cmd := range []string{"primer", "primectl"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, cmd), "./cmd/"+cmd)
		build.Dir = repo
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", cmd, err, out)
		}
	}
	dataDir := filepath.Join(wd, ".data") // the Makefile's $(CURDIR)/.data
	home := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	url := "http://" + addr

	// Nothing of the test's own PRIMER_* settings (PRIMER_TOKEN above all)
	// or XDG directories reaches the binaries; HOME is empty.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PRIMER_") && !strings.HasPrefix(kv, "XDG_") &&
			!strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), // export PATH=$PWD/bin:$PATH
	)
	serveEnv := append(slices.Clone(env),
		"PRIMER_DATA_DIR="+dataDir,
		"PRIMER_ADDR="+addr,
		"PRIMER_TEMPORAL_PORT="+strconv.Itoa(freePort(t)),
		"PRIMER_TEMPORAL_UI_PORT="+strconv.Itoa(freePort(t)),
	)
	// The second terminal: only PRIMER_URL, since the test's port is not 8080.
	ctlEnv := append(slices.Clone(env), "PRIMER_URL="+url)

	var serveLog lockedBuffer
	// serve starts the binary and waits until it is ready; its result is
	// closed when the process has exited, and then holds how.
	type proc struct {
		cmd    *exec.Cmd
		exited chan struct{}
	}
	serve := func() proc {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "primer"), "serve")
		cmd.Dir = wd
		cmd.Env = serveEnv
		cmd.Stdout, cmd.Stderr = &serveLog, &serveLog
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := proc{cmd, make(chan struct{})}
		go func() { cmd.Wait(); close(p.exited) }()
		t.Cleanup(func() {
			select {
			case <-p.exited:
			default:
				cmd.Process.Kill()
				<-p.exited
			}
		})
		deadline := time.Now().Add(2 * time.Minute)
		for status(t, url+"/readyz", "") != http.StatusOK {
			select {
			case <-p.exited:
				t.Fatalf("primer serve exited before it was ready: %v\n%s", cmd.ProcessState, serveLog.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("primer serve not ready within 2m\n%s", serveLog.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		return p
	}
	stop := func(p proc) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.exited:
		case <-time.After(time.Minute):
			t.Fatal("primer serve did not stop within 1m of SIGTERM")
		}
		if !p.cmd.ProcessState.Success() {
			t.Fatalf("primer serve after SIGTERM: %v, want exit status 0\n%s", p.cmd.ProcessState, serveLog.String())
		}
	}
	// run runs primectl with env from the working directory and fails
	// the test unless it exits with code.
	run := func(env []string, stdin string, code int, args ...string) (stdout, stderr string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "primectl", args...) // from PATH, as the README has it
		cmd.Dir = wd
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		got := 0
		if ee, ok := err.(*exec.ExitError); ok {
			got = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("primectl %s: %v", strings.Join(args, " "), err)
		}
		if got != code {
			t.Fatalf("primectl %s: exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), got, code, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}
	// primectl is the README's walkthrough: PRIMER_URL only, must succeed.
	primectl := func(stdin string, args ...string) string {
		t.Helper()
		out, _ := run(ctlEnv, stdin, 0, args...)
		return out
	}
	// primectl uses the PATH of its own environment, not the test's.
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	srv := serve()

	// The first start wrote one admin key, readable by its user only.
	keyPath := filepath.Join(dataDir, client.AdminKeyFile)
	info, err := os.Stat(keyPath)
	if err != nil {
		t.Fatalf("admin key file: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("admin key file mode %v, want 0600", info.Mode().Perm())
	}
	key, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	keyID(t, strings.TrimSpace(string(key)))

	// Without a key the API refuses; the probes answer.
	for _, c := range []struct {
		path string
		want int
	}{
		{"/v1/workspaces", http.StatusUnauthorized},
		{"/v1/providers", http.StatusUnauthorized},
		{"/healthz", http.StatusOK},
		{"/readyz", http.StatusOK},
	} {
		if got := status(t, url+c.path, ""); got != c.want {
			t.Errorf("GET %s without a key: %d, want %d", c.path, got, c.want)
		}
	}
	if got := status(t, url+"/v1/workspaces", "Bearer "+strings.TrimSpace(string(key))); got != http.StatusOK {
		t.Errorf("GET /v1/workspaces with the admin key: %d, want 200", got)
	}

	// The README's walkthrough, line by line.
	out := primectl("", "list", "providers")
	if !regexp.MustCompile(`(?m)^local\s`).MatchString(out) {
		t.Errorf("list providers shows no local provider:\n%s", out)
	}
	out = primectl("", "list", "templates")
	if !regexp.MustCompile(`(?m)^default\s+local\s`).MatchString(out) {
		t.Errorf("list templates shows no default template on local:\n%s", out)
	}
	out = primectl("", "create", "workspace", "--set", "template_id=default", "--wait")
	m := regexp.MustCompile(`(?m)^workspace/(ws-[0-9a-f]+) created \((cold|warm, from workspace_pool/\S+)\)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("create workspace --wait printed %q, want workspace/ws-... created (cold)", out)
	}
	id := m[1]
	out = primectl("", "workspace", "exec", id, "--", "sh", "-c", "echo hello from $(pwd)")
	if !regexp.MustCompile(`^hello from /\S*` + id + "\n$").MatchString(out) {
		t.Errorf("exec printed %q, want hello from the workspace's directory", out)
	}
	primectl("print(6 * 7)\n", "workspace", "files", "put", id, "snippet.py", "-")
	if out = primectl("", "workspace", "files", "get", id, "snippet.py", "--content"); out != "print(6 * 7)\n" {
		t.Errorf("files get --content = %q", out)
	}
	if out = primectl("", "workspace", "files", "ls", id); !strings.Contains(out, "snippet.py") {
		t.Errorf("files ls shows no snippet.py:\n%s", out)
	}
	out = primectl("", "workspace", "events", id)
	for _, ev := range []string{"workspace.provisioned", "workspace.phase_changed"} {
		if !strings.Contains(out, ev) {
			t.Errorf("events show no %s:\n%s", ev, out)
		}
	}
	out = primectl("", "get", "workspace", id, "-o", "yaml")
	for _, want := range []string{"id: " + id, "phase: running", "template_id: default"} {
		if !strings.Contains(out, want) {
			t.Errorf("get -o yaml has no %q:\n%s", want, out)
		}
	}

	// "Keys and tenants": a second user gets a key of its own from the
	// admin, and sees nothing of the default tenant's with it, whether it
	// comes from PRIMER_TOKEN or from the config file.
	if out = primectl("", "tenant", "create", "team-a", "--description", "team A", "--max-workspaces", "10", "--max-cpu-cores", "16"); out != "tenant/team-a created\n" {
		t.Errorf("tenant create printed %q", out)
	}
	out, errOut := run(ctlEnv, "", 0, "apikey", "create", "--tenant", "team-a", "--role", "member", "--name", "alice", "--ttl", "90d")
	alice := strings.TrimSpace(out)
	m = regexp.MustCompile(`^apikey/(key-[0-9a-f]+) created for tenant team-a, role member\. The key below is shown only this once: store it now\.\nFor E2B's SDKs, the same key: E2B_API_KEY=(e2b_[0-9a-f]+)\n$`).FindStringSubmatch(errOut)
	aliceE2B, _ := models.E2BKey(alice)
	if aliceID, err := models.ParseAPIKey(alice); err != nil || m == nil || m[1] != aliceID || m[2] != aliceE2B || out != alice+"\n" {
		t.Fatalf("apikey create: stdout %q, stderr %q (%v); want the key alone on stdout", out, errOut, err)
	}
	aliceEnv := append(slices.Clone(ctlEnv), "PRIMER_TOKEN="+alice)
	if out, _ = run(aliceEnv, "", 0, "list", "workspaces"); strings.Contains(out, id) {
		t.Errorf("alice lists the default tenant's workspace:\n%s", out)
	}
	if _, errOut = run(aliceEnv, "", 1, "get", "workspace", id); !strings.Contains(errOut, "not found") {
		t.Errorf("alice's get of the default tenant's workspace: %q, want not found", errOut)
	}
	confDir := filepath.Join(home, ".config", "primer")
	if err := os.MkdirAll(confDir, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(confDir, "config.yaml")
	if err := os.WriteFile(conf, []byte("url: "+url+"\ntoken: "+alice+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noURL := slices.DeleteFunc(slices.Clone(ctlEnv), func(kv string) bool { return strings.HasPrefix(kv, "PRIMER_URL=") })
	run(noURL, "", 0, "list", "workspaces")
	if _, errOut = run(noURL, "", 1, "get", "workspace", id); !strings.Contains(errOut, "not found") {
		t.Errorf("get through the config file's key: %q, want not found", errOut)
	}
	if err := os.Remove(conf); err != nil {
		t.Fatal(err)
	}
	keys := primectl("", "apikey", "list")
	for _, want := range []string{keyID(t, strings.TrimSpace(string(key))), m[1], "alice", "team-a"} {
		if !strings.Contains(keys, want) {
			t.Errorf("apikey list has no %q:\n%s", want, keys)
		}
	}
	audit := primectl("", "audit")
	for _, want := range []string{"tenants.create", "apikeys.create", "workspaces.create", "workspaces.exec", "workspaces.files.update", "workspaces/" + id} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit has no %q:\n%s", want, audit)
		}
	}
	for where, text := range map[string]string{"apikey list": keys, "audit": audit, "primer serve's log": serveLog.String()} {
		for name, k := range map[string]string{"admin key": strings.TrimSpace(string(key)), "alice's key": alice} {
			if strings.Contains(text, k) || strings.Contains(text, k[strings.LastIndex(k, ".")+1:]) {
				t.Errorf("%s shows %s", where, name)
			}
		}
	}

	primectl("", "delete", "workspace", id, "--wait")
	if got := status(t, url+"/v1/workspaces/"+id, "Bearer "+strings.TrimSpace(string(key))); got != http.StatusNotFound {
		t.Errorf("GET the deleted workspace: %d, want 404", got)
	}
	if strings.Contains(serveLog.String(), strings.TrimSpace(string(key))) {
		t.Errorf("primer serve logged the admin key")
	}
	stop(srv)

	// A second start on the same data dir keeps the key: same file, same
	// bytes, and it still works.
	srv = serve()
	info2, err := os.Stat(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	key2, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(key, key2) || !info2.ModTime().Equal(info.ModTime()) || info2.Mode() != info.Mode() {
		t.Errorf("the second start changed admin.key (mtime %s -> %s, same bytes %v)", info.ModTime(), info2.ModTime(), bytes.Equal(key, key2))
	}
	if out = primectl("", "list", "workspaces"); strings.Contains(out, id) {
		t.Errorf("list workspaces after restart shows the deleted workspace:\n%s", out)
	}
	keyIDs := regexp.MustCompile(`key-[0-9a-f]+`)
	if out = primectl("", "apikey", "list"); !slices.Equal(keyIDs.FindAllString(out, -1), keyIDs.FindAllString(keys, -1)) {
		t.Errorf("apikey list after restart:\n%s\nbefore:\n%s", out, keys)
	}
	stop(srv)

	// The database holds exactly the admin key and alice's.
	store, err := models.Open(context.Background(), models.Config{SQLitePath: filepath.Join(dataDir, "primer.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if n, err := store.CountAPIKeys(context.Background()); err != nil || n != 2 {
		t.Errorf("api keys after two starts: %d (%v), want 2 (the first admin key and alice's)", n, err)
	}
	if strings.Contains(serveLog.String(), strings.TrimSpace(string(key))) {
		t.Errorf("primer serve logged the admin key")
	}
}

// checkMakeRun fails when the Makefile's run target no longer starts
// `primer serve` with its data in $(CURDIR)/.data, which is what
// TestTenantReadmeWalkthrough reproduces.
func checkMakeRun(t *testing.T, repo string) {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^DATA_DIR\s*\?=\s*\$\(CURDIR\)/\.data$`,
		`(?m)^run: build\n\tPRIMER_DATA_DIR=\$\$\{PRIMER_DATA_DIR:-\$\(DATA_DIR\)\} \$\(BIN\)/primer serve$`,
	} {
		if !regexp.MustCompile(re).Match(mk) {
			t.Fatalf("the Makefile's run target changed (no match for %s); update this test to start primer as `make run` does", re)
		}
	}
}

// status is the HTTP status of a GET of url, with an Authorization header
// when auth is not empty.
func status(t *testing.T, url, auth string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// lockedBuffer is a bytes.Buffer safe for a writer and readers at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
