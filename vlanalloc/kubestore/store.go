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

// Store is a vlanalloc.Reserver over ProxmoxVLANClaim objects.
type Store struct {
	client client.Client
	reader client.Reader
}

var _ vlanalloc.Reserver = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithReader makes the Store read claims and Vlans through r, typically a
// manager's API reader, instead of through the client it writes with.
func WithReader(r client.Reader) Option { return func(s *Store) { s.reader = r } }

// New returns a Store writing with c.
func New(c client.Client, opts ...Option) *Store {
	s := &Store{client: c, reader: c}
	for _, o := range opts {
		o(s)
	}
	return s
}

// conflictRetries bounds how often a claim that vanishes or changes between
// two calls is tried again.
const conflictRetries = 3

// ClaimObject is the ProxmoxVLANClaim that records r on provider.
func ClaimObject(provider string, r vlanalloc.Reservation) *v1alpha1.ProxmoxVLANClaim {
	return &v1alpha1.ProxmoxVLANClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha1.VLANClaimName(provider, r.VID),
			Labels: map[string]string{
				v1alpha1.LabelProviderNetwork:  provider,
				v1alpha1.LabelZone:             r.Zone,
				v1alpha1.LabelNetworkNamespace: r.Network.Namespace,
				v1alpha1.LabelNetworkName:      r.Network.Name,
			},
		},
		Spec: v1alpha1.ProxmoxVLANClaimSpec{
			ProviderNetwork: provider,
			VLAN:            int32(r.VID),
			Zone:            r.Zone,
			Network:         v1alpha1.NetworkReference(r.Network),
			VLANName:        r.Vlan,
		},
	}
}

// Reserve creates the claim of r. An existing claim of the same network is
// success; one of another network is a *vlanalloc.TakenError.
func (s *Store) Reserve(ctx context.Context, provider string, r vlanalloc.Reservation) error {
	for range conflictRetries {
		err := s.client.Create(ctx, ClaimObject(provider, r))
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cannot create ProxmoxVLANClaim %q: %w", v1alpha1.VLANClaimName(provider, r.VID), err)
		}
		var cur v1alpha1.ProxmoxVLANClaim
		err = s.reader.Get(ctx, client.ObjectKey{Name: v1alpha1.VLANClaimName(provider, r.VID)}, &cur)
		switch {
		case apierrors.IsNotFound(err):
			continue // released in between: try again
		case err != nil:
			return fmt.Errorf("cannot read ProxmoxVLANClaim %q: %w", v1alpha1.VLANClaimName(provider, r.VID), err)
		case vlanalloc.NetworkRef(cur.Spec.Network) == r.Network:
			return nil
		}
		return &vlanalloc.TakenError{Provider: provider, Holder: ObservedClaim(&cur)}
	}
	return fmt.Errorf("cannot create ProxmoxVLANClaim %q: it keeps vanishing and reappearing", v1alpha1.VLANClaimName(provider, r.VID))
}

// Release deletes the claim of r.VID if it names r.Network, with the read
// UID and resourceVersion as preconditions so that a claim re-created by
// another network in between survives.
func (s *Store) Release(ctx context.Context, provider string, r vlanalloc.Reservation) error {
	name := v1alpha1.VLANClaimName(provider, r.VID)
	for range conflictRetries {
		var cur v1alpha1.ProxmoxVLANClaim
		err := s.reader.Get(ctx, client.ObjectKey{Name: name}, &cur)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot read ProxmoxVLANClaim %q: %w", name, err)
		}
		if vlanalloc.NetworkRef(cur.Spec.Network) != r.Network {
			return nil
		}
		err = s.client.Delete(ctx, &cur, client.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion})
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("cannot delete ProxmoxVLANClaim %q: %w", name, err)
		}
	}
	return fmt.Errorf("cannot delete ProxmoxVLANClaim %q: it keeps changing", name)
}

// ObservedClaim reduces a claim to a vlanalloc.Reservation.
func ObservedClaim(c *v1alpha1.ProxmoxVLANClaim) vlanalloc.Reservation {
	return vlanalloc.Reservation{
		VID:     int(c.Spec.VLAN),
		Zone:    c.Spec.Zone,
		Network: vlanalloc.NetworkRef(c.Spec.Network),
		Vlan:    c.Spec.VLANName,
	}
}

// ObservedVlan reduces a Kube-OVN Vlan to a vlanalloc.Vlan; the zone and
// network come from the labels the controller sets.
func ObservedVlan(v *kubeovnv1.Vlan) vlanalloc.Vlan {
	return vlanalloc.Vlan{
		Name:     v.Name,
		VID:      v.Spec.ID,
		Provider: v.Spec.Provider,
		Zone:     v.Labels[v1alpha1.LabelZone],
		Network: vlanalloc.NetworkRef{
			Namespace: v.Labels[v1alpha1.LabelNetworkNamespace],
			Name:      v.Labels[v1alpha1.LabelNetworkName],
		},
	}
}

// Load lists every Kube-OVN Vlan and the claims of the zone's provider
// network through r and builds the zone's Index from them.
func Load(ctx context.Context, r client.Reader, zone *vlanalloc.Zone) (*vlanalloc.Index, error) {
	var vlans kubeovnv1.VlanList
	if err := r.List(ctx, &vlans); err != nil {
		return nil, fmt.Errorf("cannot list Kube-OVN Vlans: %w", err)
	}
	var claims v1alpha1.ProxmoxVLANClaimList
	if err := r.List(ctx, &claims, client.MatchingLabels{v1alpha1.LabelProviderNetwork: zone.ProviderNetwork()}); err != nil {
		return nil, fmt.Errorf("cannot list ProxmoxVLANClaims: %w", err)
	}
	observedVlans := make([]vlanalloc.Vlan, 0, len(vlans.Items))
	for i := range vlans.Items {
		observedVlans = append(observedVlans, ObservedVlan(&vlans.Items[i]))
	}
	reservations := make([]vlanalloc.Reservation, 0, len(claims.Items))
	for i := range claims.Items {
		if claims.Items[i].Spec.ProviderNetwork == zone.ProviderNetwork() {
			reservations = append(reservations, ObservedClaim(&claims.Items[i]))
		}
	}
	return vlanalloc.NewIndex(zone, observedVlans, reservations), nil
}
