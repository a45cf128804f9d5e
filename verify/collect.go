package verify

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	pmv1alpha1 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha1"
	pmv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha2"
)

// LabelClusterName selects a cluster's Machines.
const LabelClusterName = capmox.LabelClusterName

// Collect reads the tenant's Nodes and the cluster's Machines
// (cluster.x-k8s.io/<t.CAPIVersion>, in t.Namespace, labelled with the
// cluster name) and judges them against what the cluster's CCM and CSI
// driver expect (JudgeWith): the CCM's region, and a ready CSI node plugin
// Pod on every Node when the cluster runs the CSI controller.
func Collect(ctx context.Context, mgmt, tenant client.Reader, t Target) ([]Row, error) {
	namespace, cluster, capiVersion := t.Namespace, t.Cluster, t.CAPIVersion
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
	vms, err := proxmoxMachines(ctx, mgmt, namespace, cluster, capiVersion)
	if err != nil {
		return nil, err
	}
	ms := make([]Machine, 0, len(ml.Items))
	for _, m := range ml.Items {
		pid, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
		ref, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		infra, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "name")
		vm := vms[infra]
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		ms = append(ms, Machine{Name: m.GetName(), ProviderID: pid, NodeRef: ref, VMID: vm.id, ProxmoxNode: vm.node,
			Address: machineAddress(m), Phase: phase, BootVolumeGiB: vm.bootSize})
	}
	e, err := expectOf(ctx, mgmt, tenant, t)
	if err != nil {
		return nil, err
	}
	return JudgeWith(ns, ms, e), nil
}

type vmInfo struct {
	id         int64
	node, pool string
	bootSize   int32
}

// proxmoxMachines maps ProxmoxMachine names to their VM id and PVE node,
// reading the capmox generation that pairs with capiVersion.
func proxmoxMachines(ctx context.Context, mgmt client.Reader, namespace, cluster, capiVersion string) (map[string]vmInfo, error) {
	version := "v1alpha1"
	if capiVersion == "v1beta2" {
		version = "v1alpha2"
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: capmox.Group, Version: version, Kind: capmox.KindProxmoxMachine + "List"})
	if err := mgmt.List(ctx, l, client.InNamespace(namespace), client.MatchingLabels{LabelClusterName: cluster}); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return map[string]vmInfo{}, nil
		}
		return nil, fmt.Errorf("cannot list the ProxmoxMachines of %s/%s: %w", namespace, cluster, err)
	}
	out := map[string]vmInfo{}
	for _, u := range l.Items {
		info, err := vmOf(u.Object, version)
		if err != nil {
			return nil, fmt.Errorf("cannot read ProxmoxMachine %s: %w", u.GetName(), err)
		}
		out[u.GetName()] = info
	}
	return out, nil
}

func vmOf(obj map[string]any, version string) (vmInfo, error) {
	if version == "v1alpha1" {
		var m pmv1alpha1.ProxmoxMachine
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &m); err != nil {
			return vmInfo{}, err
		}
		info := vmInfo{id: deref(m.Spec.VirtualMachineID), node: deref(m.Status.ProxmoxNode), pool: m.Spec.Pool}
		if m.Spec.Disks != nil && m.Spec.Disks.BootVolume != nil {
			info.bootSize = m.Spec.Disks.BootVolume.SizeGB
		}
		return info, nil
	}
	var m pmv1alpha2.ProxmoxMachine
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &m); err != nil {
		return vmInfo{}, err
	}
	info := vmInfo{id: deref(m.Spec.VirtualMachineID), node: deref(m.Status.ProxmoxNode), pool: deref(m.Spec.Pool)}
	if m.Spec.Disks != nil && m.Spec.Disks.BootVolume != nil {
		info.bootSize = m.Spec.Disks.BootVolume.SizeGB
	}
	return info, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
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

// machineAddress is the Machine's InternalIP from status.addresses, else
// the first address it reports, else "".
func machineAddress(m unstructured.Unstructured) string {
	addrs, _, _ := unstructured.NestedSlice(m.Object, "status", "addresses")
	first := ""
	for _, a := range addrs {
		entry, _ := a.(map[string]any)
		addr, _ := entry["address"].(string)
		if first == "" {
			first = addr
		}
		if t, _ := entry["type"].(string); t == "InternalIP" && addr != "" {
			return addr
		}
	}
	return first
}
