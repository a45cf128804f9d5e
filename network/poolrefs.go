package network

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

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
