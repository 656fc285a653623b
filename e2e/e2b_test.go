package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker"
)

// e2bCreated is what create.mjs prints: the new sandbox and its first
// command and file.
type e2bCreated struct {
	SandboxID   string            `json:"sandboxId"`
	TemplateID  string            `json:"templateId"`
	Metadata    map[string]string `json:"metadata"`
	State       string            `json:"state"`
	EnvdVersion string            `json:"envdVersion"`
	Stdout      string            `json:"stdout"`
	ExitCode    int               `json:"exitCode"`
	Read        string            `json:"read"`
	CreateMs    float64           `json:"createMs"`
	FirstRunMs  float64           `json:"firstRunMs"`
}

// check fails t unless c is a running sandbox of template whose first
// command ran as E2B's default user in its home.
func (c e2bCreated) check(t *testing.T, template string) {
	t.Helper()
	if c.SandboxID == "" || c.TemplateID != template || c.State != "running" || c.ExitCode != 0 ||
		c.Stdout != "hello\nuser\n/home/user\n" || c.Read != "hi from the sdk" {
		t.Errorf("create on %s = %+v; want a running sandbox whose first command printed hello, user, /home/user and whose file reads back", template, c)
	}
}

// e2bTemplate creates a provider and a python template on it for the SDK.
// The template names E2B's default user, `user`, which the runtime makes
// in the image at start (the image has none); TestE2BSDKReadme covers a
// template without one.
func e2bTemplate(t *testing.T, p *primer, ctx context.Context, e containertest.Engine, id string) {
	t.Helper()
	if _, err := p.api.CreateProvider(ctx, wire.ProviderSpec{ID: e.Name + "-e2b", Provider: "container", Config: containertest.ProviderConfig(e)}); err != nil {
		if _, gerr := p.api.GetProvider(ctx, e.Name+"-e2b"); gerr != nil {
			t.Fatalf("create provider: %v", err)
		}
	}
	doc := fmt.Sprintf(`{"kind":"container","image":%q,"user":"user","cpu_cores":1,"memory_bytes":536870912,"network":{"egress":"deny_all"}}`, containertest.PythonImage)
	if _, err := p.api.CreateTemplate(ctx, wire.TemplateSpec{ID: id, ProviderID: e.Name + "-e2b", Backend: raw(doc)}); err != nil {
		t.Fatalf("create template %s: %v", id, err)
	}
}

// e2bDeleteAll deletes what a test's sandboxes left, however it ended.
func e2bDeleteAll(t *testing.T, p *primer) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	list, err := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
	if err != nil {
		t.Logf("list workspaces to clean up: %v", err)
		return
	}
	for _, ws := range list {
		if _, err := p.api.DeleteWorkspace(ctx, ws.ID); err != nil {
			t.Logf("delete %s: %v", ws.ID, err)
		}
	}
	eventually(t, 2*time.Minute, "every workspace gone", func() bool {
		list, err := p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{})
		return err == nil && len(list) == 0
	})
}

// TestE2BSDKCreate creates a sandbox through the unmodified npm e2b SDK on
// a Docker, a Podman and a Kubernetes template, runs its first command and
// a file round trip as the SDK's default user, and kills it.
func TestE2BSDKCreate(t *testing.T) {
	e2bScriptsDir(t)
	p := startPrimer(t, withContainers(t))
	t.Cleanup(func() { e2bDeleteAll(t, p) })
	sdk := newE2BSDK(t, p, memberOf(t, p, wire.DefaultTenantID))
	for _, e := range containertest.Known() {
		t.Run(e.Name, func(t *testing.T) {
			containertest.Require(t, e)
			ctx := ctxT(t, 5*time.Minute)
			e2bTemplate(t, p, ctx, e, "e2b-"+e.Name)
			e2bCreateKill(t, ctx, sdk, "e2b-"+e.Name)
		})
	}
	t.Run("kubernetes", func(t *testing.T) {
		k := kubeProvider(t, p, "k8s-e2b", kubernetes.ReachPodIP)
		k.template(t, p, "e2b-kubernetes", string(kubernetestest.Template(kubernetestest.PythonImage, map[string]any{"user": "user"})))
		e2bCreateKill(t, ctxT(t, 5*time.Minute), sdk, "e2b-kubernetes")
	})
}

// e2bCreateKill creates a sandbox on template with the SDK, checks its
// first command, and kills it.
func e2bCreateKill(t *testing.T, ctx context.Context, sdk *e2bSDK, template string) {
	t.Helper()
	var c e2bCreated
	sdk.run(t, &c, "create", template, `{"engine":"`+template+`"}`, "300000")
	t.Logf("%s: create %.0f ms, to the first command %.0f ms", template, c.CreateMs, c.FirstRunMs)
	c.check(t, template)
	if c.Metadata["engine"] != template {
		t.Errorf("metadata = %v, want engine=%s", c.Metadata, template)
	}
	var k e2bKilled
	sdk.run(t, &k, "kill", c.SandboxID)
	k.check(t)
}

// e2bKilled is what kill.mjs prints.
type e2bKilled struct {
	Killed  bool      `json:"killed"`
	Info    sdkCaught `json:"info"`
	Connect sdkCaught `json:"connect"`
	Run     sdkCaught `json:"run"`
	Listed  bool      `json:"listed"`
	Again   bool      `json:"again"`
}

func (k e2bKilled) check(t *testing.T) {
	t.Helper()
	if !k.Killed || k.Listed || k.Again {
		t.Errorf("kill = %+v; want killed, then not listed and a second kill false", k)
	}
	k.Info.threw(t, "getInfo after kill", "SandboxNotFoundError", "NotFoundError")
	k.Connect.threw(t, "connect after kill", "SandboxNotFoundError", "NotFoundError")
	if k.Run.OK {
		t.Errorf("commands.run after kill = %+v; want an error", k.Run)
	}
}

// TestE2BSDK drives one Docker sandbox through the unmodified npm e2b SDK,
// each scenario a node program of its own (e2e/e2bsdk): commands,
// background processes reconnected from a new process, a PTY, files,
// watches, listing with metadata and pages, another tenant's view, a
// create on a pooled template, setTimeout's expiry and kill.
func TestE2BSDK(t *testing.T) {
	e2bScriptsDir(t)
	e := containertest.Known()[0]
	containertest.Require(t, e)
	p := startPrimer(t, withContainers(t), func(c *worker.Config) { c.PoolInterval = time.Second })
	ctx := ctxT(t, 15*time.Minute)
	e2bTemplate(t, p, ctx, e, "e2b")
	sdk := newE2BSDK(t, p, memberOf(t, p, wire.DefaultTenantID))
	var sbx e2bCreated
	sdk.run(t, &sbx, "create", "e2b", `{"suite":"e2b-sdk","role":"main"}`, "900000")
	sbx.check(t, "e2b")
	id := sbx.SandboxID
	t.Cleanup(func() { e2bDeleteAll(t, p) })

	t.Run("commands", func(t *testing.T) {
		var r struct {
			OK struct {
				ExitCode       int
				Stdout, Stderr string
			} `json:"ok"`
			Fail        sdkCaught `json:"fail"`
			FailIsClass bool      `json:"failIsCommandExitError"`
			Stream      struct {
				Events []struct {
					S, D string
					T    float64
				} `json:"events"`
				EndMs          float64 `json:"endMs"`
				Stdout, Stderr string
			} `json:"stream"`
			Env, Cwd, DefaultCwd, User, Root string
			RootOnly, RootCan                sdkCaught
		}
		sdk.run(t, &r, "commands", id)
		if r.OK.ExitCode != 0 || r.OK.Stdout != "out\n" || r.OK.Stderr != "err\n" {
			t.Errorf("run ok = %+v", r.OK)
		}
		r.Fail.threw(t, "run exit 7", "CommandExitError")
		if r.Fail.ExitCode == nil || *r.Fail.ExitCode != 7 || r.Fail.Stdout != "partial\n" || r.Fail.Stderr != "bad\n" {
			t.Errorf("CommandExitError = %+v; want exit code 7 with the output", r.Fail)
		}
		if !r.FailIsClass {
			t.Errorf("exit 3 did not throw an instance of CommandExitError")
		}
		var got []string
		for _, ev := range r.Stream.Events {
			got = append(got, ev.S+":"+ev.D)
		}
		if want := []string{"out:out1\n", "err:err1\n", "out:out2\n", "err:err2\n", "out:out3\n", "err:err3\n"}; !slices.Equal(got, want) {
			t.Errorf("callbacks = %q, want %q", got, want)
		} else if first, last := r.Stream.Events[0].T, r.Stream.Events[5].T; last-first < 1200 {
			// 1.5 s of pauses separate the first line from the last: a
			// buffered answer would deliver them together at the end.
			t.Errorf("the callbacks came %.0f ms apart (first at %.0f ms, end %.0f ms); want them as written, 1.5 s apart", last-first, first, r.Stream.EndMs)
		}
		if r.Stream.Stdout != "out1\nout2\nout3\n" || r.Stream.Stderr != "err1\nerr2\nerr3\n" {
			t.Errorf("streamed result = %q / %q", r.Stream.Stdout, r.Stream.Stderr)
		}
		if r.Env != "a b|c\n" || r.Cwd != "/tmp\n" || r.DefaultCwd != "/home/user\n" {
			t.Errorf("env %q, cwd %q, default cwd %q; want \"a b|c\", /tmp, /home/user", r.Env, r.Cwd, r.DefaultCwd)
		}
		user := strings.Fields(r.User)
		if len(user) != 3 || user[0] != "user" || user[1] == "0" || user[2] != "/home/user" || r.Root != "root\n0\n/root\n" {
			t.Errorf("whoami/id/HOME as the default user %q, as root %q", r.User, r.Root)
		}
		r.RootOnly.threw(t, "touch /etc/... as user", "CommandExitError")
		if !r.RootCan.OK {
			t.Errorf("touch /etc/... as root = %+v", r.RootCan)
		}
	})

	t.Run("process", func(t *testing.T) {
		var r struct {
			BgPid         int       `json:"bgPid"`
			ListedBefore  bool      `json:"listedBefore"`
			Killed        bool      `json:"killed"`
			WaitAfterKill sdkCaught `json:"waitAfterKill"`
			KillAgain     bool      `json:"killAgain"`
			Stdin         struct {
				ExitCode int
				Stdout   string
			} `json:"stdin"`
			Timeout   sdkCaught `json:"timeout"`
			TimeoutMs float64   `json:"timeoutMs"`
		}
		sdk.run(t, &r, "process", id)
		if r.BgPid == 0 || !r.ListedBefore || !r.Killed || r.KillAgain {
			t.Errorf("background = %+v; want a pid, listed, killed once, then not found", r)
		}
		if r.WaitAfterKill.OK {
			t.Errorf("wait on a killed command = %+v; want an error", r.WaitAfterKill)
		}
		if r.Stdin.ExitCode != 0 || r.Stdin.Stdout != "hello stdin\nsecond\n" {
			t.Errorf("cat with sendStdin, closeStdin = %+v", r.Stdin)
		}
		r.Timeout.threw(t, "sleep 600 with timeoutMs 1000", "TimeoutError")
		if r.TimeoutMs > 10000 {
			t.Errorf("timeoutMs 1000 ended the call after %.0f ms", r.TimeoutMs)
		}
	})

	t.Run("background", func(t *testing.T) {
		// The process that starts the command exits; a new one connects.
		gate := "/tmp/gate-" + strings.ReplaceAll(t.Name(), "/", "-")
		var started struct {
			Pid  int    `json:"pid"`
			Seen string `json:"seen"`
		}
		sdk.run(t, &started, "bgstart", id, gate)
		var r struct {
			Listed       bool      `json:"listed"`
			ConnectedPid int       `json:"connectedPid"`
			Chunks       []string  `json:"chunks"`
			End          sdkCaught `json:"end"`
		}
		sdk.run(t, &r, "bgconnect", id, fmt.Sprint(started.Pid), gate)
		if !r.Listed || r.ConnectedPid != started.Pid {
			t.Errorf("after its client exited, pid %d: listed %v, connect gave pid %d", started.Pid, r.Listed, r.ConnectedPid)
		}
		if out := strings.Join(r.Chunks, ""); out != "after\n" {
			t.Errorf("output since the connect = %q, want \"after\\n\" only", out)
		}
		r.End.threw(t, "wait on the reconnected command", "CommandExitError")
		if r.End.ExitCode == nil || *r.End.ExitCode != 5 {
			t.Errorf("reconnected command ended %+v, want exit code 5", r.End)
		}
	})

	t.Run("pty", func(t *testing.T) {
		var r struct {
			Tty, Size, Resized, Prompt, Answer string
			ExitCode                           int
		}
		sdk.run(t, &r, "pty", id)
		if !regexp.MustCompile(`^/dev/pts/\d+$`).MatchString(r.Tty) || r.Size != "24 80" || r.Resized != "40 120" ||
			r.Prompt != ">>> " || r.Answer != "42" || r.ExitCode != 0 {
			t.Errorf("pty = %+v; want a /dev/pts device, 24 80 then 40 120 after the resize, a python REPL answering 42, exit 0", r)
		}
	})

	t.Run("files", func(t *testing.T) {
		var r struct {
			Sha     string `json:"sha"`
			Written struct {
				Name, Path, Type string
			} `json:"written"`
			ReadBytes, ReadStream struct {
				Len int
				Sha string
			}
			Info struct {
				Name, Type, Path string
				Size             int
			} `json:"info"`
			Many                  []string `json:"many"`
			MadeDir, MadeDirAgain bool
			List1, List3          []string
			ExistsFile, ExistsDir bool
			ExistsMissing         bool
			Renamed               struct {
				Path, Text string
				Old        bool
			} `json:"renamed"`
			Removed                  bool
			ReadMissing, ListMissing sdkCaught
			Owners                   []string `json:"owners"`
			Signed                   struct {
				Up                                     string
				UpStatus, DownStatus, ReadWithWriteURL int
				Text                                   string
			} `json:"signed"`
		}
		sdk.run(t, &r, "files", id)
		const size = 5 << 20
		if r.Written.Path != "/tmp/big.bin" || r.Written.Name != "big.bin" || r.Written.Type != "file" {
			t.Errorf("write answered %+v", r.Written)
		}
		for what, got := range map[string]struct {
			Len int
			Sha string
		}{"multipart write, bytes read": r.ReadBytes, "octet-stream write, stream read": r.ReadStream} {
			if got.Len != size || got.Sha != r.Sha {
				t.Errorf("%s: %d bytes, sha256 %s; want %d bytes, %s", what, got.Len, got.Sha, size, r.Sha)
			}
		}
		if r.Info.Size != size || r.Info.Type != "file" || r.Info.Path != "/tmp/big.bin" {
			t.Errorf("getInfo = %+v", r.Info)
		}
		if !slices.Equal(r.Many, []string{"/tmp/tree/one.txt", "/tmp/tree/sub/two.txt"}) || !r.MadeDir || r.MadeDirAgain {
			t.Errorf("write of two files = %v; makeDir %v then %v (want true, false)", r.Many, r.MadeDir, r.MadeDirAgain)
		}
		if want := []string{"dir:/tmp/tree/sub", "file:/tmp/tree/one.txt"}; !slices.Equal(r.List1, want) {
			t.Errorf("list depth 1 = %v, want %v", r.List1, want)
		}
		if want := []string{"dir:/tmp/tree/sub", "dir:/tmp/tree/sub/deeper", "dir:/tmp/tree/sub/deeper/deepest", "file:/tmp/tree/one.txt", "file:/tmp/tree/sub/two.txt"}; !slices.Equal(r.List3, want) {
			t.Errorf("list depth 3 = %v, want %v", r.List3, want)
		}
		if !r.ExistsFile || !r.ExistsDir || r.ExistsMissing {
			t.Errorf("exists file %v, dir %v, missing %v", r.ExistsFile, r.ExistsDir, r.ExistsMissing)
		}
		if r.Renamed.Path != "/tmp/tree/sub/moved.txt" || r.Renamed.Old || r.Renamed.Text != "one" || r.Removed {
			t.Errorf("rename = %+v, removed dir still exists: %v", r.Renamed, r.Removed)
		}
		r.ReadMissing.threw(t, "read of a removed file", "FileNotFoundError")
		r.ListMissing.threw(t, "list of a missing dir", "FileNotFoundError")
		if !slices.Equal(r.Owners, []string{"root", "user"}) {
			t.Errorf("owners of files written as root and as the default user = %v", r.Owners)
		}
		if s := r.Signed; s.UpStatus != 200 || s.DownStatus != 200 || s.Text != "signed upload" || s.ReadWithWriteURL != 401 ||
			!strings.Contains(s.Up, "/files?") || strings.Contains(s.Up, "/e2b/") {
			t.Errorf("presigned URLs: %+v; want the upload and download through them (at the host's root), a read with the upload's URL 401", s)
		}
	})

	t.Run("watch", func(t *testing.T) {
		var r struct {
			Events []struct{ Name, Type string } `json:"events"`
		}
		sdk.run(t, &r, "watch", id)
		var got []string
		for _, ev := range r.Events {
			got = append(got, ev.Type+":"+ev.Name)
		}
		// A write may show as several write events; each step's first
		// event comes in the order of the steps.
		at := 0
		for _, want := range []string{"create:a.txt", "write:a.txt", "rename:a.txt", "create:b.txt", "remove:b.txt", "create:sub"} {
			i := slices.Index(got[at:], want)
			if i < 0 {
				t.Fatalf("watch events %q lack %q after index %d", got, want, at)
			}
			at += i
		}
	})

	t.Run("list", func(t *testing.T) {
		// Two more sandboxes of the suite, and one of another, then pages
		// of two filtered by the suite's metadata.
		ids := []string{id}
		for i := range 2 {
			var c e2bCreated
			sdk.run(t, &c, "create", "e2b", fmt.Sprintf(`{"suite":"e2b-sdk","role":"list-%d"}`, i), "600000")
			ids = append(ids, c.SandboxID)
		}
		var other e2bCreated
		sdk.run(t, &other, "create", "e2b", `{"suite":"other"}`, "600000")
		var r struct {
			Pages [][]struct {
				SandboxID  string            `json:"sandboxId"`
				TemplateID string            `json:"templateId"`
				Metadata   map[string]string `json:"metadata"`
				State      string            `json:"state"`
			} `json:"pages"`
		}
		sdk.run(t, &r, "list", `{"suite":"e2b-sdk"}`, "2")
		var got []string
		for _, page := range r.Pages {
			if len(page) > 2 {
				t.Errorf("page of %d sandboxes with limit 2", len(page))
			}
			for _, s := range page {
				got = append(got, s.SandboxID)
				if s.Metadata["suite"] != "e2b-sdk" || s.TemplateID != "e2b" || s.State != "running" {
					t.Errorf("listed %+v", s)
				}
			}
		}
		slices.Sort(got)
		slices.Sort(ids)
		if len(r.Pages) != 2 || !slices.Equal(got, ids) {
			t.Errorf("pages %+v; want %v in two pages", r.Pages, ids)
		}
		var k e2bKilled
		sdk.run(t, &k, "kill", other.SandboxID)
		k.check(t)
	})

	t.Run("tenant", func(t *testing.T) {
		var r struct {
			Info, Connect, SetTimeout, Kill sdkCaught
			Listed                          []string
			EnvdNoToken                     int `json:"envdNoToken"`
		}
		sdk.withKey(memberOf(t, p, "e2b-other")).run(t, &r, "tenant", id)
		r.Info.threw(t, "another tenant's getInfo", "SandboxNotFoundError", "NotFoundError")
		r.Connect.threw(t, "another tenant's connect", "SandboxNotFoundError", "NotFoundError")
		r.SetTimeout.threw(t, "another tenant's setTimeout", "SandboxNotFoundError", "NotFoundError")
		if !r.Kill.OK || string(r.Kill.Value) != "false" || len(r.Listed) != 0 {
			t.Errorf("another tenant's kill = %+v (want false: not found), list = %v (want empty)", r.Kill, r.Listed)
		}
		if r.EnvdNoToken != 401 {
			t.Errorf("envd call without the access token: %d, want 401 (whether the sandbox exists is not said)", r.EnvdNoToken)
		}
		// The sandbox is untouched.
		if ws, err := p.api.GetWorkspace(ctx, id); err != nil || ws.Phase != wire.PhaseRunning {
			t.Errorf("after another tenant's calls: %+v, %v", ws, err)
		}
	})

	t.Run("pool", func(t *testing.T) {
		e2bTemplate(t, p, ctx, e, "e2b-warm")
		if _, err := p.api.CreatePool(ctx, wire.PoolSpec{ID: "e2b-warm", TemplateID: "e2b-warm", Size: 1}); err != nil {
			t.Fatal(err)
		}
		var members []wire.Workspace
		eventually(t, 3*time.Minute, "an idle pool member", func() bool {
			pl, err := p.api.GetPool(ctx, "e2b-warm")
			if err != nil || pl.Status.Idle != 1 {
				return false
			}
			members, err = p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{PoolID: "e2b-warm", PoolState: "idle"})
			return err == nil && len(members) == 1
		})
		var c e2bCreated
		sdk.run(t, &c, "create", "e2b-warm", `{"suite":"pool"}`, "600000")
		t.Logf("pooled create %.0f ms, to the first command %.0f ms", c.CreateMs, c.FirstRunMs)
		c.check(t, "e2b-warm")
		if c.SandboxID != members[0].ID {
			t.Errorf("create on a pooled template made %s; want the idle member %s", c.SandboxID, members[0].ID)
		}
		if _, err := p.api.DeletePool(ctx, "e2b-warm"); err != nil {
			t.Error(err)
		}
		var k e2bKilled
		sdk.run(t, &k, "kill", c.SandboxID)
		k.check(t)
	})

	t.Run("lifetime", func(t *testing.T) {
		// Created to live 20 s, set to 40 s from now (later), then to 10 s
		// from now (sooner: E2B resets the timeout), then gone.
		var c e2bCreated
		sdk.run(t, &c, "create", "e2b", `{"suite":"lifetime"}`, "20000")
		var r struct {
			EndBefore   time.Time `json:"endBefore"`
			EndExtended time.Time `json:"endExtended"`
			EndAfter    time.Time `json:"endAfter"`
			SetAt       time.Time `json:"setAt"`
			ShortenedAt time.Time `json:"shortenedAt"`
			GoneAfterMs float64   `json:"goneAfterMs"`
			Info        sdkCaught `json:"info"`
		}
		sdk.run(t, &r, "lifetime", c.SandboxID, "40000", "10000")
		if d := r.EndBefore.Sub(r.SetAt); d <= 0 || d > 20*time.Second {
			t.Errorf("endAt of a sandbox created with timeoutMs 20000 is %s away", d)
		}
		if d := r.EndExtended.Sub(r.SetAt); d < 39*time.Second || d > 42*time.Second {
			t.Errorf("endAt after setTimeout(40000) is %s away", d)
		}
		if d := r.EndAfter.Sub(r.ShortenedAt); d < 9*time.Second || d > 12*time.Second {
			t.Errorf("endAt after setTimeout(10000) is %s away, want about 10 s (a shorter timeout shortens)", d)
		}
		if r.GoneAfterMs < 9000 || r.GoneAfterMs > 25000 {
			t.Errorf("the sandbox was gone %.0f ms after setTimeout(10000), want 10 s or a little more", r.GoneAfterMs)
		}
		r.Info.threw(t, "getInfo after expiry", "SandboxNotFoundError")
		t.Logf("gone %.0f ms after setTimeout(10000)", r.GoneAfterMs)
	})

	t.Run("kill", func(t *testing.T) {
		var k e2bKilled
		sdk.run(t, &k, "kill", id)
		k.check(t)
	})
}
