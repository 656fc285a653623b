package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kclient "k8s.io/client-go/kubernetes"

	"github.com/primerhq/primer/api/client"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/kubernetes/kubernetestest"
	"github.com/primerhq/primer/cli"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/internal/testenv"
	"github.com/primerhq/primer/models"
	"github.com/primerhq/primer/wire"
	"github.com/primerhq/primer/worker/temporalserver"
	"github.com/primerhq/primer/workflows"
)

// deployManifest is the recipe's provider and templates as a platform in
// the cluster sees them: connection in_cluster (the pods' service account,
// whose Role reaches primer-workspaces only) and reachability pod_ip. The
// runtime image is the default one, named after the image's primer-runtime.
// slow-sandbox's init keeps its provision in flight for a while.
func deployManifest() string {
	return fmt.Sprintf(`kind: workspace_provider
spec:
  id: k8s
  provider: kubernetes
  config:
    kind: kubernetes
    connection: {kind: in_cluster}
    namespace: %s
    reachability: {kind: pod_ip}
---
kind: workspace_template
spec:
  id: code-sandbox
  provider_id: k8s
  backend:
    kind: kubernetes
    image: %s
    cpu_limit: "1"
    memory_limit: 512Mi
    pvc_size: 64Mi
    network: {egress: deny_all}
---
kind: workspace_template
spec:
  id: slow-sandbox
  provider_id: k8s
  backend:
    kind: kubernetes
    image: %s
    memory_limit: 256Mi
    pvc_size: 16Mi
    init: ["sleep 8 && echo provisioned > provisioned.txt"]
`, deployWorkspacesNS, kubernetestest.PythonImage, kubernetestest.PythonImage)
}

// TestKubernetesDeploy deploys Primer itself into the test cluster with
// deploy/kubernetes/overlays/test (two API replicas, one worker, each a
// Deployment of the primer/primer image) against a real PostgreSQL and a
// real Temporal server on the node's address, and drives it through its
// Service only: the code-interpreter recipe on a Kubernetes workspace, then
// a provision whose worker pod is deleted (as by a node failure, no grace)
// while it runs: the Deployment's replacement pod carries it on and the
// workspace becomes running, with one StatefulSet and a finished init.
//
// The first admin key is made in the database before the deploy (no pod
// shares a data dir with the test); README.md of deploy/kubernetes says how
// to get it on a deploy of one's own.
func TestKubernetesDeploy(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs without -short")
	}
	began := time.Now()
	kubeconfig := onTestCluster(t)
	image := deployImages(t)
	if err := hasRoleFlag(t); err != nil {
		t.Skipf("%v: the Deployments run `primer serve --role api|worker` (issue 14); rebuild bin/primer once it has it", err)
	}
	kc := kubectl(t)
	// Like every Kubernetes test, hold the node's shared lock (taken with a
	// namespace): a disruptive test does not stop the kubelet under this one.
	kubernetestest.Namespace(t)
	cs := kubernetestest.Clientset(t)
	node := nodeAddress(t, kubeconfig)
	dbURL := testenv.PostgresURL(t)
	ctx := ctxT(t, 15*time.Minute)

	// The first admin key, in the fresh schema, before any pod starts.
	store, err := models.Open(ctx, models.Config{URL: dbURL})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.EnsureDefaults(ctx, "/var/lib/primer/workspaces"); err != nil {
		t.Fatal(err)
	}
	keyID, key, hash := models.NewAPIKey()
	if err := store.CreateAPIKey(ctx, &wire.APIKey{ID: keyID, TenantID: wire.DefaultTenantID, Role: wire.RoleAdmin, Name: "deploy test", Hash: hash}); err != nil {
		t.Fatal(err)
	}
	store.Close()

	// The pods reach PostgreSQL (on the host's loopback) through a
	// forwarder on the node's address, and a Temporal server listening
	// there.
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = forward(t, net.JoinHostPort(node, "0"), u.Host)
	podDBURL := u.String()
	tsrv, err := temporalserver.Start(ctx, temporalserver.Config{
		DataDir:          t.TempDir(),
		Host:             node,
		Port:             freePortOn(t, node),
		UIPort:           temporalserver.UIDisabled,
		SearchAttributes: workflows.SearchAttributes(),
	})
	if err != nil {
		t.Fatalf("start temporal on %s: %v", node, err)
	}
	t.Cleanup(func() { _ = tsrv.Stop() })

	// Deploy the test overlay; everything it made goes with its namespaces.
	dir := overlayCopy(t, image, podDBURL, tsrv.FrontendAddress())
	deleteNamespaces(t, cs) // what a killed run left
	t.Cleanup(func() {
		dumpLogs(t, kc, kubeconfig)
		deleteNamespaces(t, cs)
	})
	deployed := time.Now()
	runKubectl(t, kc, kubeconfig, "apply", "-k", dir)
	waitAvailable(t, cs, deployAPI, 3*time.Minute)
	waitAvailable(t, cs, deployWorker, 3*time.Minute)
	t.Logf("deployed and available in %s", time.Since(deployed).Round(100*time.Millisecond))

	svc, err := cs.CoreV1().Services(deployNamespace).Get(ctx, deployAPI, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80")
	api := client.New(base, client.WithToken(key))
	if _, err := client.New(base).ListWorkspaces(ctx, client.WorkspaceListOptions{}); !errs.Is(err, errs.Unauthenticated) {
		t.Errorf("list workspaces through the Service without a key: %v, want unauthenticated", err)
	}

	primectl := func(stdin string, args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		cctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
		defer cancel()
		code := cli.Run(cctx, append([]string{"--url", base, "--token", key}, args...), strings.NewReader(stdin), &out, &errOut)
		return out.String(), errOut.String(), code
	}

	t.Run("recipe", func(t *testing.T) {
		deployRecipe(t, ctx, cs, api, primectl)
	})
	t.Run("worker pod deleted mid-provision", func(t *testing.T) {
		deployWorkerKilled(t, ctx, cs, api)
	})
	t.Logf("TestKubernetesDeploy: %s in all", time.Since(began).Round(100*time.Millisecond))
}

// deployRecipe is the code-interpreter recipe through the Service: a
// deny_all python workspace runs a snippet, through primectl and the REST
// API, and leaves no object behind on delete.
func deployRecipe(t *testing.T, ctx context.Context, cs *kclient.Clientset, api *client.Client, primectl func(string, ...string) (string, string, int)) {
	out, errOut, code := primectl(deployManifest(), "create", "-f", "-")
	if code != 0 || !strings.Contains(out, "workspace_template/code-sandbox created") {
		t.Fatalf("create -f: code %d\n%s\n%s", code, out, errOut)
	}
	began := time.Now()
	out, errOut, code = primectl("", "create", "workspace", "--set", "template_id=code-sandbox", "--wait")
	m := regexp.MustCompile(`workspace/(ws-[0-9a-f]+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("create workspace --wait: code %d\n%s\n%s", code, out, errOut)
	}
	id := m[1]
	t.Logf("recipe workspace %s running in %s", id, time.Since(began).Round(100*time.Millisecond))

	if _, err := api.WriteFile(ctx, id, "snippet.py", strings.NewReader(snippet)); err != nil {
		t.Fatalf("write snippet.py: %v", err)
	}
	out, errOut, code = primectl("", "workspace", "exec", id, "--", "python", "snippet.py")
	if code != 0 || out != "RESULT 42\n" {
		t.Fatalf("primectl exec python snippet.py: code %d stdout %q stderr %q; want RESULT 42", code, out, errOut)
	}
	// Two API replicas behind the Service: each call may land on either.
	for i := range 4 {
		res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: id, Command: []string{"python", "snippet.py"}})
		if err != nil || res.ExitCode != 0 || res.Stdout != "RESULT 42\n" {
			t.Fatalf("API exec %d python snippet.py = %+v, %v", i, res, err)
		}
	}
	out, _, code = primectl("", "workspace", "files", "get", id, "out.txt", "--content")
	if code != 0 || strings.TrimSpace(out) != "42" {
		t.Errorf("files get out.txt --content = %q (code %d), want 42", out, code)
	}
	pod, err := cs.CoreV1().Pods(deployWorkspacesNS).Get(ctx, kubernetes.PodName(id), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the workspace's pod in %s: %v", deployWorkspacesNS, err)
	}
	if got, err := api.ReadFile(ctx, id, "sandbox_host.txt"); err != nil || string(got) != pod.Name {
		t.Errorf("sandbox_host.txt = %q, %v; want the workspace pod's name %q", got, err, pod.Name)
	}
	if got, err := api.ReadFile(ctx, id, "host_sock.txt"); err != nil || string(got) != "False" {
		t.Errorf("host_sock.txt = %q, %v; want False", got, err)
	}

	if _, _, code := primectl("", "delete", "workspace", id, "--wait"); code != 0 {
		t.Fatalf("delete workspace --wait: code %d", code)
	}
	if _, err := api.GetWorkspace(ctx, id); !errs.Is(err, errs.NotFound) {
		t.Errorf("GET after delete: %v, want not found", err)
	}
	if left := workspaceObjects(t, ctx, cs, id); len(left) > 0 {
		t.Errorf("objects of %s left after delete: %v", id, left)
	}
}

// deployWorkerKilled deletes the one worker pod, with no grace period,
// while a workspace's provision runs (its pod is up, its init sleeps): the
// Deployment's replacement takes the activity over once its heartbeat
// times out, and the workspace becomes running, made once.
func deployWorkerKilled(t *testing.T, ctx context.Context, cs *kclient.Clientset, api *client.Client) {
	ws, err := api.CreateWorkspace(ctx, wire.CreateWorkspaceRequest{TemplateID: "slow-sandbox"})
	if err != nil {
		t.Fatalf("create workspace: %v", err)
	}
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, _ = api.DeleteWorkspace(dctx, ws.ID)
	})
	// In the middle of the provision: the workspace's pod runs (the
	// activity waits for its runtime or runs its init) and it is pending.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pod, err := cs.CoreV1().Pods(deployWorkspacesNS).Get(ctx, kubernetes.PodName(ws.ID), metav1.GetOptions{})
		if err == nil && pod.Status.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workspace %s: no running pod after 3 minutes (%v)", ws.ID, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got, err := api.GetWorkspace(ctx, ws.ID); err != nil || got.Phase != wire.PhasePending {
		t.Fatalf("workspace %s before the worker is deleted = %+v, %v; want pending", ws.ID, got, err)
	}
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + deployWorker}
	pods, err := cs.CoreV1().Pods(deployNamespace).List(ctx, sel)
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("worker pods = %v, %v; want one", pods, err)
	}
	old := pods.Items[0]
	killed := time.Now()
	if err := cs.CoreV1().Pods(deployNamespace).Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatalf("delete worker pod %s: %v", old.Name, err)
	}
	t.Logf("deleted worker pod %s in the middle of %s's provision", old.Name, ws.ID)

	got := waitPhase(t, api, ws.ID, wire.PhaseRunning, 3*time.Minute)
	t.Logf("workspace %s running %s after its worker was deleted", got.ID, time.Since(killed).Round(100*time.Millisecond))

	// The replacement did it: the old pod is gone, a new one is ready.
	pods, err = cs.CoreV1().Pods(deployNamespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	var ready []string
	for _, p := range pods.Items {
		if p.UID == old.UID {
			t.Errorf("the deleted worker pod %s is still there (%s)", p.Name, p.Status.Phase)
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = append(ready, p.Name)
			}
		}
	}
	if len(ready) != 1 {
		t.Errorf("ready replacement worker pods = %v, want one", ready)
	}
	// Made once, and usable: the init finished, exec answers.
	if objs := workspaceObjects(t, ctx, cs, ws.ID); len(objs) != 3 || !strings.HasPrefix(objs[0], "statefulset/") || !strings.HasPrefix(objs[1], "pvc/") || !strings.HasPrefix(objs[2], "secret/") {
		t.Errorf("objects of %s = %v, want one StatefulSet, one volume and one secret", ws.ID, objs)
	}
	if b, err := api.ReadFile(ctx, ws.ID, "provisioned.txt"); err != nil || string(b) != "provisioned\n" {
		t.Errorf("provisioned.txt = %q, %v; want the init's output", b, err)
	}
	if res, err := api.Exec(ctx, client.ExecRequest{WorkspaceID: ws.ID, Command: []string{"echo", "ok"}}); err != nil || res.Stdout != "ok\n" {
		t.Errorf("exec echo ok = %+v, %v", res, err)
	}
}

// workspaceObjects lists the StatefulSets, volumes and secrets of
// workspace id in the workspaces' namespace.
func workspaceObjects(t *testing.T, ctx context.Context, cs *kclient.Clientset, id string) []string {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: kubernetes.LabelWorkspace + "=" + id}
	var names []string
	sets, err := cs.AppsV1().StatefulSets(deployWorkspacesNS).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets.Items {
		names = append(names, "statefulset/"+s.Name)
	}
	pvcs, err := cs.CoreV1().PersistentVolumeClaims(deployWorkspacesNS).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pvcs.Items {
		names = append(names, "pvc/"+p.Name)
	}
	secrets, err := cs.CoreV1().Secrets(deployWorkspacesNS).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		names = append(names, "secret/"+s.Name)
	}
	return names
}
