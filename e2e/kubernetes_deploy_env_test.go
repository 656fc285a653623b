package e2e

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/container/containertest"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
)

// What deploy/kubernetes names: the platform's namespace, the workspaces'
// namespace (the only one its Role reaches), the Deployments and the API's
// Service.
const (
	deployNamespace     = "primer"
	deployWorkspacesNS  = "primer-workspaces"
	deployAPI           = "primer-api"
	deployWorker        = "primer-worker"
	deployImageRefFile  = "bin/primer-image.ref"
	deployClusterSocket = "/var/lib/primer-k8s/containerd/containerd.sock"
)

// repoRoot is the checkout this test file is in.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// deployImages returns Primer's image (bin/primer-image.ref) after making
// sure the test cluster's containerd has it and the runtime image of
// bin/primer-runtime, which the worker in the image names by default.
// Either missing skips (fails in CI) with how to make them.
func deployImages(t *testing.T) string {
	t.Helper()
	howto := "build and import Primer's image: `make k8s-primer-image` (needs `make images` and `make test-cluster-up`; .ci/run does both)"
	b, err := os.ReadFile(filepath.Join(repoRoot(), deployImageRefFile))
	if err != nil {
		containertest.Missing(t, "no %s: %s", deployImageRefFile, howto)
	}
	ref := strings.TrimSpace(string(b))
	runtimeBin := filepath.Join(repoRoot(), "bin", "primer-runtime")
	if _, err := os.Stat(runtimeBin); err != nil {
		containertest.Missing(t, "no bin/primer-runtime: %s", howto)
	}
	out, err := exec.Command("ctr", "-a", deployClusterSocket, "-n", "k8s.io", "images", "ls", "-q").CombinedOutput()
	if err != nil {
		containertest.Missing(t, "cannot list the test cluster's images (ctr: %v: %s): %s", err, out, howto)
	}
	have := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		have[l] = true
	}
	if !have["docker.io/"+ref] {
		containertest.Missing(t, "the test cluster has no %s: %s", ref, howto)
	}
	runtimeRef, err := kubernetes.DefaultRuntimeImage(container.FindRuntimeBinary(runtimeBin))
	if err != nil {
		t.Fatal(err)
	}
	if !have["docker.io/"+runtimeRef] {
		containertest.Missing(t, "the test cluster has no runtime image %s of bin/primer-runtime: `make k8s-runtime-image`", runtimeRef)
	}
	return ref
}

// kubectl returns the kubectl on PATH or the one deploy/k8s built.
func kubectl(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	home, _ := os.UserHomeDir()
	if m, _ := filepath.Glob(filepath.Join(home, ".cache", "primer-k8s", "*", "bin", "kubectl")); len(m) > 0 {
		return m[len(m)-1]
	}
	containertest.Missing(t, "no kubectl: put one on PATH (deploy/k8s/cluster.sh up builds one into ~/.cache/primer-k8s when there is none)")
	return ""
}

// nodeAddress is the address of the test cluster's node, where pods reach
// the host: the API server's, in the kubeconfig of cluster.sh.
func nodeAddress(t *testing.T, kubeconfig string) string {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname()
}

// forward serves a TCP forwarder on addr (host:0) to target until t ends,
// and returns the address it listens on: pods reach the host's PostgreSQL,
// which listens on loopback, through it.
func forward(t *testing.T, addr, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("forwarder on %s: %v", addr, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	track := func(c net.Conn, on bool) {
		mu.Lock()
		defer mu.Unlock()
		if on {
			conns[c] = true
		} else {
			delete(conns, c)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				in.Close()
				continue
			}
			track(in, true)
			track(out, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				pipe(in, out)
				track(in, false)
				track(out, false)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// pipe copies both ways until either side ends, then closes both.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	a.Close()
	b.Close()
	<-done
}

// freePortOn returns a free TCP port on ip.
func freePortOn(t *testing.T, ip string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("free port on %s: %v", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// overlayCopy copies deploy/kubernetes to a temp dir and writes what the
// test overlay leaves to the run: database.env, temporal.env and the image
// tag. It returns the copy's overlays/test.
func overlayCopy(t *testing.T, image, databaseURL, temporalAddr string) string {
	t.Helper()
	src := filepath.Join(repoRoot(), "deploy", "kubernetes")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if strings.HasSuffix(p, ".env") {
			return nil // a hand deploy's files are not the test's
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(dst, "overlays", "test")
	kust := filepath.Join(dir, "kustomization.yaml")
	b, err := os.ReadFile(kust)
	if err != nil {
		t.Fatal(err)
	}
	repo, tag, ok := strings.Cut(image, ":")
	if !ok || repo != "primer/primer" || !strings.Contains(string(b), "newTag: dev\n") {
		t.Fatalf("image %q or overlays/test/kustomization.yaml (newTag: dev) is not what the test expects", image)
	}
	b = []byte(strings.Replace(string(b), "newTag: dev\n", "newTag: \""+tag+"\"\n", 1))
	files := map[string]string{
		"kustomization.yaml": string(b),
		"database.env":       "url=" + databaseURL + "\n",
		"temporal.env":       "PRIMER_TEMPORAL_ADDRESS=" + temporalAddr + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run runs kubectl with the test cluster's kubeconfig and returns its
// output, failing t on an error.
func runKubectl(t *testing.T, kc, kubeconfig string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, kc, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// deleteNamespaces deletes the deployment's namespaces and waits until
// they are gone, so the next run starts clean.
func deleteNamespaces(t *testing.T, cs *kclient.Clientset) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, ns := range []string{deployWorkspacesNS, deployNamespace} {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	}
	for _, ns := range []string{deployWorkspacesNS, deployNamespace} {
		for {
			_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				t.Errorf("namespace %s is still there after 2 minutes", ns)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// waitAvailable waits until every replica of Deployment name is updated
// and ready.
func waitAvailable(t *testing.T, cs *kclient.Clientset, name string, d time.Duration) *appsv1.Deployment {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var last *appsv1.Deployment
	for {
		dep, err := cs.AppsV1().Deployments(deployNamespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = dep
			want := int32(1)
			if dep.Spec.Replicas != nil {
				want = *dep.Spec.Replicas
			}
			s := dep.Status
			if s.ObservedGeneration >= dep.Generation && s.UpdatedReplicas == want && s.ReadyReplicas == want && s.Replicas == want {
				return dep
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("Deployment %s not available after %s: %+v (%v)", name, d, statusOf(last), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func statusOf(d *appsv1.Deployment) any {
	if d == nil {
		return nil
	}
	return d.Status
}

// dumpLogs logs the deployment's pods' logs when t failed: what the
// platform said is the first thing to read.
func dumpLogs(t *testing.T, kc, kubeconfig string) {
	if !t.Failed() {
		return
	}
	for _, dep := range []string{deployAPI, deployWorker} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, kc, "--kubeconfig", kubeconfig, "-n", deployNamespace, "logs", "--tail=60", "--all-containers", "--prefix", "-l", "app.kubernetes.io/name="+dep).CombinedOutput()
		cancel()
		t.Logf("logs of %s (%v):\n%s", dep, err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, kc, "--kubeconfig", kubeconfig, "get", "events", "-A", "--sort-by=.lastTimestamp").CombinedOutput()
	t.Logf("events:\n%s", tail(string(out), 40))
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// onTestCluster skips (fails in CI) unless KUBECONFIG is the test cluster
// of deploy/k8s: the test imports images into its containerd and serves
// PostgreSQL and Temporal on its node's address.
func onTestCluster(t *testing.T) string {
	t.Helper()
	kubeconfig := kubernetestest.Kubeconfig(t)
	if kubeconfig != kubernetestest.ClusterKubeconfig {
		containertest.Missing(t, "this test deploys Primer into the test cluster of deploy/k8s: `make test-cluster-up`, KUBECONFIG=%s", kubernetestest.ClusterKubeconfig)
	}
	return kubeconfig
}

// hasRoleFlag reports whether bin/primer has `serve --role` (issue 14),
// which the Deployments run.
func hasRoleFlag(t *testing.T) error {
	t.Helper()
	out, _ := exec.Command(filepath.Join(repoRoot(), "bin", "primer"), "serve", "-h").CombinedOutput()
	if !strings.Contains(string(out), "-role") {
		return errors.New("bin/primer serve has no --role flag")
	}
	return nil
}
