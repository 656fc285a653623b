package client_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// reportMedian adds the median and p90 of per-call latencies to the
// benchmark's output; ns/op is the mean, which a few slow forks skew.
func reportMedian(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*9/10].Nanoseconds()), "p90-ns")
}

func BenchmarkPing(b *testing.B) {
	e := runtimetest.Start(b, server.Config{})
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t := time.Now()
		if err := e.Client.Ping(ctx); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	reportMedian(b, lat)
}

func BenchmarkWriteRead4KiB(b *testing.B) { benchWriteRead(b, 4<<10) }

func BenchmarkWriteRead1MiB(b *testing.B) { benchWriteRead(b, 1<<20) }

func benchWriteRead(b *testing.B, size int) {
	e := runtimetest.Start(b, server.Config{})
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	lat := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(2 * len(data)))
	b.ResetTimer()
	for b.Loop() {
		t := time.Now()
		if err := e.Client.WriteFile(ctx, "bench/file", data, 0); err != nil {
			b.Fatal(err)
		}
		got, err := e.Client.ReadFile(ctx, "bench/file")
		if err != nil || len(got) != len(data) {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	reportMedian(b, lat)
}

func BenchmarkExecTrue(b *testing.B) {
	e := runtimetest.Start(b, server.Config{})
	ctx := context.Background()
	req := protocol.ExecRequest{Args: []string{"true"}}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t := time.Now()
		res, err := e.Client.Exec(ctx, req, nil, nil)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
		lat = append(lat, time.Since(t))
	}
	reportMedian(b, lat)
}

// BenchmarkExecTrueStreamed is ExecTrue with writers: the streaming path.
func BenchmarkExecTrueStreamed(b *testing.B) {
	e := runtimetest.Start(b, server.Config{})
	ctx := context.Background()
	req := protocol.ExecRequest{Args: []string{"true"}}
	var out, errb bytes.Buffer
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t := time.Now()
		res, err := e.Client.Exec(ctx, req, &out, &errb)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
		lat = append(lat, time.Since(t))
	}
	reportMedian(b, lat)
}

// BenchmarkRawExecTrue is the floor: os/exec of true in this process, with
// the same process group and pipes the runtime uses. ExecTrue minus this is
// what the protocol adds.
func BenchmarkRawExecTrue(b *testing.B) {
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t := time.Now()
		var out, errb bytes.Buffer
		c := exec.Command("true")
		c.Stdout, c.Stderr = &out, &errb
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	reportMedian(b, lat)
}

// BenchmarkStateCommitUnchanged is state.commit of a workspace of 200
// small files in 10 directories that did not change: the cost every tool
// call pays at least.
func BenchmarkStateCommitUnchanged(b *testing.B) { benchStateCommit(b, false) }

// BenchmarkStateCommitOneChanged is state.commit after one file of the 200
// changed.
func BenchmarkStateCommitOneChanged(b *testing.B) { benchStateCommit(b, true) }

func benchStateCommit(b *testing.B, change bool) {
	e := runtimetest.Start(b, server.Config{})
	ctx := context.Background()
	for i := range 200 {
		p := filepath.Join(e.Root, fmt.Sprintf("pkg%d/file%03d.go", i%10, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte('a' + i%26)}, 1024), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// Files changed within the last second are hashed again on every
	// commit (their timestamps cannot be trusted yet): measure the steady
	// state.
	time.Sleep(1100 * time.Millisecond)
	if _, err := e.Client.StateCommit(ctx, protocol.StateCommitParams{Message: "initial"}); err != nil {
		b.Fatal(err)
	}
	changed := filepath.Join(e.Root, "pkg3/file003.go")
	lat := make([]time.Duration, 0, b.N)
	n := 0
	b.ResetTimer()
	for b.Loop() {
		if change {
			n++
			if err := os.WriteFile(changed, fmt.Appendf(nil, "package pkg3 // %d\n", n), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		t := time.Now()
		res, err := e.Client.StateCommit(ctx, protocol.StateCommitParams{Message: "tool call"})
		if err != nil || change != (len(res.Changed) == 1) {
			b.Fatal(res, err)
		}
		lat = append(lat, time.Since(t))
	}
	reportMedian(b, lat)
}
