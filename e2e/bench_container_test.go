//go:build bench

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	dclient "github.com/docker/docker/client"
	"github.com/docker/go-units"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/workflows"
)

// rawPrefix names every engine object the raw baselines make, so cleanup
// finds them all, even after a failed run.
const rawPrefix = "primer-bench-raw-"

// TestBenchContainer measures the container backend's targets on each
// engine that answers, against the same engine driven directly through its
// API (the Docker Go client, as the docker CLI uses it) in the same run:
// create to first exec, exec of `true`, a 1 MiB file both ways, and 50
// workspaces created at once.
//
// The probe interval is the production default (30 s): the workflow probes
// once right after provisioning, and that first hit is what makes a
// workspace running, so the interval does not gate creation; a short one
// would only add probe load to the 50-workspace measure.
func TestBenchContainer(t *testing.T) {
	requireBench(t)
	containertest.Each(t, func(t *testing.T, e containertest.Engine) {
		p := startPrimer(t, withContainers(t), withProbeInterval(workflows.DefaultProbeInterval))
		ctx := ctxT(t, 20*time.Minute)
		b := &bench{t: t, p: p, eng: containertest.Backend(t, e)}
		b.cli = b.eng.Client()
		t.Cleanup(b.cleanup)
		containerTemplate(t, p, e, "bb", `{"kind":"container","image":"`+containertest.BusyboxImage+`"}`)

		// 1. Create to first exec completed, ours and raw taking turns so
		// both see the same noise; removal is not timed.
		var created, createdRaw []time.Duration
		for i := range 15 {
			created = append(created, timeOwn(t, 1, func() (time.Duration, error) { return b.createToExec(ctx) })...)
			createdRaw = append(createdRaw, timeOwn(t, 1, func() (time.Duration, error) {
				name := fmt.Sprintf("%s%d-%d", rawPrefix, time.Now().UnixNano(), i)
				defer rawRemove(ctx, b.cli, name)
				start := time.Now()
				if err := rawCreate(ctx, b.cli, name); err != nil {
					return 0, err
				}
				err := engineExec(ctx, b.cli, name, []string{"true"})
				return time.Since(start), err
			})...)
		}

		// 2 and 3 run in one workspace, the engine's exec and cp in its container.
		ws := createRunning(t, p, "bb")
		b.track(ws.ID)
		ctr := container.Name(ws.ID)
		rt, err := p.srv.Runtime(ctx, ws.ID)
		if err != nil {
			t.Fatal(err)
		}
		execAPI := timeN(t, 200, apiExecTrue(ctx, p, ws.ID))
		execRT := timeN(t, 200, runtimeExecTrue(ctx, rt))
		execRaw := timeN(t, 50, func() error { return engineExec(ctx, b.cli, ctr, []string{"true"}) })

		payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		writeRT, readRT := timePair(t, 50, func() error {
			return rt.WriteFile(ctx, "bench.bin", payload, 0o644)
		}, func() error {
			got, err := rt.ReadFile(ctx, "bench.bin")
			return same(got, err, payload)
		})
		writeAPI, readAPI := timePair(t, 50, func() error {
			_, err := p.api.WriteFile(ctx, ws.ID, "bench.bin", bytes.NewReader(payload))
			return err
		}, func() error {
			got, err := p.api.ReadFile(ctx, ws.ID, "bench.bin")
			return same(got, err, payload)
		})
		writeRaw, readRaw := timePair(t, 50, func() error {
			return copyIn(ctx, b.cli, ctr, "/workspace", "bench-cp.bin", payload)
		}, func() error {
			got, err := copyOut(ctx, b.cli, ctr, "/workspace/bench-cp.bin")
			return same(got, err, payload)
		})
		b.delete(ws.ID)

		// 4. 50 workspaces at once, ours (then deleted) and raw.
		const burst = 50
		wall, running := b.createBurst(ctx, burst)
		wallRaw := rawBurst(t, ctx, b.cli, burst)
		if running != burst {
			t.Errorf("%d of %d workspaces created at once reached running", running, burst)
		}

		rows := []row{
			{name: "create to first exec (API)", target: "p50 <= 1.5x raw", samples: created, baseName: "volume+create+start+exec", baseline: createdRaw},
			{name: "exec `true` via API", target: "p50 < 5 ms, >= 20x faster", samples: execAPI, baseName: "docker exec (API)", baseline: execRaw, limit: 5 * time.Millisecond},
			{name: "exec `true` via runtime client", target: "p50 < 5 ms, >= 20x faster", samples: execRT, baseName: "docker exec (API)", baseline: execRaw, limit: 5 * time.Millisecond},
			{name: "1 MiB write via runtime client", target: "faster than docker cp", samples: writeRT, baseName: "CopyToContainer", baseline: writeRaw},
			{name: "1 MiB read via runtime client", target: "faster than docker cp", samples: readRT, baseName: "CopyFromContainer", baseline: readRaw},
			{name: "1 MiB write via API", target: "(shown: adds the HTTP hop)", samples: writeAPI, baseName: "CopyToContainer", baseline: writeRaw},
			{name: "1 MiB read via API", target: "(shown: adds the HTTP hop)", samples: readAPI, baseName: "CopyFromContainer", baseline: readRaw},
			{name: fmt.Sprintf("%d created at once to all running (wall)", burst), target: fmt.Sprintf("all %d running", burst), samples: []time.Duration{wall}, baseName: fmt.Sprintf("%d x volume+create+start", burst), baseline: []time.Duration{wallRaw}},
		}
		printTable(t, fmt.Sprintf("Container backend on %s (probe interval %s)", e.Name, workflows.DefaultProbeInterval), rows)
		printSpeedups(rows[1:7])
		ratioAtMost(t, rows[0], 1.5)
		ratioAtMost(t, rows[1], 1.0/20)
		ratioAtMost(t, rows[2], 1.0/20)
		// The target is over the runtime; the API rows add the HTTP hop from
		// the caller to the platform and are shown beside them.
		for _, r := range rows[3:5] {
			ratioAtMost(t, r, 1)
		}
		b.checkGone()
	})
}

// bench is one engine's run: the platform, the engine, and every workspace
// made, so the end can check that none left anything on the engine.
type bench struct {
	t   *testing.T
	p   *primer
	eng *container.Backend
	cli *dclient.Client

	mu  sync.Mutex
	ids []string
}

func (b *bench) track(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ids = append(b.ids, id)
}

// createToExec creates a busybox workspace through the API and runs `true`
// in it as soon as the API lets it. Exec is refused as a precondition until
// the workspace is running, so it is retried every 5 ms: one request fewer
// than waiting for running and then exec, at the same resolution. The
// workspace is deleted after the timing.
func (b *bench) createToExec(ctx context.Context) (time.Duration, error) {
	return b.createToExecOf(ctx, wire.CreateWorkspaceRequest{TemplateID: "bb"})
}

// createToExecOf is createToExec with req.
func (b *bench) createToExecOf(ctx context.Context, req wire.CreateWorkspaceRequest) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	ws, err := b.p.api.CreateWorkspace(ctx, req)
	if err != nil {
		return 0, err
	}
	b.track(ws.ID)
	defer b.delete(ws.ID)
	for {
		res, err := b.p.api.Exec(ctx, client.ExecRequest{WorkspaceID: ws.ID, Command: []string{"true"}})
		switch {
		case err == nil && res.ExitCode == 0:
			return time.Since(start), nil
		case err == nil:
			return 0, fmt.Errorf("workspace %s: exec true: exit %d", ws.ID, res.ExitCode)
		case !errs.Is(err, errs.Precondition):
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("workspace %s: first exec: %w", ws.ID, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// createBurst creates n busybox workspaces with n concurrent requests and
// waits for each to be running (WaitWorkspace, polling every 100 ms). It
// returns the wall time until the last was seen running and how many were,
// then deletes them all, untimed.
func (b *bench) createBurst(ctx context.Context, n int) (time.Duration, int) {
	ids := make([]string, n)
	var running atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws, err := b.p.api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "bb"})
			if err != nil {
				b.t.Errorf("create workspace %d of %d: %v", i+1, n, err)
				return
			}
			ids[i] = ws.ID
			b.track(ws.ID)
			if _, err := b.p.api.WaitWorkspace(ctx, ws.ID, wire.PhaseRunning, nil); err != nil {
				b.t.Errorf("workspace %d of %d: %v", i+1, n, err)
				return
			}
			running.Add(1)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	b.delete(ids...)
	return wall, int(running.Load())
}

// delete deletes the workspaces ids concurrently and waits until they are
// gone, on a context of its own so it also runs after a failure.
func (b *bench) delete(ids ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, id := range ids {
		if id == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.p.api.DeleteWorkspace(ctx, id)
			if err == nil {
				err = b.p.api.WaitGone(ctx, id, nil)
			}
			if err != nil && !errs.Is(err, errs.NotFound) {
				b.t.Errorf("delete workspace %s: %v", id, err)
			}
		}()
	}
	wg.Wait()
}

// checkGone fails the test if the engine still holds anything of a
// workspace the run made and deleted.
func (b *bench) checkGone() {
	b.mu.Lock()
	ids := slices.Clone(b.ids)
	b.mu.Unlock()
	for _, id := range ids {
		if objs := containertest.Objects(b.t, b.eng, id); len(objs) > 0 {
			b.t.Errorf("engine objects left after deleting workspace %s: %v", id, objs)
		}
	}
}

// cleanup deletes the workspaces the platform still has and every raw
// baseline object, so a failed run leaves nothing on the engine.
func (b *bench) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if list, err := b.p.api.ListWorkspaces(ctx, client.WorkspaceListOptions{}); err == nil {
		ids := make([]string, 0, len(list))
		for _, w := range list {
			ids = append(ids, w.ID)
		}
		b.delete(ids...)
	}
	byName := filters.NewArgs(filters.Arg("name", rawPrefix))
	if cs, err := b.cli.ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: byName}); err == nil {
		for _, c := range cs {
			for _, n := range c.Names {
				if name := strings.TrimPrefix(n, "/"); strings.HasPrefix(name, rawPrefix) {
					rawRemove(ctx, b.cli, name)
				}
			}
		}
	}
	if vs, err := b.cli.VolumeList(ctx, volume.ListOptions{Filters: byName}); err == nil {
		for _, v := range vs.Volumes {
			if strings.HasPrefix(v.Name, rawPrefix) {
				_ = b.cli.VolumeRemove(ctx, v.Name, true)
			}
		}
	}
}

// timeOwn runs f n times and keeps the durations f reports: f times the
// part that counts itself, so set-up and removal around it stay out.
func timeOwn(t *testing.T, n int, f func() (time.Duration, error)) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for range n {
		d, err := f()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// timePair runs a then b, n times, and times each on its own: a write and
// the read of what it wrote.
func timePair(t *testing.T, n int, a, b func() error) (as, bs []time.Duration) {
	t.Helper()
	for range n {
		as = append(as, timeN(t, 1, a)...)
		bs = append(bs, timeN(t, 1, b)...)
	}
	return as, bs
}

// printSpeedups prints how many times faster than its baseline each row's
// p50 is: the table's ratio column rounds a 30x speed-up to 0.0x.
func printSpeedups(rows []row) {
	var b strings.Builder
	fmt.Fprintln(&b, "| measure | baseline | speed-up p50 |")
	fmt.Fprintln(&b, "|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %.1fx |\n", r.name, r.baseName, float64(pct(r.baseline, .5))/float64(pct(r.samples, .5)))
	}
	fmt.Println(b.String())
}

// ratioAtMost fails t when r's p50 is over max times its baseline's p50.
func ratioAtMost(t *testing.T, r row, max float64) {
	t.Helper()
	ours, base := pct(r.samples, .5), pct(r.baseline, .5)
	if ratio := float64(ours) / float64(base); ratio > max {
		t.Errorf("%s: p50 %s is %.2fx %s's %s, target %s (at most %.2fx)", r.name, ms(ours), ratio, r.baseName, ms(base), r.target, max)
	}
}

// same returns err, or an error if a read gave back other bytes than want.
func same(got []byte, err error, want []byte) error {
	if err == nil && !bytes.Equal(got, want) {
		err = fmt.Errorf("read back %d bytes, want the %d written", len(got), len(want))
	}
	return err
}

// rawCreate is the baseline of a workspace: a volume and a container of the
// same image with the volume at /workspace, kept alive by sleep, started. It
// gets the platform's explicit ulimits, without which Podman cannot start it
// on this kind of host (setting RLIMIT_NPROC is refused), on every engine
// alike.
func rawCreate(ctx context.Context, cli *dclient.Client, name string) error {
	return rawCreateImage(ctx, cli, name, containertest.BusyboxImage)
}

// rawCreateImage is rawCreate with another image.
func rawCreateImage(ctx context.Context, cli *dclient.Client, name, image string) error {
	if _, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: name}); err != nil {
		return fmt.Errorf("raw %s: create volume: %w", name, err)
	}
	cfg := &dcontainer.Config{Image: image, Entrypoint: []string{"sleep"}, Cmd: []string{"3600"}}
	hc := &dcontainer.HostConfig{
		Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: name, Target: "/workspace"}},
		Resources: dcontainer.Resources{Ulimits: []*units.Ulimit{
			{Name: "nofile", Soft: 8192, Hard: 8192},
			{Name: "nproc", Soft: 16384, Hard: 16384},
		}},
	}
	if _, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, name); err != nil {
		return fmt.Errorf("raw %s: create container: %w", name, err)
	}
	if err := cli.ContainerStart(ctx, name, dcontainer.StartOptions{}); err != nil {
		return fmt.Errorf("raw %s: start container: %w", name, err)
	}
	return nil
}

// rawBurst makes n raw containers with n concurrent requests and returns the
// wall time until all are started; it removes them afterwards, untimed.
func rawBurst(t *testing.T, ctx context.Context, cli *dclient.Client, n int) time.Duration {
	t.Helper()
	names := make([]string, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		names[i] = fmt.Sprintf("%sburst-%d-%d", rawPrefix, time.Now().UnixNano(), i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rawCreate(ctx, cli, names[i]); err != nil {
				t.Errorf("raw burst: %v", err)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rawRemove(ctx, cli, name)
		}()
	}
	wg.Wait()
	return wall
}

// rawRemove removes a raw baseline's container and volume.
func rawRemove(ctx context.Context, cli *dclient.Client, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_ = cli.ContainerRemove(ctx, name, dcontainer.RemoveOptions{Force: true, RemoveVolumes: true})
	_ = cli.VolumeRemove(ctx, name, true)
}

// engineExec runs argv in a container the way `docker exec` does: create
// the exec, attach (which starts it), read its output to the end, then
// inspect it until the engine reports the exit.
func engineExec(ctx context.Context, cli *dclient.Client, ctr string, argv []string) error {
	ex, err := cli.ContainerExecCreate(ctx, ctr, dcontainer.ExecOptions{Cmd: argv, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return fmt.Errorf("container %s: exec create: %w", ctr, err)
	}
	att, err := cli.ContainerExecAttach(ctx, ex.ID, dcontainer.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("container %s: exec attach: %w", ctr, err)
	}
	_, err = io.Copy(io.Discard, att.Reader)
	att.Close()
	if err != nil {
		return fmt.Errorf("container %s: exec output: %w", ctr, err)
	}
	for {
		info, err := cli.ContainerExecInspect(ctx, ex.ID)
		if err != nil {
			return fmt.Errorf("container %s: exec inspect: %w", ctr, err)
		}
		if !info.Running {
			if info.ExitCode != 0 {
				return fmt.Errorf("container %s: exec %v: exit %d", ctr, argv, info.ExitCode)
			}
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

// copyIn is `docker cp` into a container: a tar of one file, extracted in dir.
func copyIn(ctx context.Context, cli *dclient.Client, ctr, dir, name string, data []byte) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Now()}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := cli.CopyToContainer(ctx, ctr, dir, &buf, dcontainer.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("container %s: copy to %s: %w", ctr, dir, err)
	}
	return nil
}

// copyOut is `docker cp` out of a container: the file at path, from the
// tar the engine sends.
func copyOut(ctx context.Context, cli *dclient.Client, ctr, path string) ([]byte, error) {
	rc, _, err := cli.CopyFromContainer(ctx, ctr, path)
	if err != nil {
		return nil, fmt.Errorf("container %s: copy from %s: %w", ctr, path, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		return nil, fmt.Errorf("container %s: copy from %s: %w", ctr, path, err)
	}
	return io.ReadAll(tr)
}
