package sim

import (
	"context"
	"fmt"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// World plays the other controllers of a cluster, reduced to what the
// network lifecycle depends on:
//
//   - Kube-OVN lists on each Vlan the subnets whose spec.vlan names it
//     (Vlan.status.subnets), prunes a subnet once the Subnet object is gone
//     (unless PruneSubnets is off, as when a kube-ovn-controller restart
//     loses the delete), reports a subnet Ready once its Vlan exists, and
//     marks every Vlan that shares an ID on its provider network with an
//     older one as conflicting;
//   - with an NB, Kube-OVN also keeps, for every Subnet of a VPC, the VPC's
//     Logical_Router and the subnet's Logical_Router_Port "<vpc>-<subnet>"
//     from the moment the Subnet exists until it is gone;
//   - the in-cluster IPAM provider holds each pool with its ProtectPool
//     finalizer until the pool is deleted and has no IPAddress left.
//
// React applies all of it once and reports whether it changed anything.
type World struct {
	// PruneSubnets makes Kube-OVN prune deleted subnets from their Vlan.
	PruneSubnets bool
	// NB is the OVN northbound database Kube-OVN writes router ports to;
	// nil means the world has none.
	NB RouterPorts
}

// React applies one round of the world's behaviour through c. It lists
// the Vlans and Subnets once for the round: Kube-OVN's Vlan and Subnet
// behaviours only write statuses, which neither reads.
func (w *World) React(ctx context.Context, c client.Client) (bool, error) {
	var vlans kubeovnv1.VlanList
	var subnets kubeovnv1.SubnetList
	if err := c.List(ctx, &vlans); err != nil {
		return false, fmt.Errorf("cannot list Vlans: %w", err)
	}
	if err := c.List(ctx, &subnets); err != nil {
		return false, fmt.Errorf("cannot list Subnets: %w", err)
	}
	changed := false
	for _, f := range []func() (bool, error){
		func() (bool, error) { return w.routerPorts(ctx, c, subnets.Items) },
		func() (bool, error) { return w.vlans(ctx, c, vlans.Items, subnets.Items) },
		func() (bool, error) { return w.subnets(ctx, c, vlans.Items, subnets.Items) },
		func() (bool, error) { return w.pools(ctx, c) },
	} {
		ch, err := f()
		if err != nil {
			return changed, err
		}
		changed = changed || ch
	}
	return changed, nil
}

func (w *World) vlans(ctx context.Context, c client.Client, vlans []kubeovnv1.Vlan, subnets []kubeovnv1.Subnet) (bool, error) {
	exists := make(map[string]bool, len(subnets))
	binds := map[string][]string{}
	for _, s := range subnets {
		exists[s.Name] = true
		if s.Spec.Vlan != "" {
			binds[s.Spec.Vlan] = append(binds[s.Spec.Vlan], s.Name)
		}
	}
	owner := conflictOwners(vlans)
	changed := false
	for i := range vlans {
		v := &vlans[i]
		want := slices.Clone(v.Status.Subnets)
		for _, s := range binds[v.Name] {
			if !slices.Contains(want, s) {
				want = append(want, s)
			}
		}
		if w.PruneSubnets {
			want = slices.DeleteFunc(want, func(s string) bool { return !exists[s] })
		}
		sort.Strings(want)
		conflict := v.Spec.ID != 0 && owner[idKey(v)] != v.Name
		if slices.Equal(want, v.Status.Subnets) && conflict == v.Status.Conflict {
			continue
		}
		// The listed item is this round's own copy: write it.
		v.Status.Subnets, v.Status.Conflict = want, conflict
		if err := c.Status().Update(ctx, v); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return changed, fmt.Errorf("cannot update the status of Vlan %q: %w", v.Name, err)
		}
		changed = true
	}
	return changed, nil
}

// vlanID is a VLAN ID on a provider network.
type vlanID struct {
	provider string
	id       int
}

func idKey(v *kubeovnv1.Vlan) vlanID { return vlanID{v.Spec.Provider, v.Spec.ID} }

// conflictOwners picks, per (provider network, ID), the Vlan Kube-OVN keeps:
// the oldest, then the first by name. ID 0 never conflicts.
func conflictOwners(vlans []kubeovnv1.Vlan) map[vlanID]string {
	type held struct {
		name    string
		created metav1.Time
	}
	first := map[vlanID]held{}
	for i := range vlans {
		v := &vlans[i]
		k := idKey(v)
		h, ok := first[k]
		if !ok || v.CreationTimestamp.Before(&h.created) || (v.CreationTimestamp.Equal(&h.created) && v.Name < h.name) {
			first[k] = held{v.Name, v.CreationTimestamp}
		}
	}
	owner := make(map[vlanID]string, len(first))
	for k, h := range first {
		owner[k] = h.name
	}
	return owner
}

func (w *World) subnets(ctx context.Context, c client.Client, vlans []kubeovnv1.Vlan, subnets []kubeovnv1.Subnet) (bool, error) {
	vlanExists := make(map[string]bool, len(vlans))
	for _, v := range vlans {
		vlanExists[v.Name] = true
	}
	changed := false
	for i := range subnets {
		s := &subnets[i]
		status, msg := "True", ""
		if s.Spec.Vlan != "" && !vlanExists[s.Spec.Vlan] {
			status, msg = "False", fmt.Sprintf("vlan %q not found", s.Spec.Vlan)
		}
		want := []kubeovnv1.SubnetCondition{{Type: "Validated", Status: "True"}, {Type: "Ready", Status: status, Message: msg}}
		if slices.Equal(want, s.Status.Conditions) {
			continue
		}
		s.Status.Conditions = want
		if err := c.Status().Update(ctx, s); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return changed, fmt.Errorf("cannot update the status of Subnet %q: %w", s.Name, err)
		}
		changed = true
	}
	return changed, nil
}

func (w *World) pools(ctx context.Context, c client.Client) (bool, error) {
	var pools ipamv1alpha2.InClusterIPPoolList
	var addrs capiipam.IPAddressList
	if err := c.List(ctx, &pools); err != nil {
		return false, fmt.Errorf("cannot list InClusterIPPools: %w", err)
	}
	if err := c.List(ctx, &addrs); err != nil {
		return false, fmt.Errorf("cannot list IPAddresses: %w", err)
	}
	used := map[client.ObjectKey]bool{}
	for _, a := range addrs.Items {
		used[client.ObjectKey{Namespace: a.Namespace, Name: a.Spec.PoolRef.Name}] = true
	}
	changed := false
	for i := range pools.Items {
		p := &pools.Items[i]
		has := controllerutil.ContainsFinalizer(p, network.ProtectPoolFinalizer)
		deleting := !p.DeletionTimestamp.IsZero()
		want := has
		switch {
		case !deleting && !has:
			want = true
		case deleting && has && !used[client.ObjectKeyFromObject(p)]:
			want = false
		}
		if want == has {
			continue
		}
		patch := client.MergeFrom(p.DeepCopy())
		if want {
			controllerutil.AddFinalizer(p, network.ProtectPoolFinalizer)
		} else {
			controllerutil.RemoveFinalizer(p, network.ProtectPoolFinalizer)
		}
		if err := c.Patch(ctx, p, patch); err != nil && !apierrors.IsNotFound(err) {
			return changed, fmt.Errorf("cannot update the finalizers of pool %s: %w", client.ObjectKeyFromObject(p), err)
		}
		changed = true
	}
	return changed, nil
}
