package kubestore

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// VlanObject is the Kube-OVN Vlan the controller creates for claim with vid:
// named after the subnet, labelled with zone and network, and held by the
// network finalizer.
func VlanObject(zone *vlanalloc.Zone, claim vlanalloc.Claim, vid int) *kubeovnv1.Vlan {
	return &kubeovnv1.Vlan{
		ObjectMeta: metav1.ObjectMeta{
			Name: claim.Vlan,
			Labels: map[string]string{
				v1alpha1.LabelZone:             zone.Name(),
				v1alpha1.LabelNetworkNamespace: claim.Network.Namespace,
				v1alpha1.LabelNetworkName:      claim.Network.Name,
			},
			Finalizers: []string{v1alpha1.Finalizer},
		},
		Spec: kubeovnv1.VlanSpec{ID: vid, Provider: zone.ProviderNetwork()},
	}
}

// BindVlan creates claim's Vlan with vid, which the caller must have
// reserved, and returns the ID the Vlan carries. When the Vlan already
// exists (another replica created it, or an earlier pass did) its ID wins:
// the claim on vid, if it differs, is released, and the caller must make
// sure the returned ID is reserved (Allocator.Allocate adopts it). A Vlan of
// another network is a *vlanalloc.ConflictError and one on another provider
// network a *vlanalloc.ProviderMismatchError. BindVlan never changes an
// existing Vlan.
func (s *Store) BindVlan(ctx context.Context, zone *vlanalloc.Zone, claim vlanalloc.Claim, vid int) (int, error) {
	want := VlanObject(zone, claim, vid)
	err := s.client.Create(ctx, want)
	if err == nil {
		return vid, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return 0, fmt.Errorf("cannot create Kube-OVN Vlan %q: %w", claim.Vlan, err)
	}
	var cur kubeovnv1.Vlan
	if err := s.reader.Get(ctx, client.ObjectKey{Name: claim.Vlan}, &cur); err != nil {
		return 0, fmt.Errorf("cannot read Kube-OVN Vlan %q: %w", claim.Vlan, err)
	}
	got := ObservedVlan(&cur)
	switch {
	case got.Provider != zone.ProviderNetwork():
		return 0, fmt.Errorf("cannot bind Kube-OVN Vlan %q: %w", claim.Vlan,
			&vlanalloc.ProviderMismatchError{Vlan: claim.Vlan, Provider: got.Provider, Want: zone.ProviderNetwork()})
	case got.Network.Name != "" && got.Network != claim.Network:
		return 0, fmt.Errorf("cannot bind Kube-OVN Vlan %q: %w", claim.Vlan,
			&vlanalloc.ConflictError{VID: got.VID, Provider: got.Provider, Network: claim.Network, Holder: "network " + got.Network.String()})
	case got.VID != vid:
		r := vlanalloc.Reservation{VID: vid, Zone: zone.Name(), Network: claim.Network, Vlan: claim.Vlan}
		if err := s.Release(ctx, zone.ProviderNetwork(), r); err != nil {
			return 0, fmt.Errorf("cannot drop the claim on VLAN %d after Vlan %q turned out to carry %d: %w", vid, claim.Vlan, got.VID, err)
		}
	}
	return got.VID, nil
}
