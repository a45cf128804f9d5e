package verify

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// CodeGatewayNoFailover is the finding of a ProxmoxNetwork whose gateway
// group cannot fail over.
const CodeGatewayNoFailover = "GatewayNoFailover"

// checkGateways reads the cluster namespace's ProxmoxNetworks and names each
// whose GatewayFailover condition is False with reason NoFailover: its VMs
// keep their gateway only while the active chassis lives. Such a finding is
// a warning, since the workers come up regardless. A management cluster
// that serves no ProxmoxNetwork gives no finding.
func checkGateways(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, namespace string) ([]ManagementFinding, error) {
	list, err := listServed(ctx, mgmt, mapper, schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "ProxmoxNetwork"}, []string{v1alpha1.GroupVersion.Version}, namespace)
	if err != nil || list == nil {
		return nil, err
	}
	var out []ManagementFinding
	for _, n := range list.Items {
		c, err := failoverCondition(n)
		if err != nil {
			return nil, fmt.Errorf("ProxmoxNetwork %s/%s: %w", namespace, n.GetName(), err)
		}
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNoFailover {
			continue
		}
		out = append(out, ManagementFinding{Code: CodeGatewayNoFailover, Warning: true,
			Problem: fmt.Sprintf("ProxmoxNetwork %s/%s: the gateway group cannot fail over: %s", namespace, n.GetName(), termsafe.Cut(c.Message)),
			Fix: fmt.Sprintf("make a third node a trunk node of the zone's provider network, or run a workload of the VPC on a chassis outside the group so it keeps a BFD session up; "+
				"kubectl -n %s get proxmoxnetwork %s -o jsonpath='{.status.conditions[?(@.type==\"%s\")]}' shows when it is gone",
				namespace, n.GetName(), v1alpha1.ConditionGatewayFailover)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Problem < out[j].Problem })
	return out, nil
}

// failoverCondition is the network's GatewayFailover condition, or nil.
func failoverCondition(n unstructured.Unstructured) (*metav1.Condition, error) {
	raw, _, err := unstructured.NestedSlice(n.Object, "status", "conditions")
	if err != nil {
		return nil, fmt.Errorf("status.conditions: %w", err)
	}
	for _, r := range raw {
		obj, ok := r.(map[string]any)
		if !ok || obj["type"] != v1alpha1.ConditionGatewayFailover {
			continue
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &c); err != nil {
			return nil, fmt.Errorf("status.conditions[%s]: %w", v1alpha1.ConditionGatewayFailover, err)
		}
		return &c, nil
	}
	return nil, nil
}
