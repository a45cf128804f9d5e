package nodeverify

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LabelClusterName selects a cluster's Machines.
const LabelClusterName = "cluster.x-k8s.io/cluster-name"

// Collect reads the tenant's Nodes and the cluster's Machines
// (cluster.x-k8s.io/<capiVersion>, in namespace, labelled with the cluster
// name) and judges them.
func Collect(ctx context.Context, mgmt, tenant client.Reader, namespace, cluster, capiVersion string) ([]Row, error) {
	var nodes corev1.NodeList
	if err := tenant.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("cannot list the tenant's Nodes: %w", err)
	}
	ml := &unstructured.UnstructuredList{}
	ml.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: capiVersion, Kind: "MachineList"})
	if err := mgmt.List(ctx, ml, client.InNamespace(namespace), client.MatchingLabels{LabelClusterName: cluster}); err != nil {
		return nil, fmt.Errorf("cannot list the Machines of %s/%s: %w", namespace, cluster, err)
	}
	ns := make([]Node, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		ns = append(ns, nodeOf(n))
	}
	ms := make([]Machine, 0, len(ml.Items))
	for _, m := range ml.Items {
		pid, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
		ref, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		ms = append(ms, Machine{Name: m.GetName(), ProviderID: pid, NodeRef: ref})
	}
	return Judge(ns, ms), nil
}

func nodeOf(n corev1.Node) Node {
	out := Node{Name: n.Name, ProviderID: n.Spec.ProviderID, Labels: n.Labels}
	for _, t := range n.Spec.Taints {
		if t.Key == TaintUninitialized {
			out.Uninitialized = true
		}
	}
	return out
}
