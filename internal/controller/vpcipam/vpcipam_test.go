package vpcipam_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	ipamicv1 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/enginetest"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/vpcipam"
)

const ns = "tenant-a"

// fataler is what the helpers need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

func scheme(t fataler) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{ipamv1.AddToScheme, ipamicv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// world is what the step sees: a cluster's pool, a subnet's pool, a
// ProxmoxMachine and its net0 claim, each of which a case may spoil.
type world struct {
	sentinel       bool   // the claim's pool is in the sentinel shape
	annotated      bool   // the machine names the subnet pool
	net0           bool   // the claim is for net0
	machineOwned   bool   // a ProxmoxMachine owns the claim
	subnetPool     bool   // the subnet's pool exists
	ipamGroup      bool   // the claim's pool is an InClusterIPPool
	addressBound   bool   // the claim already has an address
	subnetAssigned string // the subnet claim's address, "" when none yet
}

func (w world) objects() []client.Object {
	pool := &ipamicv1.InClusterIPPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubernetes-a-v4-icip"},
		Spec: ipamicv1.InClusterIPPoolSpec{Addresses: []string{"10.1.0.1"}, Gateway: "10.1.0.1", Prefix: 24}}
	if !w.sentinel {
		pool.Spec.Addresses = []string{"10.1.0.10-10.1.0.20"}
	}
	machine := &unstructured.Unstructured{}
	machine.SetAPIVersion(capmox.Group + "/v1alpha2")
	machine.SetKind(capmox.KindProxmoxMachine)
	machine.SetNamespace(ns)
	machine.SetName("kubernetes-a-md0-x7k2p")
	if w.annotated {
		machine.SetAnnotations(map[string]string{capmox.AnnotationNet0Pool: "subnet-b10ab7f7"})
	}
	device := "net1"
	if w.net0 {
		device = "net0"
	}
	claim := &ipamv1.IPAddressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: machine.GetName() + "-" + device + "-00-inet", UID: "claim-uid",
		Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "kubernetes-a"}},
		Spec: ipamv1.IPAddressClaimSpec{ClusterName: "kubernetes-a", PoolRef: ipamv1.IPPoolReference{APIGroup: capmox.IPAMGroup, Kind: capmox.KindInClusterIPPool, Name: pool.Name}}}
	if !w.ipamGroup {
		claim.Spec.PoolRef.APIGroup = "ipam.metal3.io"
	}
	if w.machineOwned {
		claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: capmox.Group + "/v1alpha2", Kind: capmox.KindProxmoxMachine, Name: machine.GetName(), UID: "m-uid"}}
	}
	if w.addressBound {
		claim.Status.AddressRef.Name = claim.Name
	}
	objs := []client.Object{pool, machine, claim}
	if w.subnetPool {
		objs = append(objs, &ipamicv1.InClusterIPPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "subnet-b10ab7f7"},
			Spec: ipamicv1.InClusterIPPoolSpec{Addresses: []string{"10.1.0.100-10.1.0.200"}, Gateway: "10.1.0.1", Prefix: 24}})
	}
	if w.subnetAssigned != "" {
		sub := &ipamv1.IPAddressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim.Name + vpcipam.SubnetClaimSuffix, Labels: map[string]string{vpcipam.LabelFor: claim.Name}},
			Spec: ipamv1.IPAddressClaimSpec{PoolRef: ipamv1.IPPoolReference{APIGroup: capmox.IPAMGroup, Kind: capmox.KindInClusterIPPool, Name: "subnet-b10ab7f7"}}}
		sub.Status.AddressRef.Name = sub.Name
		addr := &ipamv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sub.Name},
			Spec: ipamv1.IPAddressSpec{ClaimRef: ipamv1.IPAddressClaimReference{Name: sub.Name}, PoolRef: sub.Spec.PoolRef,
				Address: w.subnetAssigned, Prefix: ptr.To[int32](24), Gateway: "10.1.0.1"}}
		objs = append(objs, sub, addr)
	}
	return objs
}

func (w world) recognised() bool {
	return w.sentinel && w.annotated && w.net0 && w.machineOwned && w.ipamGroup && !w.addressBound
}

// step runs the step once over the world's claim and returns the client.
func step(t fataler, w world) (client.Client, *ipamv1.IPAddressClaim) {
	t.Helper()
	objs := w.objects()
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).WithStatusSubresource(&ipamv1.IPAddressClaim{}).Build()
	claim := objs[2].(*ipamv1.IPAddressClaim)
	live := &ipamv1.IPAddressClaim{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(claim), live); err != nil {
		t.Fatal(err)
	}
	s := &engine.State[*ipamv1.IPAddressClaim]{Object: live, Client: c, Clock: clock.RealClock{}, Log: logr.Discard(), Recorder: engine.NopRecorder{}}
	if _, err := (&vpcipam.Reconciler{Client: c}).Reconcile(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return c, live
}

// TestVPCClaimGetsSubnetAddress: a recognised claim first gets a claim of
// its own in the subnet's pool, owned by it; once that is bound, its
// address becomes the claim's IPAddress in the claim's pool, owned by the
// claim, as the IPAM provider names it. Without the subnet's pool it
// waits, and says so; a claim for another device is left alone.
func TestVPCClaimGetsSubnetAddress(t *testing.T) {
	w := world{sentinel: true, annotated: true, net0: true, machineOwned: true, subnetPool: true, ipamGroup: true}
	assigned, noPool, net1 := w, w, w
	assigned.subnetAssigned = "10.1.0.100"
	noPool.subnetPool = false
	net1.net0 = false
	claim := func(w world) *ipamv1.IPAddressClaim { return w.objects()[2].(*ipamv1.IPAddressClaim) }
	key := func(w world, suffix string) client.ObjectKey {
		return client.ObjectKey{Namespace: ns, Name: claim(w).Name + suffix}
	}
	enginetest.StepTest[*ipamv1.IPAddressClaim]{
		Scheme:             scheme(t),
		StatusSubresources: []client.Object{&ipamv1.IPAddressClaim{}},
		New: func(_ *testing.T, r enginetest.Rig) engine.Step[*ipamv1.IPAddressClaim] {
			return &vpcipam.Reconciler{Client: r.Client}
		},
		Cases: map[string]enginetest.StepCase[*ipamv1.IPAddressClaim]{
			"ClaimsInTheSubnetPool": {Given: w.objects(), Object: claim(w), ExpectResult: engine.Result{RequeueAfter: vpcipam.Wait},
				ExpectWrites: []enginetest.Write{{Verb: "create", Kind: "IPAddressClaim", Key: key(w, vpcipam.SubnetClaimSuffix)}},
				ExpectEvents: []enginetest.Event{{Object: key(w, ""), Type: "Normal", Reason: vpcipam.ReasonSubnetClaimed,
					Message: "claimed net0's address from the subnet's pool subnet-b10ab7f7 (IPAddressClaim " + key(w, vpcipam.SubnetClaimSuffix).Name + "): the cluster's pool is a VPC sentinel"}},
				Verify: func(t *testing.T, c client.Client) {
					sub := &ipamv1.IPAddressClaim{}
					if err := c.Get(context.Background(), key(w, vpcipam.SubnetClaimSuffix), sub); err != nil {
						t.Fatalf("no subnet claim: %v", err)
					}
					if sub.Spec.PoolRef.Name != "subnet-b10ab7f7" || sub.Spec.ClusterName != "kubernetes-a" || len(sub.OwnerReferences) != 1 || sub.OwnerReferences[0].UID != "claim-uid" ||
						sub.Labels[vpcipam.LabelFor] != claim(w).Name || sub.Labels[capmox.LabelClusterName] != "kubernetes-a" {
						t.Fatalf("subnet claim %+v", sub)
					}
				}},
			"GivesTheAddress": {Given: assigned.objects(), Object: claim(assigned),
				ExpectWrites: []enginetest.Write{{Verb: "create", Kind: "IPAddress", Key: key(assigned, "")}},
				ExpectEvents: []enginetest.Event{{Object: key(assigned, ""), Type: "Normal", Reason: vpcipam.ReasonAddressGiven,
					Message: "net0 gets 10.1.0.100/24 from the subnet's pool subnet-b10ab7f7"}},
				Verify: func(t *testing.T, c client.Client) {
					addr := &ipamv1.IPAddress{}
					if err := c.Get(context.Background(), key(assigned, ""), addr); err != nil {
						t.Fatalf("no address: %v", err)
					}
					if addr.Spec.Address != "10.1.0.100" || addr.Spec.PoolRef != claim(assigned).Spec.PoolRef || addr.Spec.ClaimRef.Name != claim(assigned).Name ||
						*addr.Spec.Prefix != 24 || addr.Spec.Gateway != "10.1.0.1" || !*addr.OwnerReferences[0].Controller {
						t.Fatalf("address %+v", addr)
					}
				}},
			"NoSubnetPool": {Given: noPool.objects(), Object: claim(noPool), ExpectResult: engine.Result{RequeueAfter: vpcipam.Wait},
				ExpectEvents: []enginetest.Event{{Object: key(noPool, ""), Type: "Warning", Reason: vpcipam.ReasonNoSubnetPool,
					Message: "the subnet's InClusterIPPool tenant-a/subnet-b10ab7f7 does not exist: the worker waits for it"}}},
			"OtherDevice": {Given: net1.objects(), Object: claim(net1)},
		},
	}.Run(t)
}

// TestVPCClaimsLeftAlone: with any one condition spoiled, the step makes
// no claim and no address; with none spoiled (the control), it does.
// Checked over every combination a rapid draw makes.
func TestVPCClaimsLeftAlone(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := world{sentinel: rapid.Bool().Draw(rt, "sentinel"), annotated: rapid.Bool().Draw(rt, "annotated"),
			net0: rapid.Bool().Draw(rt, "net0"), machineOwned: rapid.Bool().Draw(rt, "owned"), subnetPool: true,
			ipamGroup: rapid.Bool().Draw(rt, "ipamGroup"), addressBound: rapid.Bool().Draw(rt, "bound")}
		if rapid.Bool().Draw(rt, "assigned") {
			w.subnetAssigned = "10.1.0.150"
		}
		before := len(w.objects())
		c, _ := step(rt, w)
		var claims ipamv1.IPAddressClaimList
		var addrs ipamv1.IPAddressList
		if err := c.List(context.Background(), &claims); err != nil {
			rt.Fatal(err)
		}
		if err := c.List(context.Background(), &addrs); err != nil {
			rt.Fatal(err)
		}
		// The cluster's pool and the machine are the other objects of the
		// world, and the subnet's pool when it exists.
		after := len(claims.Items) + len(addrs.Items) + 2
		if w.subnetPool {
			after++
		}
		switch {
		case !w.recognised() && after != before:
			rt.Fatalf("an unrecognised claim (%+v) made objects: %d before, %d after", w, before, after)
		case w.recognised() && after != before+1:
			rt.Fatalf("a recognised claim (%+v) made %d objects, want 1", w, after-before)
		}
		if w.recognised() && w.subnetAssigned != "" && !slices.ContainsFunc(addrs.Items, func(a ipamv1.IPAddress) bool {
			return a.Spec.PoolRef.Name == "kubernetes-a-v4-icip" && a.Spec.Address == w.subnetAssigned
		}) {
			rt.Fatalf("the recognised claim did not get %s: %v", w.subnetAssigned, fmt.Sprint(addrs.Items))
		}
	})
}

// TestSubnetClaimOwner: a subnet claim's change reaches its claim.
func TestSubnetClaimOwner(t *testing.T) {
	sub := &ipamv1.IPAddressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x-subnet", Labels: map[string]string{vpcipam.LabelFor: "x"}}}
	if got := vpcipam.SubnetClaimOwner(sub); len(got) != 1 || got[0].Name != "x" {
		t.Fatalf("got %v", got)
	}
	other := &ipamv1.IPAddressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "y"}}
	if got := vpcipam.SubnetClaimOwner(other); len(got) != 1 || got[0].Name != "y" {
		t.Fatalf("got %v", got)
	}
}
