package network_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

const evilNS = "tenant-evil"

// platformNetwork is a Subnet the platform made for itself, with its Vlan:
// no tenant label, no network labels, an ID of the platform's choosing.
func platformNetwork(name string, vid int) []client.Object {
	return []client.Object{
		&kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeovnv1.VlanSpec{ID: vid, Provider: provider}},
		&kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeovnv1.SubnetSpec{
			Vpc: "ovn-cluster", CIDRBlock: "192.168.50.0/24", Gateway: "192.168.50.1", Vlan: name,
		}},
	}
}

// hostileNetwork is a ProxmoxNetwork in namespace ns naming subnet, which
// ns does not own.
func hostileNetwork(ns, name, subnet string) *v1alpha1.ProxmoxNetwork {
	return &v1alpha1.ProxmoxNetwork{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ProxmoxNetworkSpec{Zone: "zone-a", Subnet: subnet, IPPool: name},
	}
}

// hostileRig is zone-a (IDs 100-107, 104 reserved) with tenant-0..2 and
// tenant-evil; setup runs before the controller starts.
func hostileRig(t *testing.T, setup func(c client.Client)) (*sim.Harness, *keptEvents) {
	t.Helper()
	rec := &keptEvents{}
	h := sim.NewHarness(sim.Options{Recorder: rec})
	c := h.Client()
	baseWorld(t, c, map[string][]string{"zone-a": {"100-107"}})
	z := &v1alpha1.ProxmoxNetworkZone{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "zone-a"}, z); err != nil {
		t.Fatal(err)
	}
	z.Spec.ReservedVLANs = []int32{104}
	if err := c.Update(context.Background(), z); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, sim.Namespace(evilNS, nil))
	setup(c)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	advance(t, h)
	return h, rec
}

func advance(t *testing.T, h *sim.Harness) {
	t.Helper()
	if _, err := h.Advance(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
}

func getNetwork(t *testing.T, c client.Client, ns, name string) *v1alpha1.ProxmoxNetwork {
	t.Helper()
	n := &v1alpha1.ProxmoxNetwork{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// wantRefused checks that the network holds no VLAN and says why.
func wantRefused(t *testing.T, c client.Client, ns, name, reason, mentions string) {
	t.Helper()
	n := getNetwork(t, c, ns, name)
	cond := findCond(n.Status.Conditions, v1alpha1.ConditionVLANAllocated)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != reason || !strings.Contains(cond.Message, mentions) {
		t.Fatalf("network %s/%s: VLANAllocated %+v, want False/%s mentioning %q", ns, name, cond, reason, mentions)
	}
	if n.Status.VLAN != 0 || n.Status.VLANName != "" || n.Status.Bridge != "" {
		t.Fatalf("refused network %s/%s carries VLAN %d (%q on %q)", ns, name, n.Status.VLAN, n.Status.VLANName, n.Status.Bridge)
	}
}

// wantUntouched checks that the object carries neither the network
// finalizer nor any label or annotation the controller writes.
func wantUntouched(t *testing.T, c client.Client, o client.Object, labels map[string]string) {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
	if hasFinalizer(o) || !maps.Equal(o.GetLabels(), labels) || len(o.GetAnnotations()) != 0 {
		t.Fatalf("%T %q was written: finalizers %v, labels %v, annotations %v", o, o.GetName(), o.GetFinalizers(), o.GetLabels(), o.GetAnnotations())
	}
}

func namespaceAnnotation(t *testing.T, c client.Client, ns string) string {
	t.Helper()
	o := &corev1.Namespace{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, o); err != nil {
		t.Fatal(err)
	}
	return o.Annotations[v1alpha1.AnnotationNamespaceNetworks]
}

func wantEvent(t *testing.T, rec *keptEvents, reason, regarding string) {
	t.Helper()
	for _, e := range rec.take() {
		if e.Reason == reason && e.Type == corev1.EventTypeWarning && strings.HasSuffix(e.Regarding, regarding) {
			return
		}
	}
	t.Fatalf("no Warning event %s on %s", reason, regarding)
}

// TestHostileNetworkNamesPlatformSubnet: a network in tenant-evil naming
// the platform's Subnet "infra", whose Vlan carries VLAN 50 outside the
// zone's ranges, gets nothing: no VLAN, no finalizer on the platform's
// Subnet or Vlan, no annotation on its namespace. The control, a tenant's
// own network in the same zone, gets its VLAN.
func TestHostileNetworkNamesPlatformSubnet(t *testing.T) {
	t.Parallel()
	h, rec := hostileRig(t, func(c client.Client) {
		mustCreate(t, c, platformNetwork("infra", 50)...)
		mustCreate(t, c, hostileNetwork(evilNS, "evil", "infra"))
		createNetwork(t, c, 0, "zone-a")
	})
	c := h.Client()
	wantRefused(t, c, evilNS, "evil", network.ReasonSubnetNotOwned, `carries no label cozystack.io/tenantName`)
	wantEvent(t, rec, network.ReasonSubnetNotOwned, evilNS+"/evil")
	objs := platformNetwork("infra", 50)
	wantUntouched(t, c, objs[0], nil)
	wantUntouched(t, c, objs[1], nil)
	if a := namespaceAnnotation(t, c, evilNS); a != "" {
		t.Fatalf("tenant-evil is annotated %q", a)
	}
	if n := getNetwork(t, c, "tenant-0", "s-0"); n.Status.VLAN != 100 || namespaceAnnotation(t, c, "tenant-0") != "vmbr1/100/s-0" {
		t.Fatalf("the tenant's own network holds VLAN %d, namespace annotated %q; want 100 and vmbr1/100/s-0", n.Status.VLAN, namespaceAnnotation(t, c, "tenant-0"))
	}
	// Deleting the refused network leaves the platform's objects alone.
	if err := c.Delete(context.Background(), hostileNetwork(evilNS, "evil", "infra")); err != nil {
		t.Fatal(err)
	}
	advance(t, h)
	wantUntouched(t, c, objs[0], nil)
	wantUntouched(t, c, objs[1], nil)
}

// TestHostileNetworkNamesTenantSubnet: a network in tenant-evil naming
// tenant-0's Subnet before tenant-0's network exists squats nothing: the
// Subnet keeps no finalizer, no Vlan is created for it, and tenant-0's
// network, created afterwards, gets its VLAN.
func TestHostileNetworkNamesTenantSubnet(t *testing.T) {
	t.Parallel()
	objs, err := sim.Network("tenant-0", "s-0", "zone-a", "vpc-tenant-0", netID(0).cidr())
	if err != nil {
		t.Fatal(err)
	}
	h, rec := hostileRig(t, func(c client.Client) {
		mustCreate(t, c, objs[0], hostileNetwork(evilNS, "evil", "s-0"))
	})
	c := h.Client()
	wantRefused(t, c, evilNS, "evil", network.ReasonSubnetNotOwned, `belongs to namespace "tenant-0"`)
	wantEvent(t, rec, network.ReasonSubnetNotOwned, evilNS+"/evil")
	wantUntouched(t, c, &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: "s-0"}}, map[string]string{v1alpha1.LabelTenantName: "tenant-0"})
	if s := read(t, c); len(s.vlans) != 0 || len(s.claims) != 0 {
		t.Fatalf("a refused network left Vlans %v and claims %v", s.vlans, s.claims)
	}
	mustCreate(t, c, objs[1:]...)
	advance(t, h)
	n := getNetwork(t, c, "tenant-0", "s-0")
	if n.Status.VLAN != 100 || findCond(n.Status.Conditions, v1alpha1.ConditionVLANAllocated).Reason != v1alpha1.ReasonAllocated {
		t.Fatalf("tenant-0's network after the squat: VLAN %d, %+v", n.Status.VLAN, n.Status.Conditions)
	}
	wantRefused(t, c, evilNS, "evil", network.ReasonSubnetNotOwned, `belongs to namespace "tenant-0"`)
	if a := namespaceAnnotation(t, c, evilNS); a != "" {
		t.Fatalf("tenant-evil is annotated %q", a)
	}
}

// TestAdoptOnlyZoneVLANs: a tenant's own network adopts an existing Vlan of
// its subnet's name (without network labels) only when the Vlan's ID is one
// the zone hands out. Outside the ranges or reserved: refused, the Vlan
// untouched. Inside the ranges: adopted, the control.
func TestAdoptOnlyZoneVLANs(t *testing.T) {
	t.Parallel()
	vlan := func(n netID, vid int) *kubeovnv1.Vlan {
		return &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: n.name()}, Spec: kubeovnv1.VlanSpec{ID: vid, Provider: provider}}
	}
	h, rec := hostileRig(t, func(c client.Client) {
		mustCreate(t, c, vlan(0, 50), vlan(1, 104), vlan(2, 105))
		for n := range netID(3) {
			createNetwork(t, c, n, "zone-a")
		}
	})
	c := h.Client()
	wantRefused(t, c, "tenant-0", "s-0", network.ReasonVLANOutsideZone, `carries VLAN 50`)
	wantRefused(t, c, "tenant-1", "s-1", network.ReasonVLANOutsideZone, `carries VLAN 104`)
	wantEvent(t, rec, network.ReasonVLANOutsideZone, "tenant-0/s-0")
	wantUntouched(t, c, vlan(0, 50), nil)
	wantUntouched(t, c, vlan(1, 104), nil)
	for _, ns := range []string{"tenant-0", "tenant-1"} {
		if a := namespaceAnnotation(t, c, ns); a != "" {
			t.Fatalf("%s is annotated %q", ns, a)
		}
	}
	n := getNetwork(t, c, "tenant-2", "s-2")
	if n.Status.VLAN != 105 || !isTrue(n, v1alpha1.ConditionReady) || namespaceAnnotation(t, c, "tenant-2") != "vmbr1/105/s-2" {
		t.Fatalf("the control did not adopt VLAN 105: VLAN %d, %+v", n.Status.VLAN, n.Status.Conditions)
	}
	v := vlan(2, 105)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(v), v); err != nil || !hasFinalizer(v) {
		t.Fatalf("the adopted Vlan carries no finalizer: %v %v", v.Finalizers, err)
	}
}

func isTrue(n *v1alpha1.ProxmoxNetwork, typ string) bool {
	c := findCond(n.Status.Conditions, typ)
	return c != nil && c.Status == metav1.ConditionTrue
}
