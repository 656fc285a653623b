package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

func (b *Backend) labels(id, tenant string, extra map[string]string) map[string]string {
	l := map[string]string{}
	for k, v := range extra {
		l[k] = v
	}
	l[LabelWorkspace] = id
	l[LabelManaged] = "true"
	l[LabelTenant] = tenant
	l["app.kubernetes.io/managed-by"] = "primer"
	if b.opts.Installation != "" {
		l[LabelInstallation] = b.opts.Installation
	}
	return l
}

// Manifests are the objects of one workspace, as Provision makes them.
// The Secret owns every other: their owner references are left for the
// caller to set with Own once the Secret exists (and has a UID).
type Manifests struct {
	Secret      *corev1.Secret
	PVC         *corev1.PersistentVolumeClaim
	StatefulSet *appsv1.StatefulSet
	// Service is set when the provider reaches runtimes through services.
	Service *corev1.Service
	// NetworkPolicy is set for a template with network.egress deny_all.
	NetworkPolicy *networkingv1.NetworkPolicy
}

// Own makes secret, as the API server returned it, the owner of every
// object of m but the Secret.
func (m *Manifests) Own(secret *corev1.Secret) {
	refs := []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Secret", Name: secret.Name, UID: secret.UID,
		BlockOwnerDeletion: ptr(true),
	}}
	m.PVC.OwnerReferences = refs
	m.StatefulSet.OwnerReferences = refs
	if m.Service != nil {
		m.Service.OwnerReferences = refs
	}
	if m.NetworkPolicy != nil {
		m.NetworkPolicy.OwnerReferences = refs
	}
}

// Manifests returns the objects Provision would make for req, without
// making them (the benchmarks apply the very same spec directly to
// compare).
func (b *Backend) Manifests(req backend.ProvisionRequest) (*Manifests, error) {
	_, m, err := b.manifests(req, "manifests")
	return m, err
}

// manifests checks req and builds the workspace's objects; op prefixes
// the errors.
func (b *Backend) manifests(req backend.ProvisionRequest, op string) (Template, *Manifests, error) {
	id := req.WorkspaceID
	if err := checkID(id); err != nil {
		return Template{}, nil, err
	}
	t, res, err := parseTemplate(req.Template)
	if err != nil {
		return t, nil, fmt.Errorf("workspace %s: %s: %w", id, op, err)
	}
	if req.Token == "" {
		return t, nil, errs.E(errs.Invalid, "workspace %s: %s: no runtime token", id, op)
	}
	runtimeImage, err := b.RuntimeImage()
	if err != nil {
		return t, nil, fmt.Errorf("workspace %s: %s: %w", id, op, err)
	}
	name := Name(id)
	labels := b.labels(id, tenantOf(req), t.Labels)
	envNames := make([]string, 0, len(req.Env))
	for k := range req.Env {
		envNames = append(envNames, k)
	}
	slices.Sort(envNames)
	data := map[string][]byte{tokenKey: []byte(req.Token)}
	for i, k := range envNames {
		data[envKey(i)] = []byte(req.Env[k])
	}
	m := &Manifests{
		Secret: &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		},
	}
	meta := metav1.ObjectMeta{Name: name, Labels: labels}
	m.PVC = &corev1.PersistentVolumeClaim{
		ObjectMeta: meta,
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: res.pvcSize}},
		},
	}
	if t.StorageClass != "" {
		m.PVC.Spec.StorageClassName = ptr(t.StorageClass)
	}
	if b.cfg.Reachability.Kind == ReachService {
		m.Service = &corev1.Service{
			ObjectMeta: meta,
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeClusterIP,
				Selector: map[string]string{LabelWorkspace: id},
				Ports: []corev1.ServicePort{{
					Name: "runtime", Protocol: corev1.ProtocolTCP,
					Port: RuntimePort, TargetPort: intstr.FromInt32(RuntimePort),
				}},
				// The platform checks the runtime itself; the Service
				// need not wait for a readiness probe.
				PublishNotReadyAddresses: true,
			},
		}
	}
	if t.Network.Egress == EgressDenyAll {
		m.NetworkPolicy = &networkingv1.NetworkPolicy{
			ObjectMeta: meta,
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelWorkspace: id}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
				// In: only the runtime's port. Out: nothing.
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr(corev1.ProtocolTCP), Port: ptr(intstr.FromInt32(RuntimePort))}},
				}},
				Egress: []networkingv1.NetworkPolicyEgressRule{},
			},
		}
	}
	m.StatefulSet = b.statefulSet(id, meta, t, res, runtimeImage, envNames, tokenHash(req.Token))
	return t, m, nil
}

// envKey is the Secret key of the i-th env value (in name order): env
// names allow characters Secret keys do not.
func envKey(i int) string { return "env-" + strconv.Itoa(i) }

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:16])
}

// statefulSet is the workspace's StatefulSet.
func (b *Backend) statefulSet(id string, meta metav1.ObjectMeta, t Template, res resources, runtimeImage string, envNames []string, tokenSum string) *appsv1.StatefulSet {
	name := Name(id)
	pull := corev1.PullPolicy(b.cfg.ImagePullPolicy)
	env := make([]corev1.EnvVar, 0, len(envNames)+1)
	for i, k := range envNames {
		env = append(env, corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: envKey(i)},
		}})
	}
	env = append(env, corev1.EnvVar{Name: tokenKey, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: tokenKey},
	}})
	// The runtime's own firewall, on every cluster and before any command
	// runs, closes the pod to connections opened towards it but to the
	// runtime's port: no other pod, another tenant's above all, reaches
	// what the workspace serves (the tenant's NetworkPolicy says the same
	// where the network plugin enforces policies). It needs lockdownCaps
	// and drops them before it serves.
	command := []string{RuntimePath, "--listen=:" + strconv.Itoa(RuntimePort), "--root=" + Workdir, "--fs=" + protocol.FSWhole, "--ingress=restrict"}
	caps := append(slices.Clone(shellCaps), lockdownCaps...)
	if t.Network.Egress == EgressDenyAll {
		// The NetworkPolicy closes egress where the network plugin
		// enforces policies; the runtime's own firewall closes it on every
		// cluster, before any command runs.
		command = append(command, "--egress=deny")
	}
	if t.User != "" {
		command = append(command, "--user="+t.User)
	}
	limits := corev1.ResourceList{}
	if res.hasCPULimit {
		limits[corev1.ResourceCPU] = res.cpuLimit
	}
	if res.hasMemLimit {
		limits[corev1.ResourceMemory] = res.memLimit
	}
	requests := corev1.ResourceList{corev1.ResourceCPU: res.cpuRequest, corev1.ResourceMemory: res.memRequest}
	podLabels := map[string]string{}
	for k, v := range meta.Labels {
		podLabels[k] = v
	}
	secCtx := func(c []corev1.Capability, readOnlyRoot bool) *corev1.SecurityContext {
		return &corev1.SecurityContext{
			RunAsUser:                ptr(int64(0)),
			RunAsGroup:               ptr(int64(0)),
			AllowPrivilegeEscalation: ptr(false),
			Privileged:               ptr(false),
			ReadOnlyRootFilesystem:   ptr(readOnlyRoot),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: c},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}
	spec := corev1.PodSpec{
		AutomountServiceAccountToken:  ptr(false),
		EnableServiceLinks:            ptr(false),
		TerminationGracePeriodSeconds: ptr(int64(podGracePeriod)),
		RestartPolicy:                 corev1.RestartPolicyAlways,
		NodeSelector:                  t.NodeSelector,
		Tolerations:                   t.Tolerations,
		InitContainers: []corev1.Container{{
			Name:            initName,
			Image:           runtimeImage,
			ImagePullPolicy: pull,
			Command:         []string{RuntimePath, "install", "/target/primer-runtime"},
			VolumeMounts:    []corev1.VolumeMount{{Name: runtimeVolume, MountPath: "/target"}},
			SecurityContext: secCtx(nil, true),
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: res.cpuRequest, corev1.ResourceMemory: res.memRequest},
			},
		}},
		Containers: []corev1.Container{{
			Name:            containerName,
			Image:           t.Image,
			ImagePullPolicy: pull,
			Command:         command,
			Args:            []string{},
			WorkingDir:      Workdir,
			Env:             env,
			Ports:           []corev1.ContainerPort{{Name: "runtime", ContainerPort: RuntimePort, Protocol: corev1.ProtocolTCP}},
			VolumeMounts: []corev1.VolumeMount{
				{Name: volumeName, MountPath: Workdir},
				{Name: runtimeVolume, MountPath: "/.primer", ReadOnly: true},
			},
			Resources:       corev1.ResourceRequirements{Limits: limits, Requests: requests},
			SecurityContext: secCtx(caps, false),
		}},
		Volumes: []corev1.Volume{
			{Name: volumeName, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}},
			{Name: runtimeVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("64Mi"))}}},
		},
	}
	if t.RuntimeClass != "" {
		spec.RuntimeClassName = ptr(t.RuntimeClass)
	}
	return &appsv1.StatefulSet{
		ObjectMeta: meta,
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr(int32(1)),
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{LabelWorkspace: id}},
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: map[string]string{annotationToken: tokenSum}},
				Spec:       spec,
			},
		},
	}
}
