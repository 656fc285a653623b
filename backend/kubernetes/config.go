package kubernetes

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
)

// Connection kinds, reachability kinds and egress values.
const (
	ConnInCluster    = "in_cluster"
	ConnKubeconfig   = "kubeconfig"
	ReachPodIP       = "pod_ip"
	ReachService     = "service"
	ReachPortForward = "port_forward"
	EgressAllow      = "allow"
	EgressDenyAll    = "deny_all"

	// Workdir is where the workspace's volume is mounted and where
	// commands start.
	Workdir = "/workspace"
	// DefaultPVCSize is a workspace volume's size when the template says
	// none.
	DefaultPVCSize = "1Gi"
)

// ProviderConfig is the kubernetes provider document:
//
//	kind: kubernetes
//	connection: {kind: kubeconfig, path: /etc/primer/kubeconfig, context: prod}   # or {kind: in_cluster}
//	namespace: primer-workspaces
//	reachability: {kind: pod_ip}   # or service, or port_forward
//	runtime_image: registry.example/primer/runtime:1.0   # optional
type ProviderConfig struct {
	Kind         string       `json:"kind,omitempty" access:"any"`
	Connection   Connection   `json:"connection" access:"any"`
	Namespace    string       `json:"namespace,omitempty" access:"any"`
	Reachability Reachability `json:"reachability" access:"any"`
	// RuntimeImage is the image of the init container that puts
	// primer-runtime into every workspace pod. It holds the binary at
	// /.primer/primer-runtime and nothing else (`primer runtime-image`
	// writes it). Default: primer/runtime:<the platform's runtime digest>,
	// which the cluster must have (`make k8s-runtime-image` imports it into
	// the test cluster).
	RuntimeImage string `json:"runtime_image,omitempty" access:"any"`
	// ImagePullPolicy of the workspace and runtime images: IfNotPresent
	// (default), Always or Never.
	ImagePullPolicy string `json:"image_pull_policy,omitempty" access:"any"`
}

// Connection says how the platform reaches the API server.
type Connection struct {
	// Kind in_cluster uses the platform's own service account: admin only
	// (HostEffects).
	Kind string `json:"kind" access:"any,endpoint"`
	// Path is the kubeconfig file on the platform's host (kind
	// kubeconfig); empty, with no Kubeconfig either, means the platform's
	// KUBECONFIG or ~/.kube/config. Both are admin only.
	Path string `json:"path,omitempty" access:"admin:path,endpoint"`
	// Kubeconfig is the kubeconfig itself (kind kubeconfig), YAML or
	// JSON: a member's inline credential, stored as a secret.
	Kubeconfig string `json:"kubeconfig,omitempty" access:"secret"`
	// Context is the kubeconfig context; empty means its current one.
	Context string `json:"context,omitempty" access:"any,endpoint"`
}

// HostEffects implements backend.HostEffecter: a connection with no
// credentials of its own (in_cluster, or a kubeconfig connection that
// names neither a file nor an inline kubeconfig) uses the platform's.
func (c *ProviderConfig) HostEffects(prefix string) []backend.Setting {
	switch {
	case c.Connection.Kind == ConnInCluster:
		return []backend.Setting{{Path: prefix + ".connection.kind", Why: "in_cluster uses the Primer host's own service account"}}
	case c.Connection.Path == "" && c.Connection.Kubeconfig == "":
		return []backend.Setting{{Path: prefix + ".connection.kubeconfig", Why: "left out, the platform's own kubeconfig is used"}}
	}
	return nil
}

// Reachability says how the platform reaches a workspace's runtime: by the
// pod's address (the platform runs in or next to the cluster network), by
// a ClusterIP Service per workspace, or through the API server's
// port-forward (a platform outside the cluster).
type Reachability struct {
	Kind string `json:"kind" access:"any"`
}

// ParseProviderConfig decodes and checks a kubernetes provider config.
func ParseProviderConfig(doc json.RawMessage) (ProviderConfig, error) {
	var c ProviderConfig
	if err := backend.OpenProviderConfig(doc, &c, &c.Kind, Type); err != nil {
		return c, err
	}
	switch c.Connection.Kind {
	case ConnInCluster:
		if c.Connection.Path != "" || c.Connection.Context != "" || c.Connection.Kubeconfig != "" {
			return c, errs.Field("spec.config.connection", "spec.config.connection: path, kubeconfig and context are for kind %s", ConnKubeconfig)
		}
	case ConnKubeconfig:
		if c.Connection.Path != "" && c.Connection.Kubeconfig != "" {
			return c, errs.Field("spec.config.connection.kubeconfig", "spec.config.connection.kubeconfig: give the kubeconfig or spec.config.connection.path, not both")
		}
		if c.Connection.Path != "" {
			p, err := backend.AbsPath("spec.config.connection.path", c.Connection.Path)
			if err != nil {
				return c, err
			}
			c.Connection.Path = p
		}
	case "":
		return c, errs.Field("spec.config.connection.kind", "spec.config.connection.kind: required, %q or %q", ConnInCluster, ConnKubeconfig)
	default:
		return c, errs.Field("spec.config.connection.kind", "spec.config.connection.kind: is %q, must be %q or %q", c.Connection.Kind, ConnInCluster, ConnKubeconfig)
	}
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		return c, errs.Field("spec.config.namespace", "spec.config.namespace: %q is not a namespace name: %s", c.Namespace, strings.Join(msgs, "; "))
	}
	switch c.Reachability.Kind {
	case ReachPodIP, ReachService, ReachPortForward:
	case "":
		return c, errs.Field("spec.config.reachability.kind", "spec.config.reachability.kind: required, %q, %q or %q", ReachPodIP, ReachService, ReachPortForward)
	default:
		return c, errs.Field("spec.config.reachability.kind", "spec.config.reachability.kind: is %q, must be %q, %q or %q", c.Reachability.Kind, ReachPodIP, ReachService, ReachPortForward)
	}
	if strings.ContainsAny(c.RuntimeImage, " \t\n") {
		return c, errs.Field("spec.config.runtime_image", "spec.config.runtime_image: %q is not an image reference", c.RuntimeImage)
	}
	switch corev1.PullPolicy(c.ImagePullPolicy) {
	case "":
		c.ImagePullPolicy = string(corev1.PullIfNotPresent)
	case corev1.PullIfNotPresent, corev1.PullAlways, corev1.PullNever:
	default:
		return c, errs.Field("spec.config.image_pull_policy", "spec.config.image_pull_policy: is %q, must be IfNotPresent, Always or Never", c.ImagePullPolicy)
	}
	return c, nil
}

// Template is the kubernetes template's backend document (the seed's
// KubernetesTemplateConfig):
//
//	kind: kubernetes
//	image: python:3.12-slim
//	cpu_limit: "1"            # Kubernetes quantities
//	memory_limit: 512Mi
//	pvc_size: 1Gi
//	storage_class: fast-ssd   # default: the cluster's default class
//	runtime_class: gvisor     # where the cluster has one
//	network: {egress: deny_all}
//	node_selector: {pool: sandboxes}
//	tolerations: [{key: sandbox, operator: Exists, effect: NoSchedule}]
//	user: user               # commands run as, files belong to; made when missing
//	env, files, init: as on every backend
type Template struct {
	backend.Common
	Image         string              `json:"image"`
	CPULimit      string              `json:"cpu_limit,omitempty"`
	MemoryLimit   string              `json:"memory_limit,omitempty"`
	CPURequest    string              `json:"cpu_request,omitempty"`
	MemoryRequest string              `json:"memory_request,omitempty"`
	PVCSize       string              `json:"pvc_size,omitempty"`
	StorageClass  string              `json:"storage_class,omitempty"`
	RuntimeClass  string              `json:"runtime_class,omitempty"`
	Network       NetworkPolicy       `json:"network,omitzero"`
	NodeSelector  map[string]string   `json:"node_selector,omitempty"`
	Tolerations   []corev1.Toleration `json:"tolerations,omitempty"`
	Labels        map[string]string   `json:"labels,omitempty"`
	// User is the sandbox user commands run as and files are created for
	// when a request names none; empty means root. Made in the pod when
	// its image lacks it.
	User string `json:"user,omitempty"`
}

// NetworkPolicy is a template's network section.
type NetworkPolicy struct {
	// Egress is allow (the default) or deny_all: the workspace opens no
	// connection to anything outside itself; only the platform's
	// connection to its runtime flows.
	Egress string `json:"egress,omitempty"`
}

// resources are a template's parsed quantities.
type resources struct {
	cpuLimit, memLimit, cpuRequest, memRequest, pvcSize resource.Quantity
	hasCPULimit, hasMemLimit                            bool
}

// Default requests where a template sets none: small, so that a node holds
// many idle workspaces (an agent's sandbox mostly waits); a limit caps what
// one may burst to.
var (
	defaultCPURequest = resource.MustParse("50m")
	defaultMemRequest = resource.MustParse("64Mi")
	minMemoryLimit    = resource.MustParse("16Mi")
)

// ParseTemplate decodes and checks a kubernetes template and fills
// defaults.
func ParseTemplate(doc json.RawMessage) (Template, error) {
	t, _, err := parseTemplate(doc)
	return t, err
}

func parseTemplate(doc json.RawMessage) (Template, resources, error) {
	var t Template
	var r resources
	if err := backend.DecodeStrict(doc, "spec.backend", &t); err != nil {
		return t, r, err
	}
	if err := t.Common.Check(Type); err != nil {
		return t, r, err
	}
	if strings.TrimSpace(t.Image) == "" {
		return t, r, errs.Field("spec.backend.image", "spec.backend.image: required")
	}
	if strings.ContainsAny(t.Image, " \t\n") {
		return t, r, errs.Field("spec.backend.image", "spec.backend.image: %q is not an image reference", t.Image)
	}
	if err := backend.CheckTemplateUser(t.User); err != nil {
		return t, r, err
	}
	quantity := func(field, v string, def resource.Quantity) (resource.Quantity, bool, error) {
		if v == "" {
			return def, false, nil
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return q, false, errs.Field("spec.backend."+field, "spec.backend.%s: %q is not a Kubernetes quantity (like 500m, 2, 512Mi, 1Gi)", field, v)
		}
		if q.Sign() <= 0 {
			return q, false, errs.Field("spec.backend."+field, "spec.backend.%s: %q must be positive", field, v)
		}
		return q, true, nil
	}
	var err error
	if r.cpuLimit, r.hasCPULimit, err = quantity("cpu_limit", t.CPULimit, resource.Quantity{}); err != nil {
		return t, r, err
	}
	if r.memLimit, r.hasMemLimit, err = quantity("memory_limit", t.MemoryLimit, resource.Quantity{}); err != nil {
		return t, r, err
	}
	if r.hasMemLimit && r.memLimit.Cmp(minMemoryLimit) < 0 {
		return t, r, errs.Field("spec.backend.memory_limit", "spec.backend.memory_limit: %s is below the minimum of 16Mi", t.MemoryLimit)
	}
	if r.cpuRequest, _, err = quantity("cpu_request", t.CPURequest, defaultCPURequest); err != nil {
		return t, r, err
	}
	if r.memRequest, _, err = quantity("memory_request", t.MemoryRequest, defaultMemRequest); err != nil {
		return t, r, err
	}
	// A request above its limit is refused by the API server; a default
	// request is lowered to the limit instead.
	if r.hasCPULimit && r.cpuRequest.Cmp(r.cpuLimit) > 0 {
		if t.CPURequest != "" {
			return t, r, errs.Field("spec.backend.cpu_request", "spec.backend.cpu_request: %s is above cpu_limit %s", t.CPURequest, t.CPULimit)
		}
		r.cpuRequest = r.cpuLimit
	}
	if r.hasMemLimit && r.memRequest.Cmp(r.memLimit) > 0 {
		if t.MemoryRequest != "" {
			return t, r, errs.Field("spec.backend.memory_request", "spec.backend.memory_request: %s is above memory_limit %s", t.MemoryRequest, t.MemoryLimit)
		}
		r.memRequest = r.memLimit
	}
	if t.PVCSize == "" {
		t.PVCSize = DefaultPVCSize
	}
	if r.pvcSize, _, err = quantity("pvc_size", t.PVCSize, resource.Quantity{}); err != nil {
		return t, r, err
	}
	for field, v := range map[string]string{"storage_class": t.StorageClass, "runtime_class": t.RuntimeClass} {
		if v == "" {
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
			return t, r, errs.Field("spec.backend."+field, "spec.backend.%s: %q is not a class name: %s", field, v, strings.Join(msgs, "; "))
		}
	}
	switch t.Network.Egress {
	case "":
		t.Network.Egress = EgressAllow
	case EgressAllow, EgressDenyAll:
	default:
		return t, r, errs.Field("spec.backend.network.egress", "spec.backend.network.egress: is %q, must be %q or %q", t.Network.Egress, EgressAllow, EgressDenyAll)
	}
	if err := checkLabels("spec.backend.node_selector", t.NodeSelector, false); err != nil {
		return t, r, err
	}
	if err := checkLabels("spec.backend.labels", t.Labels, true); err != nil {
		return t, r, err
	}
	for i, tol := range t.Tolerations {
		field := fmt.Sprintf("spec.backend.tolerations[%d]", i)
		switch tol.Operator {
		case "", corev1.TolerationOpEqual:
		case corev1.TolerationOpExists:
			if tol.Value != "" {
				return t, r, errs.Field(field, "%s: operator Exists takes no value", field)
			}
		default:
			return t, r, errs.Field(field, "%s: operator is %q, must be Equal or Exists", field, tol.Operator)
		}
		switch tol.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return t, r, errs.Field(field, "%s: effect is %q, must be NoSchedule, PreferNoSchedule or NoExecute", field, tol.Effect)
		}
		if tol.Key == "" && tol.Operator != corev1.TolerationOpExists {
			return t, r, errs.Field(field, "%s: an empty key needs operator Exists", field)
		}
	}
	return t, r, nil
}

// checkLabels checks label keys and values; platform says keys under
// primer. are refused (they are the platform's).
func checkLabels(field string, m map[string]string, platform bool) error {
	for k, v := range m {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return errs.Field(field, "%s: key %q: %s", field, k, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			return errs.Field(field, "%s: %q: value %q: %s", field, k, v, strings.Join(msgs, "; "))
		}
		if platform && strings.HasPrefix(k, labelPrefix) {
			return errs.Field(field, "%s: %q: keys under %q are the platform's", field, k, labelPrefix)
		}
	}
	return nil
}

// String describes a template's limits for logs and events.
func (t Template) String() string {
	return fmt.Sprintf("image=%s cpu=%s memory=%s pvc=%s egress=%s", t.Image, t.CPULimit, t.MemoryLimit, t.PVCSize, t.Network.Egress)
}
