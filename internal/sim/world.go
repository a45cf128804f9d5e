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
	// IPAMProvider says the real in-cluster IPAM provider runs: the world
	// then leaves the pools' ProtectPool finalizer to it.
	IPAMProvider bool
}

// pageSize is how many objects the world reads per list request: it reads
// as the other controllers do, a few objects at a time, so that a round
// over ten thousand networks does not hold every object at once.
const pageSize = 500

// eachPage lists the objects of newList's kind (named what in errors) a
// page at a time and calls f with each page.
func eachPage[L client.ObjectList](ctx context.Context, c client.Reader, what string, newList func() L, f func(L) error) error {
	cont := ""
	for {
		l := newList()
		if err := c.List(ctx, l, client.Limit(pageSize), client.Continue(cont)); err != nil {
			return fmt.Errorf("cannot list %s: %w", what, err)
		}
		if err := f(l); err != nil {
			return err
		}
		if cont = l.GetContinue(); cont == "" {
			return nil
		}
	}
}

// subnetRef is what the world's Vlan and router port behaviours read of a
// Subnet.
type subnetRef struct{ name, vlan, vpc string }

// vlanRef is what the world's conflict and Subnet behaviours read of a Vlan.
type vlanRef struct {
	name    string
	id      vlanID
	created metav1.Time
}

// React applies one round of the world's behaviour through c. It reads the
// Vlans' names and IDs, then the Subnets once, reporting each Subnet's
// status on the way and keeping what the Vlan and router port behaviours
// compare: Kube-OVN's Vlan and Subnet behaviours only write statuses, which
// neither reads. Only the Vlans are read again, to write their statuses.
func (w *World) React(ctx context.Context, c client.Client) (bool, error) {
	var vlans []vlanRef
	if err := eachPage(ctx, c, "Vlans", func() *kubeovnv1.VlanList { return &kubeovnv1.VlanList{} }, func(l *kubeovnv1.VlanList) error {
		for i := range l.Items {
			v := &l.Items[i]
			vlans = append(vlans, vlanRef{v.Name, idKey(v), v.CreationTimestamp})
		}
		return nil
	}); err != nil {
		return false, err
	}
	subnets, changed, err := w.subnets(ctx, c, vlans)
	if err != nil {
		return changed, err
	}
	for _, f := range []func() (bool, error){
		func() (bool, error) { return w.routerPorts(ctx, subnets) },
		func() (bool, error) { return w.vlans(ctx, c, vlans, subnets) },
		func() (bool, error) {
			if w.IPAMProvider {
				return false, nil
			}
			return w.pools(ctx, c)
		},
	} {
		ch, err := f()
		if err != nil {
			return changed, err
		}
		changed = changed || ch
	}
	return changed, nil
}

func (w *World) vlans(ctx context.Context, c client.Client, vlans []vlanRef, subnets []subnetRef) (bool, error) {
	exists := make(map[string]bool, len(subnets))
	binds := map[string][]string{}
	for _, s := range subnets {
		exists[s.name] = true
		if s.vlan != "" {
			binds[s.vlan] = append(binds[s.vlan], s.name)
		}
	}
	owner := conflictOwners(vlans)
	changed := false
	err := eachPage(ctx, c, "Vlans", func() *kubeovnv1.VlanList { return &kubeovnv1.VlanList{} }, func(l *kubeovnv1.VlanList) error {
		for i := range l.Items {
			v := &l.Items[i]
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
			conflict := v.Spec.ID != 0 && owner[idKey(v)].name != v.Name
			if slices.Equal(want, v.Status.Subnets) && conflict == v.Status.Conflict {
				continue
			}
			// The listed item is this page's own copy: write it.
			v.Status.Subnets, v.Status.Conflict = want, conflict
			if err := c.Status().Update(ctx, v); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("cannot update the status of Vlan %q: %w", v.Name, err)
			}
			changed = true
		}
		return nil
	})
	return changed, err
}

// vlanID is a VLAN ID on a provider network.
type vlanID struct {
	provider string
	id       int
}

func idKey(v *kubeovnv1.Vlan) vlanID { return vlanID{v.Spec.Provider, v.Spec.ID} }

// conflictOwners picks, per (provider network, ID), the Vlan Kube-OVN keeps:
// the oldest, then the first by name. ID 0 never conflicts.
func conflictOwners(vlans []vlanRef) map[vlanID]vlanRef {
	owner := map[vlanID]vlanRef{}
	for _, v := range vlans {
		h, ok := owner[v.id]
		if !ok || v.created.Before(&h.created) || (v.created.Equal(&h.created) && v.name < h.name) {
			owner[v.id] = v
		}
	}
	return owner
}

// subnets reports each Subnet Ready once its Vlan exists, and returns
// what the other behaviours read of the Subnets, from the same pages.
func (w *World) subnets(ctx context.Context, c client.Client, vlans []vlanRef) ([]subnetRef, bool, error) {
	vlanExists := make(map[string]bool, len(vlans))
	for _, v := range vlans {
		vlanExists[v.name] = true
	}
	var refs []subnetRef
	changed := false
	err := eachPage(ctx, c, "Subnets", func() *kubeovnv1.SubnetList { return &kubeovnv1.SubnetList{} }, func(l *kubeovnv1.SubnetList) error {
		for i := range l.Items {
			s := &l.Items[i]
			refs = append(refs, subnetRef{s.Name, s.Spec.Vlan, s.Spec.Vpc})
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
				return fmt.Errorf("cannot update the status of Subnet %q: %w", s.Name, err)
			}
			changed = true
		}
		return nil
	})
	return refs, changed, err
}

func (w *World) pools(ctx context.Context, c client.Client) (bool, error) {
	used := map[client.ObjectKey]bool{}
	if err := eachPage(ctx, c, "IPAddresses", func() *capiipam.IPAddressList { return &capiipam.IPAddressList{} }, func(l *capiipam.IPAddressList) error {
		for _, a := range l.Items {
			used[client.ObjectKey{Namespace: a.Namespace, Name: a.Spec.PoolRef.Name}] = true
		}
		return nil
	}); err != nil {
		return false, err
	}
	changed := false
	err := eachPage(ctx, c, "InClusterIPPools", func() *ipamv1alpha2.InClusterIPPoolList { return &ipamv1alpha2.InClusterIPPoolList{} }, func(l *ipamv1alpha2.InClusterIPPoolList) error {
		for i := range l.Items {
			ch, err := w.pool(ctx, c, &l.Items[i], used)
			if err != nil {
				return err
			}
			changed = changed || ch
		}
		return nil
	})
	return changed, err
}

// pool keeps the ProtectPool finalizer on p while it is live or in use.
func (w *World) pool(ctx context.Context, c client.Client, p *ipamv1alpha2.InClusterIPPool, used map[client.ObjectKey]bool) (bool, error) {
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
		return false, nil
	}
	patch := client.MergeFrom(p.DeepCopy())
	if want {
		controllerutil.AddFinalizer(p, network.ProtectPoolFinalizer)
	} else {
		controllerutil.RemoveFinalizer(p, network.ProtectPoolFinalizer)
	}
	if err := c.Patch(ctx, p, patch); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("cannot update the finalizers of pool %s: %w", client.ObjectKeyFromObject(p), err)
	}
	return true, nil
}
