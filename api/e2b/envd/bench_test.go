package envd

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"testing"

	"github.com/primerhq/primer/runtime/client"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/runtimetest"
)

// BenchmarkStartTrue is commands.run('true') through the door (a Connect
// stream over HTTP, proc.start watched to its exit) beside the runtime's
// own exec and proc.start of the same command: the difference is the
// door's cost.
func BenchmarkStartTrue(b *testing.B) {
	d := startDoorB(b)
	body := `{"process":{"cmd":"/bin/true"},"stdin":false}`
	env := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(env[1:], uint32(len(body)))
	env = append(env, body...)
	ctx := runtimetest.Ctx(b)
	b.Run("door", func(b *testing.B) {
		for b.Loop() {
			req, _ := http.NewRequest("POST", d.url+"/process.Process/Start", bytes.NewReader(env))
			req.Header.Set("Content-Type", "application/connect+json")
			req.Header.Set("Keepalive-Ping-Interval", "50")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			out, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if !bytes.Contains(out, []byte(`"end"`)) {
				b.Fatalf("%q", out)
			}
		}
	})
	b.Run("runtime exec", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.env.Client.Exec(ctx, protocol.ExecRequest{Args: []string{"/bin/true"}, User: "user"}, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("runtime proc.start", func(b *testing.B) {
		for b.Loop() {
			p, err := d.env.Client.ProcStartWatch(ctx, client.ProcRequest{Args: []string{"/bin/true"}, User: "user"}, client.StartOptions{Stdout: io.Discard, Stderr: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
