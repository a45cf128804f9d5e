package capmoxrender_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

func livePMT(ns, name, owner string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "ProxmoxMachineTemplate",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"numCores": int64(1)}}},
	}}
	if owner != "" {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "name": owner, "uid": "u1"}}, "metadata", "ownerReferences")
	}
	return u
}

func liveMS(ns, name, kind, template string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"infrastructureRef": map[string]any{"kind": kind, "name": template}}}},
	}}
}

func TestTemplateRetention(t *testing.T) {
	const ns, cl = "tenant-e2e", "kubernetes-k8s-e2e"
	l := &capmoxrender.Objects{}
	for _, o := range []*unstructured.Unstructured{
		livePMT(ns, cl+"-md0-aaaaaa", cl),       // referenced, ours: kept
		livePMT(ns, cl+"-md0-bbbbbb", cl),       // not referenced: dropped
		livePMT(ns, cl+"-md0-large-cccccc", cl), // sibling pool "md0-large": not ours
		livePMT(ns, cl+"-md0-dddddd", ""),       // no Cluster owner: not ours
		livePMT("other", cl+"-md0-eeeeee", cl),  // other namespace
		liveMS(ns, "ms1", "ProxmoxMachineTemplate", cl+"-md0-aaaaaa"),
		liveMS(ns, "ms2", "ProxmoxMachineTemplate", cl+"-md0-large-cccccc"),
		liveMS(ns, "ms3", "ProxmoxMachineTemplate", cl+"-md0-dddddd"),
		liveMS(ns, "ms4", "KubevirtMachineTemplate", cl+"-md0-bbbbbb"),
		liveMS("other", "ms5", "ProxmoxMachineTemplate", cl+"-md0-eeeeee"),
	} {
		l.Add(o)
	}
	objs, err := capmoxrender.RenderNodes(context.Background(), validNodes(), capmoxrender.Options{Templates: l})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
	}
	current := objs[0].GetName()
	l.Add(livePMT(ns, current, cl))
	l.Add(liveMS(ns, "ms-current", "ProxmoxMachineTemplate", current))
	again, err := capmoxrender.RenderNodes(context.Background(), validNodes(), capmoxrender.Options{Templates: l})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ProxmoxMachineTemplate/" + current, "TalosConfigTemplate/" + objs[1].GetName(), "MachineDeployment/" + cl + "-md0", "MachineHealthCheck/" + cl + "-md0", "ProxmoxMachineTemplate/" + cl + "-md0-aaaaaa",
		"ServiceAccount/" + cl + "-md0-hosts", "Role/" + cl + "-md0-hosts", "RoleBinding/" + cl + "-md0-hosts", "Job/" + objs[1].GetName()}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("only the pool's referenced earlier template is kept (-want +got):\n%s", diff)
	}
	if len(again) != len(objs) {
		t.Errorf("the current template must not be emitted twice: %d objects, want %d", len(again), len(objs))
	}
	if diff := cmp.Diff(livePMT(ns, cl+"-md0-aaaaaa", "").Object["spec"], objs[4].Object["spec"]); diff != "" {
		t.Errorf("a kept template is re-emitted unchanged (-live +rendered):\n%s", diff)
	}
	l.Err = context.DeadlineExceeded
	if _, err := capmoxrender.RenderNodes(context.Background(), validNodes(), capmoxrender.Options{Templates: l}); err == nil {
		t.Error("a failing lookup must fail the render rather than drop templates")
	}
}
