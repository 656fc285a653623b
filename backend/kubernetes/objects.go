package kubernetes

import (
	"context"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/primerhq/primer/backend"
)

// Objects lists the workspace's objects in the namespace: everything the
// backend names after it, made by the backend or by hand (tests and the
// reconciler use it).
func (b *Backend) Objects(ctx context.Context, id string) ([]string, error) {
	return b.objects(ctx, id, true)
}

// objects lists the workspace's StatefulSet and pod, and with all its
// other objects, by name: one GET each.
func (b *Backend) objects(ctx context.Context, id string, all bool) ([]string, error) {
	ns, name := b.cfg.Namespace, Name(id)
	get := metav1.GetOptions{}
	kinds := []struct {
		kind, name string
		get        func() error
	}{
		{"statefulset", name, func() error { _, err := b.cs.AppsV1().StatefulSets(ns).Get(ctx, name, get); return err }},
		{"pod", PodName(id), func() error { _, err := b.cs.CoreV1().Pods(ns).Get(ctx, PodName(id), get); return err }},
		{"pvc", name, func() error { _, err := b.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, get); return err }},
		{"secret", name, func() error { _, err := b.cs.CoreV1().Secrets(ns).Get(ctx, name, get); return err }},
		{"service", name, func() error { _, err := b.cs.CoreV1().Services(ns).Get(ctx, name, get); return err }},
		{"networkpolicy", name, func() error { _, err := b.cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, get); return err }},
	}
	if !all {
		kinds = kinds[:2]
	}
	var out []string
	for _, k := range kinds {
		switch err := k.get(); {
		case err == nil:
			out = append(out, k.kind+" "+k.name)
		case !apierrors.IsNotFound(err):
			return nil, b.apiErr(err, "workspace %s: get %s", id, k.kind)
		}
	}
	return out, nil
}

// List implements backend.Lister: the workspaces whose StatefulSet, PVC or
// Secret in the namespace is labelled as managed by this installation and
// named as the backend names them.
func (b *Backend) List(ctx context.Context) ([]backend.Listed, error) {
	ns := b.cfg.Namespace
	sel := metav1.ListOptions{LabelSelector: LabelManaged + "=true"}
	byID := map[string]*backend.Listed{}
	add := func(kind string, o metav1.Object) {
		labels := o.GetLabels()
		id := labels[LabelWorkspace]
		if !backend.IsWorkspaceID(id) || checkID(id) != nil || labels[LabelInstallation] != b.opts.Installation || o.GetName() != Name(id) {
			return
		}
		l := byID[id]
		if l == nil {
			l = &backend.Listed{WorkspaceID: id}
			byID[id] = l
		}
		l.Objects = append(l.Objects, kind+" "+ns+"/"+o.GetName())
		if c := o.GetCreationTimestamp().Time; !c.IsZero() && (l.Created.IsZero() || c.Before(l.Created)) {
			l.Created = c
		}
	}
	sets, err := b.cs.AppsV1().StatefulSets(ns).List(ctx, sel)
	if err != nil {
		return nil, b.apiErr(err, "list StatefulSets")
	}
	for i := range sets.Items {
		add("statefulset", &sets.Items[i])
	}
	pvcs, err := b.cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
	if err != nil {
		return nil, b.apiErr(err, "list PVCs")
	}
	for i := range pvcs.Items {
		add("pvc", &pvcs.Items[i])
	}
	secrets, err := b.cs.CoreV1().Secrets(ns).List(ctx, sel)
	if err != nil {
		return nil, b.apiErr(err, "list Secrets")
	}
	for i := range secrets.Items {
		add("secret", &secrets.Items[i])
	}
	out := make([]backend.Listed, 0, len(byID))
	for _, l := range byID {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b backend.Listed) int { return strings.Compare(a.WorkspaceID, b.WorkspaceID) })
	return out, nil
}
