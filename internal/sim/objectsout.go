package sim

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pxsubstrate/pxsubstrate/network"
)

// dumpKinds are the kinds a report prints, in this order.
var dumpKinds = append([]schema.GroupVersionKind{
	{Version: "v1", Kind: "Namespace"},
	{Group: "kubeovn.io", Version: "v1", Kind: "ProviderNetwork"},
	{Group: "proxmox.cozystack.io", Version: "v1alpha1", Kind: "ProxmoxNetworkZone"},
	{Group: "proxmox.cozystack.io", Version: "v1alpha1", Kind: "ProxmoxNetwork"},
	{Group: "proxmox.cozystack.io", Version: "v1alpha1", Kind: "ProxmoxVLANClaim"},
	{Group: "kubeovn.io", Version: "v1", Kind: "Vlan"},
	{Group: "kubeovn.io", Version: "v1", Kind: "Subnet"},
	{Group: "ipam.cluster.x-k8s.io", Version: "v1alpha2", Kind: "InClusterIPPool"},
	{Group: "ipam.cluster.x-k8s.io", Version: "v1beta2", Kind: "IPAddress"},
}, network.MachineKinds...)

// Objects returns every object of the simulated world, sorted by kind (in
// dumpKinds order), namespace and name, without resourceVersion.
func (h *Harness) Objects(ctx context.Context) ([]map[string]any, error) {
	var out []map[string]any
	for _, gvk := range dumpKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := h.store.List(ctx, list); err != nil {
			return nil, fmt.Errorf("cannot list %s: %w", gvk.Kind, err)
		}
		items := list.Items
		sort.Slice(items, func(i, j int) bool {
			if items[i].GetNamespace() != items[j].GetNamespace() {
				return items[i].GetNamespace() < items[j].GetNamespace()
			}
			return items[i].GetName() < items[j].GetName()
		})
		for _, it := range items {
			if it.GetAPIVersion() != gvk.GroupVersion().String() {
				continue // the same object listed under another served version
			}
			unstructured.RemoveNestedField(it.Object, "metadata", "resourceVersion")
			if it.GetDeletionTimestamp() != nil {
				if at, ok := h.target.deletedAt(it.GetNamespace(), it.GetName(), string(it.GetUID())); ok {
					_ = unstructured.SetNestedField(it.Object, at.UTC().Format(time.RFC3339), "metadata", "deletionTimestamp")
				}
			}
			unstructured.RemoveNestedField(it.Object, "metadata", "managedFields")
			out = append(out, it.Object)
		}
	}
	return out, nil
}
