package verify

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// CodeGatewayNoFailover is the finding of a ProxmoxNetwork whose gateway
// group cannot fail over.
const CodeGatewayNoFailover = "GatewayNoFailover"

// checkGateways names each ProxmoxNetwork of the namespace whose
// GatewayFailover condition is False with reason NoFailover: its VMs keep
// their gateway only while the active chassis lives. Such a finding is a
// warning, since the workers come up regardless.
func checkGateways(s *Snapshot) []Finding {
	namespace := s.Target.Namespace
	var out []Finding
	for _, n := range s.Management.Networks {
		c := n.Failover
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNoFailover {
			continue
		}
		out = append(out, Finding{Code: CodeGatewayNoFailover, Warning: true,
			Problem: fmt.Sprintf("ProxmoxNetwork %s/%s: the gateway group cannot fail over: %s", namespace, n.Name, termsafe.Cut(c.Message)),
			Fix: fmt.Sprintf("make a third node a trunk node of the zone's provider network, or run a workload of the VPC on a chassis outside the group so it keeps a BFD session up; "+
				"kubectl -n %s get proxmoxnetwork %s -o jsonpath='{.status.conditions[?(@.type==\"%s\")]}' shows when it is gone",
				namespace, n.Name, v1alpha1.ConditionGatewayFailover)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Problem < out[j].Problem })
	return out
}
