package verify

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// network is a ProxmoxNetwork of namespace ns whose GatewayFailover
// condition has status and reason; an empty status leaves it out.
func network(ns, name, status, reason string) client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("ProxmoxNetwork"))
	u.SetNamespace(ns)
	u.SetName(name)
	if status != "" {
		_ = unstructured.SetNestedSlice(u.Object, []any{
			map[string]any{"type": v1alpha1.ConditionGatewayReady, "status": "True", "reason": v1alpha1.ReasonChassisAssigned,
				"message": "assigned", "lastTransitionTime": "2026-01-01T00:00:00Z"},
			map[string]any{"type": v1alpha1.ConditionGatewayFailover, "status": status, "reason": reason,
				"message": "the gateway group has 2 chassis", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		}, "status", "conditions")
	}
	return u
}

func TestCheckGatewayFailover(t *testing.T) {
	s := runtime.NewScheme()
	for _, k := range []schema.GroupVersionKind{
		{Group: "ipam.cluster.x-k8s.io", Version: "v1alpha2", Kind: "InClusterIPPool"},
		v1alpha1.GroupVersion.WithKind("ProxmoxNetwork"),
	} {
		s.AddKnownTypeWithName(k, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(k.GroupVersion().WithKind(k.Kind+"List"), &unstructured.UnstructuredList{})
	}
	objs := []client.Object{
		network("tenant-a", "two-trunks", "False", v1alpha1.ReasonNoFailover),
		network("tenant-a", "three-trunks", "True", v1alpha1.ReasonStandbyReady),
		network("tenant-a", "unassigned", "Unknown", v1alpha1.ReasonGatewayNotAssigned),
		network("tenant-a", "new", "", ""),
		network("tenant-b", "elsewhere", "False", v1alpha1.ReasonNoFailover),
	}
	got, err := checkOnFake(s, objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("want one finding, for tenant-a/two-trunks only (StandbyReady, GatewayNotAssigned, no condition and another namespace give none), got %+v", got)
	}
	f := got[0]
	if f.Code != CodeGatewayNoFailover || !f.Warning {
		t.Errorf("want a %s warning, got %+v", CodeGatewayNoFailover, f)
	}
	for _, want := range []string{"tenant-a/two-trunks", "the gateway group has 2 chassis"} {
		if !strings.Contains(f.Problem, want) {
			t.Errorf("problem %q does not name %q", f.Problem, want)
		}
	}
	for _, want := range []string{"third node a trunk node", "workload of the VPC", "get proxmoxnetwork two-trunks"} {
		if !strings.Contains(f.Fix, want) {
			t.Errorf("fix %q does not say %q", f.Fix, want)
		}
	}
}

func TestCheckGatewayFailoverNotServed(t *testing.T) {
	checkManagementCodes(t, func() *runtime.Scheme {
		s := runtime.NewScheme()
		k := schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: "v1alpha2", Kind: "InClusterIPPool"}
		s.AddKnownTypeWithName(k, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(k.GroupVersion().WithKind(k.Kind+"List"), &unstructured.UnstructuredList{})
		return s
	}(), nil, "a management cluster without the ProxmoxNetwork CRD gives no gateway finding", nil)
}
