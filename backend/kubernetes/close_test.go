package kubernetes

import (
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/primerhq/primer/errs"
)

// finished reports whether ch is closed, without waiting.
func finished(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestCloseStopsPortForwards gives a backend on a fake clientset live
// port-forwards (each a goroutine that runs until its stop channel closes,
// as portforward.ForwardPorts does) and closes it: every forward is
// stopped, its goroutine finished by the time Close returns, the count back
// to zero, and no new forward is started afterwards. Each forward's own done
// channel is the proof, not the process's goroutine count, which other
// tests' goroutines move.
func TestCloseStopsPortForwards(t *testing.T) {
	const n = 5
	b := &Backend{cfg: ProviderConfig{Namespace: "ns"}, cs: fake.NewClientset(),
		logger: slog.New(slog.DiscardHandler), forwards: map[string]*forward{}}
	fs := make([]*forward, 0, n)
	for i := range n {
		f := &forward{podUID: "uid", url: "ws://127.0.0.1:1/", stop: make(chan struct{}), done: make(chan struct{})}
		go func() {
			defer close(f.done)
			<-f.stop
		}()
		b.forwards["ws-"+string(rune('a'+i))] = f
		fs = append(fs, f)
	}
	if got := b.forwardCount(); got != n {
		t.Fatalf("port-forwards before Close = %d, want %d", got, n)
	}
	for i, f := range fs {
		if finished(f.done) {
			t.Fatalf("forward %d finished before Close", i)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := b.forwardCount(); got != 0 {
		t.Fatalf("port-forwards after Close = %d, want 0", got)
	}
	for i, f := range fs {
		if !finished(f.done) {
			t.Fatalf("forward %d still running when Close returned", i)
		}
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
