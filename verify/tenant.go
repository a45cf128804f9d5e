package verify

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The tenant-side CSI release installs the upstream proxmox-csi-plugin
// chart, whose node plugin DaemonSet carries app.kubernetes.io/name:
// proxmox-csi-plugin in kube-system.
const (
	LabelCSIName  = "app.kubernetes.io/name"
	CSIPluginName = "proxmox-csi-plugin"
	CSINamespace  = "kube-system"
)

// tenant reads the tenant's Nodes and, when the cluster runs the CSI
// controller, its CSI node plugin Pods by Node.
func (g gatherer) tenant(ctx context.Context, t *Tenant, csi bool) error {
	var nodes corev1.NodeList
	if err := g.src.Tenant.List(ctx, &nodes); err != nil {
		return fmt.Errorf("cannot list the tenant's Nodes: %w", err)
	}
	t.Nodes = make([]Node, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		t.Nodes = append(t.Nodes, nodeOf(n))
	}
	if !csi {
		return nil
	}
	var err error
	t.CSINodes, t.CSIDaemonSets, err = csiNodePods(ctx, g.src.Tenant)
	return err
}

func nodeOf(n corev1.Node) Node {
	out := Node{Name: n.Name, ProviderID: n.Spec.ProviderID, Labels: n.Labels}
	if q, ok := n.Status.Capacity[corev1.ResourceEphemeralStorage]; ok {
		out.EphemeralStorage = q.Value()
	}
	for _, t := range n.Spec.Taints {
		if t.Key == TaintUninitialized {
			out.Uninitialized = true
		}
	}
	return out
}

// csiNodePods maps each Node to the Pods of the tenant's CSI node plugin
// DaemonSets on it, and names those DaemonSets.
func csiNodePods(ctx context.Context, tenant client.Reader) (map[string][]CSINodePod, []string, error) {
	var sets appsv1.DaemonSetList
	if err := tenant.List(ctx, &sets, client.InNamespace(CSINamespace), client.MatchingLabels{LabelCSIName: CSIPluginName}); err != nil {
		return nil, nil, fmt.Errorf("cannot list the tenant's CSI node plugin DaemonSets: %w", err)
	}
	byNode := map[string][]CSINodePod{}
	var names []string
	for _, ds := range sets.Items {
		names = append(names, ds.Name)
		sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		if err != nil {
			return nil, nil, fmt.Errorf("DaemonSet %s/%s: %w", CSINamespace, ds.Name, err)
		}
		var pods corev1.PodList
		if err := tenant.List(ctx, &pods, client.InNamespace(CSINamespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, nil, fmt.Errorf("cannot list the Pods of DaemonSet %s/%s: %w", CSINamespace, ds.Name, err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], podState(p))
			}
		}
	}
	sort.Strings(names)
	return byNode, names, nil
}

func podState(p corev1.Pod) CSINodePod {
	out := CSINodePod{Name: p.Name, Reason: string(p.Status.Phase)}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			out.Ready = true
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			out.Reason = cs.State.Waiting.Reason
			break
		}
	}
	return out
}
