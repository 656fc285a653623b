// Package kubernetestest finds the cluster the Kubernetes backend's tests
// run against (the one KUBECONFIG names), gives each test a namespace of
// its own, and makes sure the cluster has the runtime image of the test's
// primer-runtime. Outside CI a test skips with a message saying how to get
// a cluster; with CI set, a missing cluster fails it.
package kubernetestest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/backend/kubernetes"
)

// Images the tests run, built by `make images` and imported into the test
// cluster by `make test-cluster-up` (PRIMER_K8S_IMAGES).
const (
	BusyboxImage = containertest.BusyboxImage
	PythonImage  = containertest.PythonImage
)

// ClusterKubeconfig is the admin kubeconfig of the cluster deploy/k8s/cluster.sh
// runs; for it, the tests import the runtime image themselves.
const ClusterKubeconfig = "/var/lib/primer-k8s/admin.kubeconfig"

// Kubeconfig returns the kubeconfig the tests use (KUBECONFIG), skipping t
// (failing it in CI) when there is none or its cluster does not answer.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		containertest.Missing(t, "no Kubernetes cluster: set KUBECONFIG (for the test cluster: `make test-cluster-up` as root, then `export KUBECONFIG=%s`)", ClusterKubeconfig)
	}
	clusterOnce.Do(func() {
		cs, err := clientset(path)
		if err == nil {
			_, err = cs.Discovery().ServerVersion()
		}
		clusterErr = err
	})
	if clusterErr != nil {
		containertest.Missing(t, "the Kubernetes cluster of KUBECONFIG=%s does not answer (%v); start the test cluster with `make test-cluster-up`", path, clusterErr)
	}
	return path
}

var (
	clusterOnce sync.Once
	clusterErr  error
)

func clientset(path string) (*kclient.Clientset, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 100, 200
	return kclient.NewForConfig(rc)
}

// Clientset returns a client of the test cluster.
func Clientset(t testing.TB) *kclient.Clientset {
	t.Helper()
	cs, err := clientset(Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Test processes of several packages share the one cluster (go test runs
// packages in parallel). A test that disturbs the node for everyone
// (cordons it, stops its kubelet) holds the node lock exclusively, every
// other test holds it shared from its namespace on: a flock on a file
// named after the kubeconfig, so the lock goes with the process.
func nodeLock(t testing.TB, how int) {
	t.Helper()
	if exclusiveHeld.Load() {
		return // this process holds it exclusively already
	}
	path := filepath.Join(os.TempDir(), "primer-k8s-tests-"+shortHash(Kubeconfig(t))+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("node lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		t.Fatalf("node lock: %v", err)
	}
	if how == syscall.LOCK_EX {
		exclusiveHeld.Store(true)
	}
	t.Cleanup(func() {
		if how == syscall.LOCK_EX {
			exclusiveHeld.Store(false)
		}
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	})
}

var exclusiveHeld atomic.Bool

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

// Disruptive marks t as a test that disturbs the node (cordon, kubelet
// stop): it waits until no other test process uses the cluster and keeps
// them waiting until it ends. Call it before Namespace. It needs the test
// cluster of cluster.sh, whose node it may stop and start.
func Disruptive(t testing.TB) {
	t.Helper()
	if Kubeconfig(t) != ClusterKubeconfig {
		containertest.Missing(t, "this test stops and cordons the node: it runs only on the test cluster (`make test-cluster-up`, KUBECONFIG=%s)", ClusterKubeconfig)
	}
	nodeLock(t, syscall.LOCK_EX)
}

// Namespace makes a namespace for t, deleted (with everything in it) at
// cleanup.
func Namespace(t testing.TB) string {
	t.Helper()
	nodeLock(t, syscall.LOCK_SH)
	cs := Clientset(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "primer-test-" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"primer.dev/test": "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	// The service account controller must have made the namespace's
	// default account before a pod can be created there.
	for i := 0; ; i++ {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) || i > 200 {
			t.Fatalf("namespace %s: default service account: %v", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// RuntimeImage returns the runtime image of the test's primer-runtime,
// making sure the cluster has it: on the test cluster of cluster.sh the
// image is written and imported (once per test process); on another
// cluster PRIMER_TEST_K8S_RUNTIME_IMAGE must name one its nodes can pull.
func RuntimeImage(t testing.TB) string {
	t.Helper()
	if ref := os.Getenv("PRIMER_TEST_K8S_RUNTIME_IMAGE"); ref != "" {
		return ref
	}
	if Kubeconfig(t) != ClusterKubeconfig {
		containertest.Missing(t, "KUBECONFIG is not the test cluster's: set PRIMER_TEST_K8S_RUNTIME_IMAGE to a runtime image its nodes can pull (`primer runtime-image -o FILE` writes one)")
	}
	importOnce.Do(func() { importRef, importErr = importRuntime(t) })
	if importErr != nil {
		t.Fatal(importErr)
	}
	return importRef
}

var (
	importOnce sync.Once
	importRef  string
	importErr  error
)

func importRuntime(t testing.TB) (string, error) {
	bin := containertest.RuntimeBinary(t)
	ref, err := kubernetes.DefaultRuntimeImage(bin)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := kubernetes.WriteRuntimeImage(&buf, bin, ref); err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "primer-runtime-image-*.tar")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(buf.Bytes()); err != nil {
		return "", err
	}
	f.Close()
	cmd := exec.Command("bash", ClusterScript(), "import", f.Name())
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("import %s into the test cluster: %v: %s", ref, err, out)
	}
	return ref, nil
}

// ClusterScript is the path of deploy/k8s/cluster.sh.
func ClusterScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "k8s", "cluster.sh")
}

// ProviderConfig returns a provider document for namespace ns reached by
// reach (pod_ip, service or port_forward).
func ProviderConfig(t testing.TB, ns, reach string) json.RawMessage {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{
		"kind":          "kubernetes",
		"connection":    map[string]any{"kind": "kubeconfig", "path": Kubeconfig(t)},
		"namespace":     ns,
		"reachability":  map[string]any{"kind": reach},
		"runtime_image": RuntimeImage(t),
	})
	return raw
}

// Backend returns a backend on namespace ns, closed at cleanup.
func Backend(t testing.TB, ns, reach, installation string) *kubernetes.Backend {
	t.Helper()
	cfg, err := kubernetes.ParseProviderConfig(ProviderConfig(t, ns, reach))
	if err != nil {
		t.Fatal(err)
	}
	b, err := kubernetes.New(cfg, kubernetes.Options{Runtime: containertest.RuntimeBinary(t), Installation: installation, SnapshotDir: SnapshotDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// SnapshotDir returns the snapshot store of the test process's backends:
// one directory for the whole process, so a backend made again (a
// restarted platform) finds the snapshots of the one before. The tests
// delete the snapshots they take.
func SnapshotDir(t testing.TB) string {
	t.Helper()
	snapOnce.Do(func() { snapDir, snapErr = os.MkdirTemp("", "primer-k8s-snapshots-*") })
	if snapErr != nil {
		t.Fatal(snapErr)
	}
	return snapDir
}

var (
	snapOnce sync.Once
	snapDir  string
	snapErr  error
)

// Template returns a template document on image with extra fields.
func Template(image string, extra map[string]any) json.RawMessage {
	doc := map[string]any{"kind": "kubernetes", "image": image, "memory_limit": "256Mi", "cpu_limit": "1", "pvc_size": "16Mi"}
	for k, v := range extra {
		doc[k] = v
	}
	raw, _ := json.Marshal(doc)
	return raw
}

// Kubelet stops or starts the test cluster's kubelet (cluster.sh kubelet
// stop|start); pods keep running while it is stopped.
func Kubelet(t testing.TB, action string) {
	t.Helper()
	out, err := exec.Command("bash", ClusterScript(), "kubelet", action).CombinedOutput()
	if err != nil {
		t.Fatalf("cluster.sh kubelet %s: %v: %s", action, err, out)
	}
}
