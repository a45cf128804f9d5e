package network_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// legacyHeld is what a controller before the ownership rules left on the
// platform's "infra" network after tenant-evil's network named it: the
// network finalizer on the Subnet and on the Vlan, which it labelled for
// tenant-evil/evil.
func legacyHeld() []client.Object {
	objs := platformNetwork("infra", 50)
	for _, o := range objs {
		o.SetFinalizers([]string{v1alpha1.Finalizer})
	}
	objs[0].SetLabels(map[string]string{v1alpha1.LabelProviderNetwork: provider, v1alpha1.LabelZone: "zone-a",
		v1alpha1.LabelNetworkNamespace: evilNS, v1alpha1.LabelNetworkName: "evil"})
	return objs
}

func finalizers(t *testing.T, c client.Client, o client.Object) []string {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
	return o.GetFinalizers()
}

// TestLegacyFinalizersOnForeignObjects: the controller removes its
// finalizer from the Subnets and Vlans it no longer owns, where an earlier
// controller put it, and from nothing a network does own: the platform's
// Subnet and Vlan named by tenant-evil's network lose it, and the Vlan is
// not deleted with that network; tenant-1's unlabelled Vlan outside the
// zone's ranges loses it; tenant-0's own Subnet, also named by a hostile
// network, keeps it.
func TestLegacyFinalizersOnForeignObjects(t *testing.T) {
	t.Parallel()
	outside := &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: netID(1).name(), Finalizers: []string{v1alpha1.Finalizer}},
		Spec: kubeovnv1.VlanSpec{ID: 60, Provider: provider}}
	h, _ := hostileRig(t, func(c client.Client) {
		mustCreate(t, c, legacyHeld()...)
		mustCreate(t, c, hostileNetwork(evilNS, "evil", "infra"), hostileNetwork(evilNS, "squat", netID(0).name()), outside)
		createNetwork(t, c, 0, "zone-a")
		createNetwork(t, c, 1, "zone-a")
	})
	c := h.Client()
	advance(t, h)
	wantRefused(t, c, evilNS, "evil", network.ReasonSubnetNotOwned, `carries no label cozystack.io/tenantName`)
	wantRefused(t, c, "tenant-1", netID(1).name(), network.ReasonVLANOutsideZone, `carries VLAN 60`)
	held := legacyHeld()
	for _, o := range append(held, outside) {
		if f := finalizers(t, c, o); len(f) != 0 {
			t.Errorf("%T %q is no network's, yet keeps finalizers %v", o, o.GetName(), f)
		}
	}
	if a := namespaceAnnotation(t, c, evilNS); a != "" {
		t.Errorf("the Vlan once labelled for tenant-evil gives tenant-evil no VLAN: annotated %q", a)
	}
	own := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: netID(0).name()}}
	if f := finalizers(t, c, own); len(f) != 1 {
		t.Errorf("tenant-0's Subnet, held by its own network, lost its finalizer to the hostile network naming it: %v", f)
	}
	if err := c.Delete(context.Background(), hostileNetwork(evilNS, "evil", "infra")); err != nil {
		t.Fatal(err)
	}
	advance(t, h)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(held[0]), held[0]); err != nil {
		t.Errorf("deleting tenant-evil's network must not delete the platform's Vlan it was once labelled for: %v", err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: evilNS, Name: "evil"}, &v1alpha1.ProxmoxNetwork{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused network is released: %v", err)
	}
}
