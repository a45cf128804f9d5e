package network

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

// Key names a namespaced object.
type Key = client.ObjectKey

// MachineKinds are the capmox ProxmoxMachine versions the controller reads:
// v1alpha1 (capmox v0.7) and v1alpha2 (capmox v0.8 and later).
var MachineKinds = []schema.GroupVersionKind{
	{Group: capmox.Group, Version: "v1alpha1", Kind: capmox.KindProxmoxMachine},
	{Group: capmox.Group, Version: "v1alpha2", Kind: capmox.KindProxmoxMachine},
}

// vlanInfo is an observed Kube-OVN Vlan: what the allocator reads
// (kubestore.ObservedVlan) and what the network's decisions add.
type vlanInfo struct {
	vlanalloc.Vlan
	Finalizer bool
	Timers    bool
	Deleting  bool
	Conflict  bool
}

func observeVlan(v *kubeovnv1.Vlan) vlanInfo {
	_, timers := v.Annotations[v1alpha1.AnnotationDeletedSubnets]
	return vlanInfo{
		Vlan:      kubestore.ObservedVlan(v),
		Finalizer: controllerutil.ContainsFinalizer(v, v1alpha1.Finalizer),
		Timers:    timers,
		Deleting:  !v.DeletionTimestamp.IsZero(),
		Conflict:  v.Status.Conflict,
	}
}

// ours reports whether the Vlan carries the labels of a network.
func (v vlanInfo) ours() bool { return v.Network.Namespace != "" && v.Network.Name != "" }

// networkInfo is an observed ProxmoxNetwork.
type networkInfo struct {
	Key      Key
	Zone     string
	Subnet   string
	Pool     string
	VLAN     int32
	Bridge   string
	Deleting bool
	Held     bool // carries the network finalizer
}

func observeNetwork(n *v1alpha1.ProxmoxNetwork) networkInfo {
	return networkInfo{
		Key:      client.ObjectKeyFromObject(n),
		Zone:     n.Spec.Zone,
		Subnet:   n.Spec.Subnet,
		Pool:     n.Spec.IPPool,
		VLAN:     n.Status.VLAN,
		Bridge:   n.Status.Bridge,
		Deleting: !n.DeletionTimestamp.IsZero(),
		Held:     controllerutil.ContainsFinalizer(n, v1alpha1.Finalizer),
	}
}

// poolRefOf returns the InClusterIPPool an IPAddress was allocated from, or
// "" when it comes from another kind of pool.
func poolRefOf(a *capiipam.IPAddress) string {
	r := a.Spec.PoolRef
	if r.Kind != capmox.KindInClusterIPPool || r.APIGroup != capmox.IPAMGroup {
		return ""
	}
	return r.Name
}

// poolRefOfUnstructured reads spec.poolRef of an IPAddress of any version
// (v1beta1 and v1beta2 spell it alike).
func poolRefOfUnstructured(u *unstructured.Unstructured) string {
	ref, _, _ := unstructured.NestedStringMap(u.Object, "spec", "poolRef")
	if ref["kind"] != capmox.KindInClusterIPPool || ref["apiGroup"] != capmox.IPAMGroup {
		return ""
	}
	return ref["name"]
}

// machinePools returns the InClusterIPPools a ProxmoxMachine's NICs draw
// from. It reads every place either capmox version keeps a pool reference,
// whatever apiVersion the object was served as: an API server without a
// conversion webhook serves one stored shape under both versions.
func machinePools(u *unstructured.Unstructured) []string {
	var refs []map[string]any
	if m, ok, _ := unstructured.NestedMap(u.Object, "spec", "network", "default", "ipv4PoolRef"); ok {
		refs = append(refs, m)
	}
	devs, _, _ := unstructured.NestedSlice(u.Object, "spec", "network", "additionalDevices")
	for _, d := range devs {
		if dm, ok := d.(map[string]any); ok {
			if m, ok, _ := unstructured.NestedMap(dm, "ipv4PoolRef"); ok {
				refs = append(refs, m)
			}
		}
	}
	devs, _, _ = unstructured.NestedSlice(u.Object, "spec", "network", "networkDevices")
	for _, d := range devs {
		dm, ok := d.(map[string]any)
		if !ok {
			continue
		}
		list, _, _ := unstructured.NestedSlice(dm, "ipPoolRef")
		for _, r := range list {
			if m, ok := r.(map[string]any); ok {
				refs = append(refs, m)
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, r := range refs {
		name, _ := r["name"].(string)
		kind, _ := r["kind"].(string)
		group, _ := r["apiGroup"].(string)
		if name == "" || kind != capmox.KindInClusterIPPool || (group != "" && group != capmox.IPAMGroup) || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	return out
}

// isMachine reports whether u is a capmox ProxmoxMachine.
func isMachine(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == capmox.Group && gvk.Kind == capmox.KindProxmoxMachine
}

// isIPAddress reports whether u is a Cluster API IPAddress.
func isIPAddress(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == capiipam.GroupVersion.Group && gvk.Kind == "IPAddress"
}
