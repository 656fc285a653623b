// Package kubernetes is the backend whose workspaces are pods of a
// Kubernetes cluster, reached through its API server with client-go.
//
// A workspace ws-1a2b is, in the provider's namespace:
//
//   - Secret primer-ws-1a2b: the runtime token and the template's env
//     values. It is the owner of every other object below, so deleting it
//     removes the workspace whole (Kubernetes' garbage collector does the
//     rest), and the platform reads the token back from it when it
//     re-attaches.
//   - PersistentVolumeClaim primer-ws-1a2b, mounted at /workspace.
//   - StatefulSet primer-ws-1a2b of one replica, whose pod primer-ws-1a2b-0
//     runs the template's image with primer-runtime as its command. An init
//     container copies the runtime from the runtime image into an emptyDir
//     mounted at /.primer, so any image is a workspace image. The
//     StatefulSet recreates the pod when it is deleted or evicted, on the
//     same volume.
//   - Service primer-ws-1a2b (ClusterIP) when the provider reaches runtimes
//     through services, and NetworkPolicy primer-ws-1a2b for a template with
//     network.egress deny_all.
//
// A paused workspace keeps all of these with its StatefulSet scaled to 0
// (pause.go). A snapshot is a VolumeSnapshot primer-snap-<id> of the PVC
// where the cluster can take one (csi.go), or an archive of the volume in
// the platform's snapshot store (archive.go); neither is owned by the
// Secret, since a snapshot outlives its workspace.
//
// Beside them, one NetworkPolicy per tenant (TenantPolicy), made by the
// tenant's first workspace and left when its last goes, admits connections
// to a tenant's pods only from the tenant's own pods and to the runtime's
// port; the runtime's ingress firewall (--ingress=restrict) closes every
// pod to other pods but on the runtime's port, on clusters whose network
// plugin enforces no policy too.
//
// Every object carries the labels primer.dev/workspace, primer.dev/managed,
// primer.dev/tenant and primer.dev/installation. The pod runs without a service account
// token, without service links, with every capability dropped but a shell
// user's few, no privilege escalation and the runtime's default seccomp
// profile.
package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	kclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/internal/keylock"
	"github.com/primerhq/primer/backend/internal/restoring"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

// Type is the backend type and template kind of this backend.
const Type = wire.BackendKubernetes

const (
	// RuntimePort is the port the runtime listens on in the pod.
	RuntimePort = 7777
	// RuntimePath is where the runtime is, in the runtime image and in the
	// workspace's container.
	RuntimePath = "/.primer/primer-runtime"

	labelPrefix       = "primer.dev/"
	LabelWorkspace    = labelPrefix + "workspace"
	LabelManaged      = labelPrefix + "managed"
	LabelInstallation = labelPrefix + "installation"
	// annotationToken holds a hash of the runtime token the pod template
	// was made for: a new token (a replacement) changes the template, and
	// the StatefulSet rolls the pod; the hash says nothing of the token.
	annotationToken = labelPrefix + "token-sha256"

	tokenKey       = "PRIMER_RUNTIME_TOKEN"
	containerName  = "workspace"
	initName       = "primer-runtime"
	volumeName     = "workspace"
	runtimeVolume  = "primer-runtime"
	fieldManager   = "primer"
	podGracePeriod = 3
)

// shellCaps are the capabilities a workspace keeps (see the container
// backend); lockdownCaps are added so the runtime can install its firewall
// (ingress always, egress for deny_all), and it drops them before it
// serves.
var (
	shellCaps    = []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"}
	lockdownCaps = []corev1.Capability{"NET_ADMIN", "SETPCAP"}
)

// Name returns the name of the workspace's Secret, PVC, StatefulSet,
// Service and NetworkPolicy.
func Name(workspaceID string) string { return "primer-" + workspaceID }

// PodName returns the name of the workspace's pod.
func PodName(workspaceID string) string { return Name(workspaceID) + "-0" }

// idPattern bounds workspace ids to what makes valid object names: a
// StatefulSet's name goes into its pods' controller-revision-hash label,
// which allows 63 characters with a hash appended.
var idPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

func checkID(id string) error {
	if !idPattern.MatchString(id) {
		return errs.E(errs.Invalid, "workspace %q: invalid id for Kubernetes: want at most 40 lowercase letters, digits or '-'", id)
	}
	return nil
}

// Options are the platform's settings for every kubernetes backend.
type Options struct {
	// Runtime is the platform's primer-runtime; the default runtime image
	// is named after its digest.
	Runtime *container.RuntimeBinary
	// ReadyTimeout bounds how long Provision waits for the pod when its
	// context has no deadline (the workflow's start timeout is one);
	// default 5 minutes.
	ReadyTimeout time.Duration
	Logger       *slog.Logger
	// Installation labels every object this platform makes (see the
	// container backend's Options.Installation).
	Installation string
	// SnapshotDir is the platform's snapshot store for clusters without
	// CSI snapshots: a directory every worker that provisions from a
	// snapshot sees (see archive.go). Default: the platform's default data
	// directory's snapshots/kubernetes (the worker passes
	// PRIMER_DATA_DIR/snapshots/kubernetes).
	SnapshotDir string
}

// Backend makes workspaces as pods of one cluster namespace.
type Backend struct {
	cfg  ProviderConfig
	rest *rest.Config
	cs   kclient.Interface
	// dyn reaches the CSI snapshot API (csi.go), which has no typed
	// client in client-go.
	dyn    dynamic.Interface
	opts   Options
	logger *slog.Logger
	locks  keylock.Map // workspace id
	// bases and restoring are Restore's (restore.go): each workspace's
	// recorded base, and the workspaces whose pod it is making again,
	// which Endpoint waits for.
	bases     bases
	restoring restoring.Set

	fmu      sync.Mutex
	forwards map[string]*forward // workspace id -> port-forward
	closed   bool                // Close ran: no new port-forwards
}

var (
	_ backend.Backend     = (*Backend)(nil)
	_ backend.Keeper      = (*Backend)(nil)
	_ backend.Lister      = (*Backend)(nil)
	_ backend.TokenKeeper = (*Backend)(nil)
)

// New returns a backend for a parsed provider config.
func New(cfg ProviderConfig, opts Options) (*Backend, error) {
	if cfg.RuntimeImage == "" && opts.Runtime == nil {
		return nil, errs.E(errs.Invalid, "kubernetes backend: no runtime_image and no primer-runtime binary to name one after")
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 5 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	rc, err := restConfig(cfg.Connection)
	if err != nil {
		return nil, err
	}
	cs, err := kclient.NewForConfig(rc)
	if err != nil {
		return nil, errs.Field("spec.config.connection", "spec.config.connection: %v", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, errs.Field("spec.config.connection", "spec.config.connection: %v", err)
	}
	return &Backend{
		cfg: cfg, rest: rc, cs: cs, dyn: dyn, opts: opts,
		logger:   opts.Logger.With("backend", Type, "namespace", cfg.Namespace),
		forwards: map[string]*forward{},
	}, nil
}

// Factory builds kubernetes backends from provider configs.
func Factory(opts Options) backend.Factory {
	return func(config json.RawMessage) (backend.Backend, error) {
		c, err := ParseProviderConfig(config)
		if err != nil {
			return nil, err
		}
		return New(c, opts)
	}
}

func restConfig(c Connection) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	switch {
	case c.Kind == ConnInCluster:
		rc, err = rest.InClusterConfig()
	case c.Kubeconfig != "":
		if rc, err = inlineConfig(c); err != nil {
			// Its messages name the field and quote nothing of it.
			return nil, err
		}
	default:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if c.Path != "" {
			rules.ExplicitPath = c.Path
		}
		rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
	}
	if err != nil {
		return nil, errs.Field("spec.config.connection", "spec.config.connection: %s: %v", c.Kind, err)
	}
	rc = rest.CopyConfig(rc)
	// client-go's defaults (5 requests per second, bursts of 10) would
	// queue a batch of evals' workspaces behind each other.
	rc.QPS, rc.Burst = 100, 200
	rc.UserAgent = "primer"
	return rc, nil
}

// inlineConfig is the client config of an inline kubeconfig, a member's
// credential: one that would read a file or run a program on the
// platform's host is refused, and no error quotes the document (the
// parser's messages may).
func inlineConfig(c Connection) (*rest.Config, error) {
	const f = "spec.config.connection.kubeconfig"
	kc, err := clientcmd.Load([]byte(c.Kubeconfig))
	if err != nil {
		return nil, errs.Field(f, "%s: not a valid kubeconfig", f)
	}
	for _, name := range slices.Sorted(maps.Keys(kc.AuthInfos)) {
		a := kc.AuthInfos[name]
		if a.Exec != nil || a.AuthProvider != nil || a.ClientCertificate != "" || a.ClientKey != "" || a.TokenFile != "" {
			return nil, errs.Field(f, "%s: user %q reads a file or runs a program on the Primer host; give its credentials inline (client-certificate-data, client-key-data, token)", f, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(kc.Clusters)) {
		if kc.Clusters[name].CertificateAuthority != "" {
			return nil, errs.Field(f, "%s: cluster %q reads a file on the Primer host; give certificate-authority-data inline", f, name)
		}
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*kc, c.Context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, errs.Field(f, "%s: not a usable kubeconfig (context %q)", f, c.Context)
	}
	return rc, nil
}

// Clientset returns the cluster client (tests inspect what the backend
// made).
func (b *Backend) Clientset() kclient.Interface { return b.cs }

// Namespace returns the provider's namespace.
func (b *Backend) Namespace() string { return b.cfg.Namespace }

// Capabilities implements backend.Backend.
func (b *Backend) Capabilities() backend.Capabilities {
	return backend.Capabilities{
		Isolation: "pod", PersistentAcrossRestart: true,
		Snapshots:     []string{backend.SnapshotFilesystem},
		SnapshotsNote: SnapshotsNote,
		Pause:         true,
		Reset:         backend.ResetScopeSandbox,
		ResetNote:     resetNote,
	}
}

// ValidateTemplate implements backend.Backend.
func (b *Backend) ValidateTemplate(tmpl json.RawMessage) error {
	_, err := ParseTemplate(tmpl)
	return err
}

// RuntimeImage returns the image of the runtime's init container.
func (b *Backend) RuntimeImage() (string, error) {
	if b.cfg.RuntimeImage != "" {
		return b.cfg.RuntimeImage, nil
	}
	return DefaultRuntimeImage(b.opts.Runtime)
}

// Provision implements backend.Backend. It makes (or, on a retry, finds
// and completes) the workspace's objects, waits for its pod to run and its
// runtime to answer with the request's token. Scheduling and image errors
// fail it with the reason the cluster gives; nothing is left behind on
// failure but a volume and Secret kept by Teardown.
func (b *Backend) Provision(ctx context.Context, req backend.ProvisionRequest) (backend.Handle, error) {
	t, m, err := b.manifests(req, "provision")
	if err != nil {
		return backend.Handle{}, err
	}
	if req.Snapshot != nil {
		if err := b.checkRef(*req.Snapshot); err != nil {
			return backend.Handle{}, fmt.Errorf("workspace %s: provision: %w", req.WorkspaceID, err)
		}
		if req.Snapshot.Attrs["method"] == methodCSI {
			fromVolumeSnapshot(m, req.Snapshot)
		}
	}
	unlock := b.locks.Lock(req.WorkspaceID)
	defer unlock()

	id := req.WorkspaceID
	kept, err := b.keptVolume(ctx, id)
	if err != nil {
		return backend.Handle{}, err
	}
	h, err := b.apply(ctx, req, m)
	if err == nil {
		b.logger.Info("pod running", "workspace_id", id, "pod", PodName(id), "template", t.String())
		return h, nil
	}
	// Leave nothing behind: a retry starts clean, a failure is final. A
	// volume from before this call holds the workspace's files (a
	// replacement after Teardown): it stays, with its Secret, for the next
	// try or for Destroy.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	cleanup := b.remove
	if kept {
		cleanup = func(ctx context.Context, id string) error { return b.removeCompute(ctx, id, nil) }
	}
	if derr := cleanup(cctx, id); derr != nil {
		b.logger.Warn("cleanup after failed provision", "workspace_id", id, "err", derr)
	}
	return backend.Handle{}, err
}

// keptVolume reports whether the workspace's PVC exists already. One of
// that name that is not labelled as the workspace's is a conflict.
func (b *Backend) keptVolume(ctx context.Context, id string) (bool, error) {
	pvc, err := b.cs.CoreV1().PersistentVolumeClaims(b.cfg.Namespace).Get(ctx, Name(id), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, b.apiErr(err, "workspace %s: get PVC", id)
	case !b.owns(pvc.Labels, id):
		return false, errs.E(errs.Conflict, "workspace %s: PVC %s/%s exists and does not belong to it", id, b.cfg.Namespace, Name(id))
	}
	return true, nil
}

// owns reports whether labels mark an object as the workspace's.
func (b *Backend) owns(labels map[string]string, id string) bool {
	return labels[LabelWorkspace] == id && labels[LabelManaged] == "true"
}

// apply makes every object of m that is missing, updates the Secret and
// the pod template to the request's token, then waits for the pod and its
// runtime.
func (b *Backend) apply(ctx context.Context, req backend.ProvisionRequest, m *Manifests) (backend.Handle, error) {
	id, ns := req.WorkspaceID, b.cfg.Namespace

	// The Secret first: it owns everything else.
	owner, err := b.ensureSecret(ctx, id, m.Secret)
	if err != nil {
		return backend.Handle{}, err
	}
	m.Own(owner)
	if err := b.ensureTenantPolicy(ctx, id, tenantOf(req)); err != nil {
		return backend.Handle{}, err
	}
	if _, err := b.cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, m.PVC, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return backend.Handle{}, b.apiErr(err, "workspace %s: create PVC", id)
	}
	if m.Service != nil {
		if _, err := b.cs.CoreV1().Services(ns).Create(ctx, m.Service, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return backend.Handle{}, b.apiErr(err, "workspace %s: create Service", id)
		}
	}
	if m.NetworkPolicy != nil {
		if _, err := b.cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, m.NetworkPolicy, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return backend.Handle{}, b.apiErr(err, "workspace %s: create NetworkPolicy", id)
		}
	}
	if err := b.ensureStatefulSet(ctx, id, m.StatefulSet); err != nil {
		return backend.Handle{}, err
	}
	pod, err := b.waitPod(ctx, id, tokenHash(req.Token))
	if err != nil {
		return backend.Handle{}, err
	}
	url, err := b.runtimeURL(ctx, id, pod)
	if err != nil {
		return backend.Handle{}, err
	}
	if err := b.waitReady(ctx, id, url, req.Token); err != nil {
		return backend.Handle{}, b.withLogs(ctx, id, err)
	}
	if s := req.Snapshot; s != nil && s.Attrs["method"] == methodArchive {
		if err := b.restoreArchive(ctx, id, url, req.Token, s); err != nil {
			return backend.Handle{}, err
		}
	}
	return b.handle(id), nil
}

func ptr[T any](v T) *T { return &v }

// ensureSecret creates the workspace's Secret, or brings an existing one
// (of this workspace) to the request's token and env.
func (b *Backend) ensureSecret(ctx context.Context, id string, s *corev1.Secret) (*corev1.Secret, error) {
	secrets := b.cs.CoreV1().Secrets(b.cfg.Namespace)
	made, err := secrets.Create(ctx, s, metav1.CreateOptions{FieldManager: fieldManager})
	if err == nil {
		return made, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, b.apiErr(err, "workspace %s: create Secret", id)
	}
	cur, err := secrets.Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return nil, b.apiErr(err, "workspace %s: get Secret", id)
	}
	if !b.owns(cur.Labels, id) {
		return nil, errs.E(errs.Conflict, "workspace %s: Secret %s/%s exists and does not belong to it", id, b.cfg.Namespace, s.Name)
	}
	if cur.DeletionTimestamp != nil {
		return nil, errs.E(errs.Unavailable, "workspace %s: Secret %s/%s is being deleted", id, b.cfg.Namespace, s.Name)
	}
	if equalData(cur.Data, s.Data) {
		return cur, nil
	}
	cur.Data = s.Data
	upd, err := secrets.Update(ctx, cur, metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, b.apiErr(err, "workspace %s: update Secret", id)
	}
	return upd, nil
}

func equalData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || string(v) != string(w) {
			return false
		}
	}
	return true
}

// ensureStatefulSet creates the StatefulSet, or brings an existing one of
// the workspace to the request's token (the StatefulSet then replaces its
// pod).
func (b *Backend) ensureStatefulSet(ctx context.Context, id string, sts *appsv1.StatefulSet) error {
	sets := b.cs.AppsV1().StatefulSets(b.cfg.Namespace)
	_, err := sets.Create(ctx, sts, metav1.CreateOptions{FieldManager: fieldManager})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return b.apiErr(err, "workspace %s: create StatefulSet", id)
	}
	cur, err := sets.Get(ctx, sts.Name, metav1.GetOptions{})
	if err != nil {
		return b.apiErr(err, "workspace %s: get StatefulSet", id)
	}
	if !b.owns(cur.Labels, id) {
		return errs.E(errs.Conflict, "workspace %s: StatefulSet %s/%s exists and does not belong to it", id, b.cfg.Namespace, sts.Name)
	}
	// A paused workspace (scaled to 0) that is provisioned again runs
	// again.
	scaled := cur.Spec.Replicas != nil && *cur.Spec.Replicas == 0
	if !scaled && cur.Spec.Template.Annotations[annotationToken] == sts.Spec.Template.Annotations[annotationToken] {
		return nil
	}
	if cur.Spec.Template.Annotations[annotationToken] == sts.Spec.Template.Annotations[annotationToken] {
		// Scaled by a patch, which carries no resourceVersion: an update of
		// cur failed with a conflict when the controller had written the
		// StatefulSet's status since the read (CI, TestPauseResume).
		return b.scale(ctx, id, 1)
	}
	cur.Spec.Replicas = sts.Spec.Replicas
	cur.Spec.Template = sts.Spec.Template
	if _, err := sets.Update(ctx, cur, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return b.apiErr(err, "workspace %s: update StatefulSet", id)
	}
	// A pod that does not run cannot be rolled; delete it so the new
	// template takes over at once.
	_ = b.cs.CoreV1().Pods(b.cfg.Namespace).Delete(ctx, PodName(id), metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(podGracePeriod))})
	return nil
}

// handle is the workspace's handle.
func (b *Backend) handle(id string) backend.Handle {
	return backend.Handle{
		Backend:     Type,
		WorkspaceID: id,
		Path:        b.cfg.Namespace + "/" + Name(id),
		Attrs: map[string]string{
			"namespace":    b.cfg.Namespace,
			"statefulset":  Name(id),
			"pod":          PodName(id),
			"pvc":          Name(id),
			"secret":       Name(id),
			"reachability": b.cfg.Reachability.Kind,
		},
	}
}

// waitReady dials the runtime until it answers a ping with token.
func (b *Backend) waitReady(ctx context.Context, id, url, token string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err := backend.AwaitRuntime(ctx, url, token, 3*time.Second, nil)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, backend.ErrTokenRefused):
		return errs.E(errs.Conflict, "workspace %s: runtime at %s refused the workspace's token", id, url)
	}
	return errs.E(errs.Unavailable, "workspace %s: runtime in pod %s did not answer: %v", id, PodName(id), err)
}

// Endpoint implements backend.Backend: it finds the pod and returns where
// its runtime listens, or an Unavailable error saying why the pod does not
// run (pending with the scheduler's reason, waiting for an image, gone).
// While this process's Restore makes the pod again, it waits for the new
// pod rather than report the old one's deletion (restore.go).
func (b *Backend) Endpoint(ctx context.Context, h backend.Handle, token string) (backend.Endpoint, error) {
	if err := b.checkHandle(h); err != nil {
		return backend.Endpoint{}, err
	}
	id := h.WorkspaceID
	b.restoring.Wait(ctx, id)
	pod, err := b.cs.CoreV1().Pods(b.cfg.Namespace).Get(ctx, PodName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && between(pod)) {
		// A pod being deleted or not made again yet says nothing lasting:
		// report the one that follows it (see settledPod).
		if next := b.settledPod(ctx, id); next != nil {
			pod, err = next, nil
		}
	}
	if apierrors.IsNotFound(err) {
		sts, serr := b.cs.AppsV1().StatefulSets(b.cfg.Namespace).Get(ctx, Name(id), metav1.GetOptions{})
		if apierrors.IsNotFound(serr) {
			return backend.Endpoint{}, errs.E(errs.NotFound, "workspace %s: StatefulSet %s/%s is gone", id, b.cfg.Namespace, Name(id))
		}
		if serr == nil && sts.Spec.Replicas != nil && *sts.Spec.Replicas == 0 {
			return backend.Endpoint{}, errs.E(errs.Unavailable, "workspace %s: paused (StatefulSet %s scaled to 0)", id, Name(id))
		}
		return backend.Endpoint{}, errs.E(errs.Unavailable, "workspace %s: pod %s does not exist (the StatefulSet is making it again)", id, PodName(id))
	}
	if err != nil {
		return backend.Endpoint{}, b.apiErr(err, "workspace %s: get pod", id)
	}
	if st := podState(pod, ""); !st.running {
		return backend.Endpoint{}, errs.E(errs.Unavailable, "workspace %s: pod %s %s", id, pod.Name, st.reason)
	}
	url, err := b.runtimeURL(ctx, id, pod)
	if err != nil {
		return backend.Endpoint{}, err
	}
	return backend.Endpoint{URL: url}, nil
}

// runtimeURL returns where the runtime of a running pod is reached.
func (b *Backend) runtimeURL(ctx context.Context, id string, pod *corev1.Pod) (string, error) {
	switch b.cfg.Reachability.Kind {
	case ReachService:
		svc, err := b.cs.CoreV1().Services(b.cfg.Namespace).Get(ctx, Name(id), metav1.GetOptions{})
		if err != nil {
			return "", b.apiErr(err, "workspace %s: get Service", id)
		}
		if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
			return "", errs.E(errs.Unavailable, "workspace %s: Service %s has no cluster IP", id, svc.Name)
		}
		return "ws://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(RuntimePort)) + "/", nil
	case ReachPortForward:
		return b.forwardTo(ctx, id, pod)
	default:
		if pod.Status.PodIP == "" {
			return "", errs.E(errs.Unavailable, "workspace %s: pod %s has no IP yet", id, pod.Name)
		}
		return "ws://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(RuntimePort)) + "/", nil
	}
}

func (b *Backend) checkHandle(h backend.Handle) error {
	if err := h.Check(Type, checkID); err != nil {
		return err
	}
	if ns := h.Attrs["namespace"]; ns != "" && ns != b.cfg.Namespace {
		return errs.E(errs.Invalid, "workspace %s: handle names namespace %q, the provider %q", h.WorkspaceID, ns, b.cfg.Namespace)
	}
	return nil
}

// RuntimeToken returns the runtime token held in the workspace's Secret:
// the token the pod was started with, which the platform takes back when
// the one it stored is refused.
func (b *Backend) RuntimeToken(ctx context.Context, h backend.Handle) (string, error) {
	if err := b.checkHandle(h); err != nil {
		return "", err
	}
	s, err := b.cs.CoreV1().Secrets(b.cfg.Namespace).Get(ctx, Name(h.WorkspaceID), metav1.GetOptions{})
	if err != nil {
		return "", b.apiErr(err, "workspace %s: get Secret", h.WorkspaceID)
	}
	if !b.owns(s.Labels, h.WorkspaceID) || len(s.Data[tokenKey]) == 0 {
		return "", errs.E(errs.NotFound, "workspace %s: Secret %s/%s holds no runtime token of the workspace", h.WorkspaceID, b.cfg.Namespace, s.Name)
	}
	return string(s.Data[tokenKey]), nil
}

// Destroy implements backend.Backend: it deletes every object of the
// workspace, found by name from the workspace id, and waits until they are
// gone.
//
// A graceful delete of the pod is over only when the kubelet has seen the
// container stop (its next relist, up to a second later) and confirms,
// which made a delete take one to three seconds. So Destroy watches the
// runtime stop itself: it holds a connection to the runtime, deletes the
// pod gracefully (so nothing restarts its container), asks the runtime to
// shut down (the shutdown op, which stops it as SIGTERM does), and once
// that connection is closed and the runtime's address answers no more,
// deletes the pod object at once (grace period 0).
//
// The kubelet's own SIGTERM is not waited for: a pod worker does not act
// on a pod again before the kubelet's next relist of the node's containers
// after its last sync, so a pod deleted within a second of starting (or of
// any change the kubelet synced) got SIGTERM only up to a second later.
// A runtime that predates the op refuses it and is stopped by that SIGTERM,
// as before. Where Destroy cannot reach the runtime (a pod that never ran,
// a port-forward, which the delete itself cuts), it waits for the kubelet
// as before. Teardown, which keeps the volume for another pod, always
// waits for the kubelet.
func (b *Backend) Destroy(ctx context.Context, h backend.Handle) error {
	unlock, err := b.lockFor(h)
	if err != nil {
		return err
	}
	defer unlock()
	return b.remove(ctx, h.WorkspaceID)
}

// Teardown implements backend.Keeper: it deletes the StatefulSet and its
// pod (stopping every process of the workspace) and waits until the pod is
// gone; the PVC, the Secret and the Service stay for a following Provision.
func (b *Backend) Teardown(ctx context.Context, h backend.Handle) error {
	unlock, err := b.lockFor(h)
	if err != nil {
		return err
	}
	defer unlock()
	if err := b.removeCompute(ctx, h.WorkspaceID, nil); err != nil {
		return err
	}
	b.logger.Info("pod removed, volume kept", "workspace_id", h.WorkspaceID, "pvc", Name(h.WorkspaceID))
	return nil
}

// lockFor checks a handle given to Destroy or Teardown, which work from the
// workspace id alone, and locks its workspace.
func (b *Backend) lockFor(h backend.Handle) (unlock func(), err error) {
	return b.locks.LockHandle(h, Type, checkID)
}

// removeCompute deletes the StatefulSet and the pod and waits for both.
// With rt, a connection to the pod's runtime, it asks the runtime to shut
// down and deletes the pod object at once when it has stopped (see
// Destroy) instead of waiting for the kubelet to stop it and confirm.
func (b *Backend) removeCompute(ctx context.Context, id string, rt *runtimeConn) error {
	b.stopForward(id)
	ns, name := b.cfg.Namespace, Name(id)
	bg := metav1.DeletePropagationBackground
	if err := b.cs.AppsV1().StatefulSets(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		return b.apiErr(err, "workspace %s: delete StatefulSet", id)
	}
	if err := b.cs.CoreV1().Pods(ns).Delete(ctx, PodName(id), metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(podGracePeriod))}); err != nil && !apierrors.IsNotFound(err) {
		return b.apiErr(err, "workspace %s: delete pod", id)
	}
	if rt != nil {
		rt.shutdown(ctx, b.logger, id)
		if rt.stopped(ctx, (podGracePeriod+2)*time.Second) {
			err := b.cs.CoreV1().Pods(ns).Delete(ctx, PodName(id), metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)), Preconditions: &metav1.Preconditions{UID: &rt.pod}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return b.apiErr(err, "workspace %s: delete stopped pod", id)
			}
		}
	}
	return b.waitGone(ctx, id, false)
}

// remove deletes every object of the workspace and waits until they are
// gone.
func (b *Backend) remove(ctx context.Context, id string) error {
	rt := b.connectRuntime(ctx, id)
	if rt != nil {
		defer rt.c.Close()
	}
	if err := b.removeCompute(ctx, id, rt); err != nil {
		return err
	}
	ns, name := b.cfg.Namespace, Name(id)
	del := []struct {
		what string
		f    func() error
	}{
		{"Service", func() error { return b.cs.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}) }},
		{"NetworkPolicy", func() error { return b.cs.NetworkingV1().NetworkPolicies(ns).Delete(ctx, name, metav1.DeleteOptions{}) }},
		{"PVC", func() error {
			return b.cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{})
		}},
		{"Secret", func() error { return b.cs.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{}) }},
	}
	for _, d := range del {
		if err := d.f(); err != nil && !apierrors.IsNotFound(err) {
			return b.apiErr(err, "workspace %s: delete %s", id, d.what)
		}
	}
	return b.waitGone(ctx, id, true)
}

// waitGone waits until the workspace's pod and StatefulSet (and with all,
// every other object) no longer exist. The pod, the one that takes a while,
// is waited for on a watch, which reports its removal at once; the others
// go within milliseconds of their delete and are polled at a short
// interval. (A poll backing off to half a second found the pod gone up to
// that late.)
func (b *Backend) waitGone(ctx context.Context, id string, all bool) error {
	delay := 20 * time.Millisecond
	pod := "pod " + PodName(id)
	for {
		left, err := b.objects(ctx, id, all)
		if err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		if slices.Contains(left, pod) {
			b.awaitPodGone(ctx, id)
		} else {
			select {
			case <-ctx.Done():
			case <-time.After(delay):
			}
			delay = min(2*delay, 200*time.Millisecond)
		}
		if ctx.Err() != nil {
			return errs.E(errs.Timeout, "workspace %s: still there after delete: %s", id, strings.Join(left, ", "))
		}
	}
}

// awaitPodGone returns once the workspace's pod is gone, or after a few
// seconds (the caller looks again), or when ctx ends.
func (b *Backend) awaitPodGone(ctx context.Context, id string) {
	pods := b.cs.CoreV1().Pods(b.cfg.Namespace)
	byName := fields.OneTermEqualSelector("metadata.name", PodName(id)).String()
	l, err := pods.List(ctx, metav1.ListOptions{FieldSelector: byName})
	if err != nil || len(l.Items) == 0 {
		return
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: byName, ResourceVersion: l.ResourceVersion, TimeoutSeconds: ptr(int64(5))})
	if err != nil {
		// No watch (a proxy that drops them): look again shortly.
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		return
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Deleted || ev.Type == watch.Error {
				return
			}
		}
	}
}

// apiErr wraps an API error with what was being done and the errs kind the
// workflow needs.
func (b *Backend) apiErr(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	var op *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errs.E(errs.Timeout, "%s: %w", msg, err)
	case errors.Is(err, context.Canceled):
		return errs.E(errs.Canceled, "%s: %w", msg, err)
	case errors.As(err, &op):
		return errs.E(errs.Unavailable, "%s: the API server at %s is not reachable: %w", msg, b.rest.Host, err)
	case apierrors.IsNotFound(err):
		return errs.E(errs.NotFound, "%s: %w", msg, err)
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return errs.E(errs.Conflict, "%s: %w", msg, err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return errs.E(errs.Invalid, "%s: %w", msg, err)
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return errs.E(errs.Forbidden, "%s: %w", msg, err)
	}
	return errs.E(errs.Unavailable, "%s: %w", msg, err)
}
