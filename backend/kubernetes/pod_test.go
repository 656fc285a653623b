package kubernetes

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A pod the kubelet could not mount the claim for because it read the claim
// in the middle of its binding is deleted (for the StatefulSet to make
// again) once the claim is bound, and only then. The race is too rare on a
// real cluster to test there (twice in about 1,000 pods).
func TestUnstickMount(t *testing.T) {
	const ns, id = "ws-ns", "ws-1a2b"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(id), Namespace: ns, UID: "pod-uid"},
		Spec:       corev1.PodSpec{NodeName: "node-1"},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	warning := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "ev-1", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod.Name, UID: pod.UID},
		Type:           corev1.EventTypeWarning,
		Reason:         "FailedMount",
		Message:        `Unable to attach or mount volumes: unmounted volumes=[workspace]: error processing PVC ws-ns/primer-ws-1a2b: PVC is not bound`,
		LastTimestamp:  metav1.Now(),
	}
	claim := func(phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: Name(id), Namespace: ns},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: phase},
		}
	}
	other := warning.DeepCopy()
	other.Reason, other.Message = "BackOff", "Back-off restarting failed container"

	cases := []struct {
		name    string
		objects []any
		deleted bool
	}{
		{"bound now", []any{pod.DeepCopy(), warning, claim(corev1.ClaimBound)}, true},
		{"still pending", []any{pod.DeepCopy(), warning, claim(corev1.ClaimPending)}, false},
		{"another warning", []any{pod.DeepCopy(), other, claim(corev1.ClaimBound)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, o := range c.objects {
				var err error
				switch o := o.(type) {
				case *corev1.Pod:
					_, err = cs.CoreV1().Pods(ns).Create(ctx, o, metav1.CreateOptions{})
				case *corev1.Event:
					_, err = cs.CoreV1().Events(ns).Create(ctx, o, metav1.CreateOptions{})
				case *corev1.PersistentVolumeClaim:
					_, err = cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, o, metav1.CreateOptions{})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			b := &Backend{cfg: ProviderConfig{Namespace: ns}, cs: cs, logger: slog.New(slog.DiscardHandler)}
			b.unstickMount(ctx, id, pod)
			_, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != c.deleted {
				t.Errorf("pod deleted = %v (get: %v), want %v", gone, err, c.deleted)
			}
		})
	}
}

// between tells the pod states that pass by themselves (a probe then
// reports the pod that follows) from those that say why the workspace is
// down.
func TestBetween(t *testing.T) {
	now := metav1.Now()
	unschedulable := []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
	tests := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"being deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: corev1.PodSpec{NodeName: "n"}}, true},
		{"made, not yet looked at by the scheduler", corev1.Pod{}, true},
		{"unschedulable", corev1.Pod{Status: corev1.PodStatus{Conditions: unschedulable}}, false},
		{"on a node", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}}, false},
		{"being deleted while unschedulable", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Conditions: unschedulable}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := between(&tt.pod); got != tt.want {
				t.Errorf("between = %v, want %v", got, tt.want)
			}
		})
	}
}
