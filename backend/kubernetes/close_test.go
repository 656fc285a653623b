package kubernetes

import (
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/primerhq/primer/errs"
)

// settleGoroutines polls until the goroutine count is at most want or the
// deadline passes, and returns the last count.
func settleGoroutines(want int, within time.Duration) int {
	deadline := time.Now().Add(within)
	n := runtime.NumGoroutine()
	for n > want && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// TestCloseStopsPortForwards gives a backend on a fake clientset live
// port-forwards (each a goroutine that runs until its stop channel closes,
// as portforward.ForwardPorts does) and closes it: every forward is
// stopped, its goroutine gone, the count back to zero, and no new forward
// is started afterwards.
func TestCloseStopsPortForwards(t *testing.T) {
	const n = 5
	before := runtime.NumGoroutine()
	b := &Backend{cfg: ProviderConfig{Namespace: "ns"}, cs: fake.NewClientset(),
		logger: slog.New(slog.DiscardHandler), forwards: map[string]*forward{}}
	for i := range n {
		f := &forward{podUID: "uid", url: "ws://127.0.0.1:1/", stop: make(chan struct{}), done: make(chan struct{})}
		go func() {
			defer close(f.done)
			<-f.stop
		}()
		b.forwards["ws-"+string(rune('a'+i))] = f
	}
	if got := b.forwardCount(); got != n {
		t.Fatalf("port-forwards before Close = %d, want %d", got, n)
	}
	if got := runtime.NumGoroutine(); got < before+n {
		t.Fatalf("goroutines with %d forwards = %d, want at least %d", n, got, before+n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := b.forwardCount(); got != 0 {
		t.Fatalf("port-forwards after Close = %d, want 0", got)
	}
	if got := settleGoroutines(before, 5*time.Second); got > before {
		t.Fatalf("goroutines after Close = %d, want at most %d as before the forwards", got, before)
	}
	// A closed backend starts no forward (nothing would stop it).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"}}
	_, err := b.forwardTo(t.Context(), "ws-a", pod)
	if !errs.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("forwardTo after Close = %v, want unavailable: backend closed", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
