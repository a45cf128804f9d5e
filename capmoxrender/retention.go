package capmoxrender

import (
	"context"
	"fmt"
	"regexp"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// TemplateLookup lists what template retention needs. A nil TemplateLookup
// retains nothing (offline rendering).
type TemplateLookup interface {
	// ProxmoxMachineTemplates returns the live ProxmoxMachineTemplates of a
	// namespace, any served version.
	ProxmoxMachineTemplates(ctx context.Context, namespace string) ([]*unstructured.Unstructured, error)
	// MachineSetTemplates returns the infrastructureRef kind and name of
	// every live MachineSet of a namespace.
	MachineSetTemplates(ctx context.Context, namespace string) ([]TemplateRef, error)
}

// TemplateRef is a MachineSet's infrastructureRef.
type TemplateRef struct{ Kind, Name string }

// retainedTemplates returns the pool's earlier ProxmoxMachineTemplates that a
// MachineSet still references, so that rendering a new template does not
// delete the one a draining MachineSet clones from. A template is the pool's
// when its name is <release>-<pool>-<6 hex> (a sibling pool "gpu-large" never
// matches pool "gpu") and a Cluster named <release> owns it. Templates are
// looked up by their kind, ProxmoxMachineTemplate, never the KubeVirt one.
func retainedTemplates(ctx context.Context, l TemplateLookup, p nodesPlan, current string) ([]*unstructured.Unstructured, error) {
	if l == nil {
		return nil, nil
	}
	refs, err := l.MachineSetTemplates(ctx, p.ns)
	if err != nil {
		return nil, fmt.Errorf("cannot list the MachineSets of %s: %w: %w", p.ns, ErrLookup, err)
	}
	used := map[string]bool{}
	for _, r := range refs {
		if r.Kind == capmox.KindProxmoxMachineTemplate {
			used[r.Name] = true
		}
	}
	live, err := l.ProxmoxMachineTemplates(ctx, p.ns)
	if err != nil {
		return nil, fmt.Errorf("cannot list the ProxmoxMachineTemplates of %s: %w: %w", p.ns, ErrLookup, err)
	}
	ours := regexp.MustCompile("^" + regexp.QuoteMeta(p.release+"-"+p.group+"-") + "[0-9a-f]{6}$")
	var out []*unstructured.Unstructured
	for _, t := range live {
		if t.GetName() == current || !used[t.GetName()] || !ours.MatchString(t.GetName()) || !ownedByCluster(t, p.release) {
			continue
		}
		out = append(out, retained(t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

func ownedByCluster(u *unstructured.Unstructured, cluster string) bool {
	for _, o := range u.GetOwnerReferences() {
		if o.Kind == "Cluster" && o.Name == cluster {
			return true
		}
	}
	return false
}

// retained re-emits a live template as it is: same name, same spec.
func retained(t *unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(t.GetAPIVersion())
	u.SetKind(t.GetKind())
	u.SetNamespace(t.GetNamespace())
	u.SetName(t.GetName())
	if spec, ok := t.Object["spec"]; ok {
		u.Object["spec"] = runtimeDeepCopy(spec)
	}
	return u
}

func runtimeDeepCopy(v any) any {
	return (&unstructured.Unstructured{Object: map[string]any{"v": v}}).DeepCopy().Object["v"]
}

// ProxmoxMachineTemplates implements TemplateLookup.
func (o *Objects) ProxmoxMachineTemplates(_ context.Context, namespace string) ([]*unstructured.Unstructured, error) {
	if o.Err != nil {
		return nil, o.Err
	}
	var out []*unstructured.Unstructured
	for _, u := range o.items {
		gvk := u.GroupVersionKind()
		if gvk.Group == capmox.Group && gvk.Kind == capmox.KindProxmoxMachineTemplate && u.GetNamespace() == namespace {
			out = append(out, u)
		}
	}
	return out, nil
}

// MachineSetTemplates implements TemplateLookup.
func (o *Objects) MachineSetTemplates(_ context.Context, namespace string) ([]TemplateRef, error) {
	if o.Err != nil {
		return nil, o.Err
	}
	var out []TemplateRef
	for _, u := range o.items {
		gvk := u.GroupVersionKind()
		if gvk.Group != "cluster.x-k8s.io" || gvk.Kind != "MachineSet" || u.GetNamespace() != namespace {
			continue
		}
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "template", "spec", "infrastructureRef", "kind")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "template", "spec", "infrastructureRef", "name")
		out = append(out, TemplateRef{Kind: kind, Name: name})
	}
	return out, nil
}

var _ TemplateLookup = (*Objects)(nil)
