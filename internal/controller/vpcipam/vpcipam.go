// Package vpcipam gives a capmox v0.8+ worker on a Proxmox-backed VPC
// subnet its net0 address from the subnet's own InClusterIPPool.
//
// capmox v0.8 and later claim the address of the machine's default device
// (net0, which their ProxmoxMachine webhook marks defaultIPv4) from the
// ProxmoxCluster's pool, whatever else the device lists. A cluster in VPC
// mode carries a sentinel pool there (its only address is the subnet's
// gateway, which the IPAM provider never hands out), so that claim would
// stay pending and the worker would never start. For such a claim, and
// only such a claim, this step claims an address from the subnet's pool
// (a second IPAddressClaim, owned by the first, so it goes when the first
// goes) and writes it as the first claim's IPAddress, which the in-cluster
// IPAM provider then takes as allocated: the worker's one net0 address
// comes from the subnet's pool, where every other consumer of the subnet
// (a second cluster, a KubeVirt VM through Kube-OVN's excluded range) sees
// it taken.
//
// A claim is such a claim when all of these hold: its owner is a
// ProxmoxMachine whose capmox.AnnotationNet0Pool names the subnet's pool;
// it claims for net0 (capmox names it <machine>-net0-<offset>-inet); its
// pool is an InClusterIPPool in the sentinel shape (one address, equal to
// the gateway). Anything else is left alone.
//
// What it never does: touch a claim it did not recognise, change an
// address once written, or delete anything (garbage collection removes the
// subnet claim with its owner, and the IPAM provider the address).
package vpcipam

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	ipamicv1 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	"github.com/pxsubstrate/pxsubstrate/engine"
)

// Event reasons, on the machine's claim.
const (
	ReasonSubnetClaimed engine.Reason = "SubnetAddressClaimed"
	ReasonAddressGiven  engine.Reason = "SubnetAddressGiven"
	ReasonNoSubnetPool  engine.Reason = "SubnetPoolNotFound"
)

// EventActions are the events.k8s.io action of every reason
// (engine.EventsRecorder's Actions).
var EventActions = map[engine.Reason]string{
	ReasonSubnetClaimed: "SubnetAddress", ReasonAddressGiven: "SubnetAddress", ReasonNoSubnetPool: "SubnetAddress",
}

// SubnetClaimSuffix ends the name of the subnet claim made for a claim.
const SubnetClaimSuffix = "-subnet"

// LabelFor is the label on a subnet claim naming the claim it serves.
const LabelFor = "proxmox.cozystack.io/address-for"

// Wait is how long a claim waits before it is looked at again while its
// subnet claim has no address.
const Wait = 5 * time.Second

// Reconciler is the step over IPAddressClaims.
type Reconciler struct {
	// Client reads and writes claims, addresses, pools and ProxmoxMachines.
	Client client.Client
}

var _ engine.Step[*ipamv1.IPAddressClaim] = (*Reconciler)(nil)

// Reconcile gives a recognised claim its address from the subnet's pool,
// in two steps: claim one there, then write it as this claim's address.
func (r *Reconciler) Reconcile(ctx context.Context, s *engine.State[*ipamv1.IPAddressClaim]) (engine.Result, error) {
	claim := s.Object
	if !claim.DeletionTimestamp.IsZero() || claim.Status.AddressRef.Name != "" {
		return engine.Result{}, nil
	}
	subnetPool, ok, err := r.recognise(ctx, claim)
	if err != nil || !ok {
		return engine.Result{}, err
	}
	pool := &ipamicv1.InClusterIPPool{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: subnetPool}, pool); err != nil {
		if apierrors.IsNotFound(err) {
			s.Event(corev1.EventTypeWarning, ReasonNoSubnetPool, fmt.Sprintf("the subnet's InClusterIPPool %s/%s does not exist: the worker waits for it", claim.Namespace, subnetPool))
			return engine.Result{RequeueAfter: Wait}, nil
		}
		return engine.Result{}, err
	}
	sub, err := r.subnetClaim(ctx, s, subnetPool)
	if err != nil || sub == nil || sub.Status.AddressRef.Name == "" {
		return engine.Result{RequeueAfter: Wait}, err
	}
	return engine.Result{}, r.giveAddress(ctx, s, sub)
}

// recognise says whether the claim is a capmox v0.8+ net0 claim on a
// VPC cluster's sentinel pool for a machine of a VPC pool, and returns the
// subnet's pool.
func (r *Reconciler) recognise(ctx context.Context, claim *ipamv1.IPAddressClaim) (string, bool, error) {
	ref := claim.Spec.PoolRef
	if ref.APIGroup != capmox.IPAMGroup || ref.Kind != capmox.KindInClusterIPPool {
		return "", false, nil
	}
	owner := machineOwner(claim)
	if owner == "" || !strings.HasPrefix(claim.Name, owner+"-net0-") {
		return "", false, nil
	}
	machine := &unstructured.Unstructured{}
	machine.SetAPIVersion(capmox.Group + "/v1alpha2")
	machine.SetKind(capmox.KindProxmoxMachine)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: owner}, machine); err != nil {
		return "", false, client.IgnoreNotFound(err)
	}
	subnetPool := machine.GetAnnotations()[capmox.AnnotationNet0Pool]
	if subnetPool == "" || subnetPool == ref.Name {
		return "", false, nil
	}
	sentinel := &ipamicv1.InClusterIPPool{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: ref.Name}, sentinel); err != nil {
		return "", false, client.IgnoreNotFound(err)
	}
	return subnetPool, IsSentinel(sentinel.Spec), nil
}

// IsSentinel reports whether a pool is in the sentinel shape the render
// gives a VPC cluster: one address, which is the gateway, so that the IPAM
// provider can hand out none.
func IsSentinel(s ipamicv1.InClusterIPPoolSpec) bool {
	return len(s.Addresses) == 1 && s.Gateway != "" && s.Addresses[0] == s.Gateway && len(s.ExcludedAddresses) == 0
}

// machineOwner is the name of the ProxmoxMachine that owns the claim, ""
// when none does.
func machineOwner(claim *ipamv1.IPAddressClaim) string {
	for _, o := range claim.OwnerReferences {
		if o.Kind == capmox.KindProxmoxMachine && strings.HasPrefix(o.APIVersion, capmox.Group+"/") {
			return o.Name
		}
	}
	return ""
}

// subnetClaim returns the claim made in the subnet's pool for claim,
// making it first when it is missing (and then returning nil).
func (r *Reconciler) subnetClaim(ctx context.Context, s *engine.State[*ipamv1.IPAddressClaim], subnetPool string) (*ipamv1.IPAddressClaim, error) {
	claim := s.Object
	sub := &ipamv1.IPAddressClaim{}
	key := client.ObjectKey{Namespace: claim.Namespace, Name: claim.Name + SubnetClaimSuffix}
	err := r.Client.Get(ctx, key, sub)
	if err == nil {
		return sub, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	sub = &ipamv1.IPAddressClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: subnetClaimLabels(claim),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: ipamv1.GroupVersion.String(), Kind: "IPAddressClaim",
				Name: claim.Name, UID: claim.UID, BlockOwnerDeletion: ptr.To(true)}}},
		Spec: ipamv1.IPAddressClaimSpec{
			ClusterName: claim.Spec.ClusterName,
			PoolRef:     ipamv1.IPPoolReference{APIGroup: capmox.IPAMGroup, Kind: capmox.KindInClusterIPPool, Name: subnetPool},
		},
	}
	if err := r.Client.Create(ctx, sub); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("cannot claim an address of the subnet's pool %s for %s: %w", subnetPool, claim.Name, err)
	}
	s.Event(corev1.EventTypeNormal, ReasonSubnetClaimed, fmt.Sprintf("claimed net0's address from the subnet's pool %s (IPAddressClaim %s): the cluster's pool is a VPC sentinel", subnetPool, key.Name))
	return nil, nil
}

func subnetClaimLabels(claim *ipamv1.IPAddressClaim) map[string]string {
	labels := map[string]string{LabelFor: claim.Name}
	for _, k := range []string{capmox.LabelClusterName} {
		if v, ok := claim.Labels[k]; ok {
			labels[k] = v
		}
	}
	return labels
}

// giveAddress writes the subnet claim's address as claim's IPAddress (its
// name is the claim's, as the IPAM provider names it), in the claim's own
// pool; the provider finds it allocated and binds the claim.
func (r *Reconciler) giveAddress(ctx context.Context, s *engine.State[*ipamv1.IPAddressClaim], sub *ipamv1.IPAddressClaim) error {
	claim := s.Object
	from := &ipamv1.IPAddress{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: sub.Status.AddressRef.Name}, from); err != nil {
		return err
	}
	addr := &ipamv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: claim.Name, Labels: map[string]string{LabelFor: claim.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: ipamv1.GroupVersion.String(), Kind: "IPAddressClaim",
				Name: claim.Name, UID: claim.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: ipamv1.IPAddressSpec{
			ClaimRef: ipamv1.IPAddressClaimReference{Name: claim.Name},
			PoolRef:  claim.Spec.PoolRef,
			Address:  from.Spec.Address,
			Prefix:   from.Spec.Prefix,
			Gateway:  from.Spec.Gateway,
		},
	}
	if err := r.Client.Create(ctx, addr); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("cannot give claim %s the subnet's address %s: %w", claim.Name, from.Spec.Address, err)
	}
	s.Event(corev1.EventTypeNormal, ReasonAddressGiven, fmt.Sprintf("net0 gets %s/%d from the subnet's pool %s", from.Spec.Address, ptr.Deref(from.Spec.Prefix, 0), sub.Spec.PoolRef.Name))
	return nil
}

// SubnetClaimOwner maps a subnet claim to the claim it serves, so a change
// of its address reaches that claim; any other claim maps to itself.
func SubnetClaimOwner(o client.Object) []engine.Key {
	if owner, ok := o.GetLabels()[LabelFor]; ok {
		return []engine.Key{{Namespace: o.GetNamespace(), Name: owner}}
	}
	return []engine.Key{client.ObjectKeyFromObject(o)}
}
