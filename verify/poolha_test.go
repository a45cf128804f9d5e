package verify

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

var (
	machineGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}
	pmGVK      = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha2", Kind: "ProxmoxMachine"}
)

func haScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	pool := schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: "v1alpha2", Kind: "InClusterIPPool"}
	for _, k := range []schema.GroupVersionKind{machineGVK, pmGVK, pool} {
		s.AddKnownTypeWithName(k, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(k.GroupVersion().WithKind(k.Kind+"List"), &unstructured.UnstructuredList{})
	}
	return s
}

// haWorker is a Machine of pool pool (with proxmox.ha when ha) whose
// ProxmoxMachine capmox placed on node.
func haWorker(name, pool, node string, ha bool) []client.Object {
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(machineGVK)
	m.SetNamespace("tenant-a")
	m.SetName(name)
	labels := map[string]string{LabelClusterName: "kubernetes-a", labelDeploymentName: pool}
	if ha {
		labels[labelHA] = "true"
	}
	m.SetLabels(labels)
	_ = unstructured.SetNestedField(m.Object, "pm-"+name, "spec", "infrastructureRef", "name")
	pm := &unstructured.Unstructured{}
	pm.SetGroupVersionKind(pmGVK)
	pm.SetNamespace("tenant-a")
	pm.SetName("pm-" + name)
	_ = unstructured.SetNestedField(pm.Object, node, "status", "proxmoxNode")
	return []client.Object{m, pm}
}

func TestPoolHALabelsAreTheRenderers(t *testing.T) {
	if labelHA != capmoxrender.LabelHA || labelDeploymentName != capmoxrender.LabelDeploymentName {
		t.Errorf("verify selects by %q and %q, the render writes %q and %q", labelHA, labelDeploymentName, capmoxrender.LabelHA, capmoxrender.LabelDeploymentName)
	}
}

// TestCheckPoolHA: workers of an HA pool on one node are a warning naming
// them and the node; apart, or without HA, they are none.
func TestCheckPoolHA(t *testing.T) {
	var objs []client.Object
	for _, w := range [][]client.Object{
		haWorker("ha-1", "md-ha", "pve1", true), haWorker("ha-2", "md-ha", "pve1", true), haWorker("ha-3", "md-ha", "pve2", true),
		haWorker("apart-1", "md-apart", "pve1", true), haWorker("apart-2", "md-apart", "pve2", true),
		haWorker("plain-1", "md-plain", "pve3", false), haWorker("plain-2", "md-plain", "pve3", false),
	} {
		objs = append(objs, w...)
	}
	got, err := checkOnFake(haScheme(), objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Code != CodeHAWorkersShareNode || !got[0].Warning ||
		!strings.Contains(got[0].Problem, "pool tenant-a/md-ha has proxmox.ha, and its workers ha-1, ha-2 share Proxmox node pve1: losing it takes 2 of them") {
		t.Errorf("findings %+v", got)
	}
}

// TestCheckHAResources: an HA resource whose Machine is gone is an error;
// one whose Machine is there, or of another namespace, is none.
func TestCheckHAResources(t *testing.T) {
	s := haScheme()
	mapper := meta.NewDefaultRESTMapper(s.PreferredVersionAllGroups())
	for gvk := range s.AllKnownTypes() {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(haWorker("ha-1", "md-ha", "pve1", true)...).Build()
	got, err := CheckHAResources(context.Background(), c, c.RESTMapper(), "tenant-a", []HAResource{
		{SID: "vm:101", Machine: "tenant-a/ha-1"}, {SID: "vm:102", Machine: "tenant-a/ha-gone"}, {SID: "vm:103", Machine: "tenant-b/other"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Code != CodeHAResourceWithoutMachine || got[0].Warning ||
		!strings.Contains(got[0].Problem, "HA resource vm:102 was made for Machine tenant-a/ha-gone, which is gone") {
		t.Errorf("findings %+v", got)
	}
}
