package verify

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	failover := func(name string, status metav1.ConditionStatus, reason string) Network {
		return Network{Name: name, Failover: &metav1.Condition{Type: v1alpha1.ConditionGatewayFailover, Status: status, Reason: reason, Message: "the gateway group has 2 chassis"}}
	}
	s := snapshotOf()
	s.Management.Networks = []Network{
		failover("two-trunks", metav1.ConditionFalse, v1alpha1.ReasonNoFailover),
		failover("three-trunks", metav1.ConditionTrue, v1alpha1.ReasonStandbyReady),
		failover("unassigned", metav1.ConditionUnknown, v1alpha1.ReasonGatewayNotAssigned),
		{Name: "new"},
	}
	got := Judge(s).Findings
	if len(got) != 1 {
		t.Fatalf("want one finding, for tenant-a/two-trunks only (StandbyReady, GatewayNotAssigned and no condition give none), got %+v", got)
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

// TestCheckGatewayFailoverNotServed: Gather reads the networks of the
// namespace alone, with their condition, and a management cluster
// without the ProxmoxNetwork CRD gives no gateway finding.
func TestCheckGatewayFailoverNotServed(t *testing.T) {
	target := Target{Namespace: "tenant-a", Cluster: "kubernetes-a", CAPIVersion: "v1beta2"}
	objs := []client.Object{network("tenant-a", "two-trunks", "False", v1alpha1.ReasonNoFailover), network("tenant-b", "elsewhere", "False", v1alpha1.ReasonNoFailover)}
	served := gather(t, management(t, []schema.GroupVersionKind{machineGVK, poolGVK, networkGVK}, objs...), nil, target)
	if got := codesOf(t, Judge(served).Findings); len(got) != 1 || got[0] != CodeGatewayNoFailover || !strings.Contains(Judge(served).Findings[0].Problem, "tenant-a/two-trunks") {
		t.Errorf("served: findings %+v, want tenant-a/two-trunks's alone", Judge(served).Findings)
	}
	bare := gather(t, management(t, []schema.GroupVersionKind{machineGVK, poolGVK}), nil, target)
	if got := codesOf(t, Judge(bare).Findings); len(got) != 0 {
		t.Errorf("a management cluster without the ProxmoxNetwork CRD gives no gateway finding, got %v", got)
	}
}
