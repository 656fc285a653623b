//go:build bench

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	dnetwork "github.com/docker/docker/api/types/network"
	dclient "github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"
	"github.com/docker/go-units"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	rtclient "github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
)

// forkFiles is the shell command that gives a sandbox 100 MiB of changed
// files in dir: 100 files of 1 MiB.
func forkFiles(dir string) string {
	return "mkdir -p " + dir + " && for i in $(seq 1 100); do head -c 1048576 /dev/urandom > " + dir + "/f$i; done"
}

// TestBenchSnapshot measures issue 25's fork and pause targets on Docker at
// the backend (what the workflow's activities call), beside the engine
// driven directly in the same run:
//
//   - fork 8 from a workspace with 100 MiB of changed files until all 8
//     answer an exec, against `docker commit` of a container with the same
//     files in its root filesystem and 8 `docker run` + `docker exec true`
//     at once;
//   - resume of a paused workspace to its first exec, against `docker
//     start` + `docker exec true` of a stopped container (pause itself is
//     shown beside `docker stop`).
func TestBenchSnapshot(t *testing.T) {
	requireBench(t)
	e := containertest.Known()[0]
	containertest.Require(t, e)
	ctx := ctxT(t, 20*time.Minute)
	b := containertest.Backend(t, e)
	cli := b.Client()
	tmpl := []byte(`{"kind":"container","image":"` + containertest.BusyboxImage + `"}`)
	// This run's raw objects carry its own name, so two runs at once
	// (two benches on one engine) neither collide nor remove each other's.
	run := fmt.Sprintf("%s%d-", rawPrefix, time.Now().UnixNano())
	t.Cleanup(func() { rawCleanup(cli, run) })

	provision := func(req backend.ProvisionRequest) (backend.Handle, *rtclient.Client, error) {
		h, err := b.Provision(ctx, req)
		if err != nil {
			return h, nil, err
		}
		c, err := runtimeOf(ctx, b, h, req.Token)
		return h, c, err
	}
	destroy := func(h backend.Handle) {
		if err := b.Destroy(context.WithoutCancel(ctx), h); err != nil {
			t.Errorf("destroy %s: %v", h.WorkspaceID, err)
		}
	}

	// The source: a workspace with 100 MiB of changed files.
	src, sc, err := provision(backend.ProvisionRequest{WorkspaceID: backendtest.NewID(t), Template: tmpl, Token: backendtest.NewToken(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer destroy(src)
	if err := execOK(ctx, sc, forkFiles("changed")); err != nil {
		t.Fatal(err)
	}
	sc.Close()
	// The same source with its workspace in its layer (storage: layer),
	// whose capture is one commit, as the raw baseline's is.
	layerTmpl := []byte(`{"kind":"container","image":"` + containertest.BusyboxImage + `","storage":"layer"}`)
	lsrc, lc, err := provision(backend.ProvisionRequest{WorkspaceID: backendtest.NewID(t), Template: layerTmpl, Token: backendtest.NewToken(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer destroy(lsrc)
	if err := execOK(ctx, lc, forkFiles("changed")); err != nil {
		t.Fatal(err)
	}
	lc.Close()
	// The raw source: the same files in a plain container's root filesystem.
	rawSrc := run + "fork-src"
	if err := rawRun(ctx, cli, rawSrc, containertest.BusyboxImage); err != nil {
		t.Fatal(err)
	}
	if err := engineExec(ctx, cli, rawSrc, []string{"sh", "-c", forkFiles("/changed")}); err != nil {
		t.Fatal(err)
	}

	const n, runs = 8, 5
	var snaps, layerSnaps, rawCommits []time.Duration
	forkOf := func(src backend.Handle, tmpl []byte, snaps *[]time.Duration) (time.Duration, error) {
		start := time.Now()
		ref, err := b.Snapshot(ctx, src, backend.SnapshotRequest{SnapshotID: backendtest.NewSnapshotID(t), Mode: backend.SnapshotFilesystem})
		if err != nil {
			return 0, err
		}
		*snaps = append(*snaps, time.Since(start))
		defer b.DeleteSnapshot(context.WithoutCancel(ctx), ref)
		hs, errList := make([]backend.Handle, n), make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				var c *rtclient.Client
				hs[i], c, errList[i] = provision(backend.ProvisionRequest{WorkspaceID: backendtest.NewID(t), Template: tmpl, Token: backendtest.NewToken(t), Snapshot: &ref})
				if errList[i] == nil {
					errList[i] = execOK(ctx, c, "test -s changed/f100")
					c.Close()
				}
			})
		}
		wg.Wait()
		d := time.Since(start)
		for i := range n {
			if hs[i].WorkspaceID != "" {
				defer destroy(hs[i])
			}
			if errList[i] != nil {
				return 0, errList[i]
			}
		}
		return d, nil
	}
	fork := func() (time.Duration, error) { return forkOf(src, tmpl, &snaps) }
	forkLayer := func() (time.Duration, error) { return forkOf(lsrc, layerTmpl, &layerSnaps) }
	// A second raw baseline starts its containers as a workspace's start
	// asks the engine to: on a user bridge network with the runtime's
	// port published. It shows what of the fork's time is the engine's
	// for that network setup, which `docker run` on the default bridge
	// without a port does not ask for.
	rawNet := run + "net"
	if _, err := cli.NetworkCreate(ctx, rawNet, dnetwork.CreateOptions{Driver: "bridge"}); err != nil {
		t.Fatal(err)
	}
	var rawNetForks []time.Duration
	rawFork := func() (time.Duration, error) { return rawForkOn(ctx, cli, rawSrc, n, "", &rawCommits) }
	rawForkNet := func() (time.Duration, error) { return rawForkOn(ctx, cli, rawSrc, n, rawNet, nil) }
	var forks, layerForks, rawForks []time.Duration
	for range runs {
		forks = append(forks, timeOwn(t, 1, fork)...)
		layerForks = append(layerForks, timeOwn(t, 1, forkLayer)...)
		rawForks = append(rawForks, timeOwn(t, 1, rawFork)...)
		rawNetForks = append(rawNetForks, timeOwn(t, 1, rawForkNet)...)
	}

	// Pause and resume, ours and raw taking turns.
	token := backendtest.NewToken(t)
	pw, pc, err := provision(backend.ProvisionRequest{WorkspaceID: backendtest.NewID(t), Template: tmpl, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer destroy(pw)
	pc.Close()
	rawP := run + "pause"
	if err := rawRun(ctx, cli, rawP, containertest.BusyboxImage); err != nil {
		t.Fatal(err)
	}
	// The second raw container starts as a workspace's does: on a user
	// network with a port published.
	rawPN := run + "pause-net"
	if err := rawRunOn(ctx, cli, rawPN, containertest.BusyboxImage, rawNet); err != nil {
		t.Fatal(err)
	}
	var pauses, resumes, rawStops, rawStarts, rawNetStarts []time.Duration
	for range 10 {
		start := time.Now()
		h, err := b.Pause(ctx, pw, backend.SnapshotFilesystem)
		if err != nil {
			t.Fatal(err)
		}
		pauses = append(pauses, time.Since(start))
		start = time.Now()
		if pw, err = b.Resume(ctx, h, token, nil); err != nil {
			t.Fatal(err)
		}
		c, err := runtimeOf(ctx, b, pw, token)
		if err == nil {
			err = execOK(ctx, c, "true")
			c.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		resumes = append(resumes, time.Since(start))

		start = time.Now()
		timeout := 10
		if err := cli.ContainerStop(ctx, rawP, dcontainer.StopOptions{Timeout: &timeout}); err != nil {
			t.Fatal(err)
		}
		rawStops = append(rawStops, time.Since(start))
		start = time.Now()
		if err := cli.ContainerStart(ctx, rawP, dcontainer.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := engineExec(ctx, cli, rawP, []string{"true"}); err != nil {
			t.Fatal(err)
		}
		rawStarts = append(rawStarts, time.Since(start))

		// Not measured: killed at once (sleep ignores SIGTERM).
		kill := 0
		if err := cli.ContainerStop(ctx, rawPN, dcontainer.StopOptions{Timeout: &kill}); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		if err := cli.ContainerStart(ctx, rawPN, dcontainer.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := engineExec(ctx, cli, rawPN, []string{"true"}); err != nil {
			t.Fatal(err)
		}
		rawNetStarts = append(rawNetStarts, time.Since(start))
	}

	rows := []row{
		{name: fmt.Sprintf("fork %d (100 MiB changed, storage: volume) to all answering exec", n), target: "(shown)", samples: forks,
			baseName: fmt.Sprintf("commit + %d x run + exec", n), baseline: rawForks},
		{name: fmt.Sprintf("fork %d, against raw on a user network with a published port", n), target: "(shown)", samples: forks,
			baseName: fmt.Sprintf("commit + %d x run (network, port) + exec", n), baseline: rawNetForks},
		{name: "of which the snapshot (commit, workspace files, commit)", target: "(shown)", samples: snaps, baseName: "commit", baseline: rawCommits},
		{name: fmt.Sprintf("fork %d of a storage: layer workspace", n), target: "<= 1.2x raw and < 3 s", samples: layerForks,
			baseName: fmt.Sprintf("commit + %d x run + exec", n), baseline: rawForks, limit: 3 * time.Second},
		{name: "of which the snapshot (one commit)", target: "(shown)", samples: layerSnaps, baseName: "commit", baseline: rawCommits},
		{name: "resume to first exec", target: "p50 < 1 s", samples: resumes, baseName: "start + exec", baseline: rawStarts, limit: time.Second},
		{name: "resume, against raw on a user network with a published port", target: "(shown)", samples: resumes, baseName: "start (network, port) + exec", baseline: rawNetStarts},
		{name: "pause", target: "(shown)", samples: pauses, baseName: "stop", baseline: rawStops},
	}
	printTable(t, "Snapshots, fork and pause on "+e.Name+" (backend level)", rows)
	// The target is the layer workspace's: a volume workspace's capture
	// copies the volume's files into the image as well (snapshot.go).
	ratioAtMost(t, rows[3], 1.2)
}

// runtimeOf dials the runtime of h.
func runtimeOf(ctx context.Context, b *container.Backend, h backend.Handle, token string) (*rtclient.Client, error) {
	ep, err := b.Endpoint(ctx, h, token)
	if err != nil {
		return nil, err
	}
	return rtclient.Dial(ctx, ep.URL, token)
}

// execOK runs a shell command through the runtime and wants exit 0.
func execOK(ctx context.Context, c *rtclient.Client, script string) error {
	res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}}, nil, nil)
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exec %q: exit %d: %s", script, res.ExitCode, res.Stderr)
	}
	return err
}

// rawRun creates and starts a container of img kept alive by sleep, with
// no volume: what `docker run -d img sleep` makes.
func rawRun(ctx context.Context, cli *dclient.Client, name, img string) error {
	return rawRunOn(ctx, cli, name, img, "")
}

// rawRunOn is rawRun on network (none: the default bridge), with a port
// published on 127.0.0.1 when it names one, as a workspace's is.
func rawRunOn(ctx context.Context, cli *dclient.Client, name, img, network string) error {
	cfg := &dcontainer.Config{Image: img, Entrypoint: []string{"sleep"}, Cmd: []string{"3600"}}
	hc := &dcontainer.HostConfig{Resources: dcontainer.Resources{Ulimits: []*units.Ulimit{
		{Name: "nofile", Soft: 8192, Hard: 8192},
		{Name: "nproc", Soft: 16384, Hard: 16384},
	}}}
	if network != "" {
		port := nat.Port("7777/tcp")
		cfg.ExposedPorts = nat.PortSet{port: {}}
		hc.NetworkMode = dcontainer.NetworkMode(network)
		hc.PortBindings = nat.PortMap{port: {{HostIP: "127.0.0.1"}}}
	}
	if _, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, name); err != nil {
		return fmt.Errorf("raw %s: create container: %w", name, err)
	}
	if err := cli.ContainerStart(ctx, name, dcontainer.StartOptions{}); err != nil {
		return fmt.Errorf("raw %s: start container: %w", name, err)
	}
	return nil
}

// rawForkOn commits the raw source container src and runs n containers
// of the image at once (on network, see rawRunOn) until each answers an
// engine exec; the commit's time is added to commits when given.
func rawForkOn(ctx context.Context, cli *dclient.Client, src string, n int, network string, commits *[]time.Duration) (time.Duration, error) {
	tag := fmt.Sprintf("%sfork:%d", rawPrefix, time.Now().UnixNano())
	start := time.Now()
	if _, err := cli.ContainerCommit(ctx, src, dcontainer.CommitOptions{Reference: tag, Pause: true, Config: &dcontainer.Config{}}); err != nil {
		return 0, err
	}
	if commits != nil {
		*commits = append(*commits, time.Since(start))
	}
	defer cli.ImageRemove(context.WithoutCancel(ctx), tag, image.RemoveOptions{Force: true})
	errList := make([]error, n)
	names := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		names[i] = fmt.Sprintf("%sfork-%d-%d", rawPrefix, time.Now().UnixNano(), i)
		wg.Go(func() {
			if errList[i] = rawRunOn(ctx, cli, names[i], tag, network); errList[i] == nil {
				errList[i] = engineExec(ctx, cli, names[i], []string{"test", "-s", "/changed/f100"})
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	for i := range n {
		rawRemove(ctx, cli, names[i])
		if errList[i] != nil {
			return 0, errList[i]
		}
	}
	return d, nil
}

// rawCleanup removes the raw baselines' containers and network of the run
// whose names begin with run.
func rawCleanup(cli *dclient.Client, run string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range []string{run + "fork-src", run + "pause", run + "pause-net"} {
		_ = cli.ContainerRemove(ctx, name, dcontainer.RemoveOptions{Force: true})
	}
	_ = cli.NetworkRemove(ctx, run+"net")
}
