package network

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// Load lists every object kind the cache indexes through r and records it,
// without calling OnChange. ProxmoxMachines are listed in each of machineKinds
// (the same object served under two versions counts once); a kind or an
// IPAddress version the API server does not serve is skipped.
func (c *Cache) Load(ctx context.Context, r client.Reader, machineKinds []schema.GroupVersionKind) error {
	var vlans kubeovnv1.VlanList
	if err := r.List(ctx, &vlans); err != nil {
		return fmt.Errorf("cannot list Kube-OVN Vlans: %w", err)
	}
	var claims v1alpha1.ProxmoxVLANClaimList
	if err := r.List(ctx, &claims); err != nil {
		return fmt.Errorf("cannot list ProxmoxVLANClaims: %w", err)
	}
	var nets v1alpha1.ProxmoxNetworkList
	if err := r.List(ctx, &nets); err != nil {
		return fmt.Errorf("cannot list ProxmoxNetworks: %w", err)
	}
	var addrs capiipam.IPAddressList
	if err := r.List(ctx, &addrs); err != nil && !meta.IsNoMatchError(err) {
		return fmt.Errorf("cannot list IPAddresses: %w", err)
	}
	machines, err := listMachines(ctx, r, machineKinds, nil)
	if err != nil {
		return err
	}
	for i := range vlans.Items {
		c.record(&vlans.Items[i], false)
	}
	for i := range claims.Items {
		c.record(&claims.Items[i], false)
	}
	for i := range nets.Items {
		c.record(&nets.Items[i], false)
	}
	for i := range addrs.Items {
		c.record(&addrs.Items[i], false)
	}
	for i := range machines {
		c.record(&machines[i], false)
	}
	return nil
}

// listMachines lists ProxmoxMachines of every kind in kinds (all namespaces,
// or those opts select), once per object.
func listMachines(ctx context.Context, r client.Reader, kinds []schema.GroupVersionKind, opts []client.ListOption) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	seen := map[string]bool{}
	for _, gvk := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.List(ctx, list, opts...); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("cannot list %s %s: %w", gvk.Kind, gvk.Version, err)
		}
		for _, item := range list.Items {
			id := item.GetNamespace() + "/" + item.GetName()
			if seen[id] {
				continue
			}
			seen[id] = true
			item.SetGroupVersionKind(gvk)
			out = append(out, item)
		}
	}
	return out, nil
}
