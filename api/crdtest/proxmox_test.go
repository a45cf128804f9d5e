package crdtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

func validZone(name string) *v1alpha1.ProxmoxNetworkZone {
	return &v1alpha1.ProxmoxNetworkZone{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ProxmoxNetworkZoneSpec{
			Bridge: "vmbr1", ProviderNetwork: "pxtenant", VLANRanges: []string{"100-199", "250"},
			ReservedVLANs: []int32{150}, MTU: ptr.To[int32](1450), GatewayMTU: ptr.To[int32](1350),
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}},
			StaticAssignments: []v1alpha1.StaticVLANAssignment{{Namespace: "tenant-a", Name: "net-a", VLAN: 7}},
			Egress:            &v1alpha1.ZoneEgress{ExternalSubnet: "px-transit", GatewayNamespace: "cozy-egress"},
			SDN: &v1alpha1.ZoneSDN{Mode: "VNets", Zone: "pxa", VNetPrefix: "pxa",
				CredentialsRef: &v1alpha1.SecretRef{Namespace: "cozy-proxmox", Name: "pve-sdn"}},
		},
	}
}

func testProxmoxCRDs(t *testing.T, c client.Client) {
	ctx := context.Background()
	cases := map[string]struct {
		reason string
		mutate func(z *v1alpha1.ProxmoxNetworkZone)
		want   string // a substring of the Invalid error; empty means accepted
	}{
		"Valid":          {reason: "a zone using every field is accepted", mutate: func(*v1alpha1.ProxmoxNetworkZone) {}},
		"BridgePattern":  {reason: "a bridge must start with a letter", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.Bridge = "1br" }, want: "spec.bridge"},
		"BridgeLength":   {reason: "bridge names are at most 15 characters", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.Bridge = "vmbr0123456789ab" }, want: "spec.bridge"},
		"ProviderLength": {reason: "provider network names are at most 12 characters", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.ProviderNetwork = "abcdefghijklm" }, want: "spec.providerNetwork"},
		"NoRanges":       {reason: "a zone needs at least one range", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.VLANRanges = nil }, want: "spec.vlanRanges"},
		"RangePattern":   {reason: "ranges are digits and one dash", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.VLANRanges = []string{"1-2-3"} }, want: "spec.vlanRanges[0]"},
		"RangeSpaces": {reason: "the pattern refuses spaces, which the controller would read (as the peer's CRD and controller do)", mutate: func(z *v1alpha1.ProxmoxNetworkZone) {
			z.Spec.VLANRanges = []string{" 7 - 8 "}
		}, want: "spec.vlanRanges[0]"},
		"ReservedBounds": {reason: "reserved IDs lie in 1-4094", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.ReservedVLANs = []int32{4095} }, want: "spec.reservedVLANs[0]"},
		"SDNMode":        {reason: "the SDN mode is Check or VNets", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.SDN.Mode = "Vnets" }, want: "spec.sdn.mode"},
		"SDNZoneNeeded":  {reason: "mode VNets names the Proxmox SDN zone", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.SDN.Zone = "" }, want: "sdn.zone is required in mode VNets"},
		"SDNZoneID":      {reason: "a Proxmox SDN zone ID is at most 8 characters", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.SDN.Zone = "zonezone9" }, want: "spec.sdn.zone"},
		"SDNPrefix":      {reason: "a VNet prefix leaves room for 4 digits", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.SDN.VNetPrefix = "pxabc" }, want: "spec.sdn.vnetPrefix"},
		"SDNCheckOnly":   {reason: "mode Check needs no SDN zone", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.SDN = &v1alpha1.ZoneSDN{Mode: "Check"} }},
		"MTUBounds":      {reason: "the MTU is at least 576", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.MTU = ptr.To[int32](500) }, want: "spec.mtu"},
		"NamespaceCapOne": {reason: "a per-namespace cap of 1 is the smallest", mutate: func(z *v1alpha1.ProxmoxNetworkZone) {
			z.Spec.MaxNetworksPerNamespace = ptr.To[int32](1)
		}},
		"NamespaceCapZero": {reason: "a per-namespace cap of 0 would refuse every network", mutate: func(z *v1alpha1.ProxmoxNetworkZone) {
			z.Spec.MaxNetworksPerNamespace = ptr.To[int32](0)
		}, want: "spec.maxNetworksPerNamespace"},
		"GatewayMTUOff": {reason: "a gateway MTU of 0 turns the option off", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.GatewayMTU = ptr.To[int32](0) }},
		"GatewayMTULow": {reason: "a gateway MTU is 0 or at least 68", mutate: func(z *v1alpha1.ProxmoxNetworkZone) { z.Spec.GatewayMTU = ptr.To[int32](67) }, want: "spec.gatewayMTU"},
		"GatewayMTUBound": {reason: "a gateway MTU is at most 65535", mutate: func(z *v1alpha1.ProxmoxNetworkZone) {
			z.Spec.GatewayMTU = ptr.To[int32](65536)
		}, want: "spec.gatewayMTU"},
		"StaticBounds": {reason: "a static VLAN lies in 1-4094", mutate: func(z *v1alpha1.ProxmoxNetworkZone) {
			z.Spec.StaticAssignments[0].VLAN = 0
		}, want: "spec.staticAssignments[0].vlan"},
		"StaticListMap": {reason: "one static assignment per namespace and name", mutate: func(z *v1alpha1.ProxmoxNetworkZone) {
			z.Spec.StaticAssignments = append(z.Spec.StaticAssignments, z.Spec.StaticAssignments[0])
		}, want: "spec.staticAssignments[1]"},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			z := validZone(fmt.Sprintf("zone-%d", i))
			tc.mutate(z)
			want := z.DeepCopy()
			err := c.Create(ctx, z)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("%s: %v", tc.reason, err)
				}
				var got v1alpha1.ProxmoxNetworkZone
				if err := c.Get(ctx, client.ObjectKeyFromObject(z), &got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
					t.Errorf("%s: -sent +read back:\n%s", tc.reason, diff)
				}
				return
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: want an Invalid error about %s, got %v", tc.reason, tc.want, err)
			}
		})
	}
	t.Run("Names", func(t *testing.T) {
		want := map[string][]string{
			"proxmoxnetworkzones.proxmox.cozystack.io": {"Cluster", "pxzone"},
			"proxmoxnetworks.proxmox.cozystack.io":     {"Namespaced", "pxnet"},
			"proxmoxvlanclaims.proxmox.cozystack.io":   {"Cluster", "pxvlan"},
		}
		for name, w := range want {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
				t.Fatal(err)
			}
			got := append([]string{string(crd.Spec.Scope)}, crd.Spec.Names.ShortNames...)
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("%s scope and short names: -want +got:\n%s", name, diff)
			}
		}
	})
}

func testImmutability(t *testing.T, c client.Client) {
	ctx := context.Background()
	pn := &v1alpha1.ProxmoxNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "net-a", Namespace: "default"},
		Spec:       v1alpha1.ProxmoxNetworkSpec{Zone: "zone-a", Subnet: "subnet-a", IPPool: "pool-a"},
	}
	if err := c.Create(ctx, pn); err != nil {
		t.Fatal(err)
	}
	pn.Status = v1alpha1.ProxmoxNetworkStatus{VLAN: 120, VLANName: "subnet-a", Bridge: "vmbr1", MTU: ptr.To[int32](1450),
		CIDR: "10.1.0.0/24", Gateway: "10.1.0.1", Prefix: 24, IPPool: &v1alpha1.IPPoolUsage{Total: 128, Used: 1, Free: 127},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAllocated, Message: "ok", LastTransitionTime: when()}}}
	wantStatus := pn.Status
	if err := c.Status().Update(ctx, pn); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.ProxmoxNetwork
	if err := c.Get(ctx, client.ObjectKeyFromObject(pn), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantStatus, got.Status, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("status: -sent +read back:\n%s", diff)
	}
	cases := map[string]struct {
		reason string
		obj    client.Object
		mutate func(client.Object)
		want   string
	}{
		"Zone":   {reason: "a network never moves to another zone", obj: pn, mutate: func(o client.Object) { o.(*v1alpha1.ProxmoxNetwork).Spec.Zone = "zone-b" }, want: "zone is immutable"},
		"Subnet": {reason: "a network never changes its subnet", obj: pn, mutate: func(o client.Object) { o.(*v1alpha1.ProxmoxNetwork).Spec.Subnet = "subnet-b" }, want: "subnet is immutable"},
		"IPPool": {reason: "the pool may change", obj: pn, mutate: func(o client.Object) { o.(*v1alpha1.ProxmoxNetwork).Spec.IPPool = "pool-b" }},
	}
	claim := kubestore.ClaimObject("pxtenant", vlanalloc.Reservation{VID: 120, Zone: "zone-a", Network: vlanalloc.NetworkRef{Namespace: "default", Name: "net-a"}, Vlan: "subnet-a"})
	if err := c.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	cases["ClaimSpec"] = struct {
		reason string
		obj    client.Object
		mutate func(client.Object)
		want   string
	}{reason: "a claim never changes hands", obj: claim, mutate: func(o client.Object) { o.(*v1alpha1.ProxmoxVLANClaim).Spec.Network.Name = "net-b" }, want: "spec is immutable"}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cur := tc.obj.DeepCopyObject().(client.Object)
			if err := c.Get(ctx, client.ObjectKeyFromObject(cur), cur); err != nil {
				t.Fatal(err)
			}
			tc.mutate(cur)
			err := c.Update(ctx, cur)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("%s: %v", tc.reason, err)
				}
				return
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: want %q, got %v", tc.reason, tc.want, err)
			}
		})
	}
	t.Run("SecondClaim", func(t *testing.T) {
		second := kubestore.ClaimObject("pxtenant", vlanalloc.Reservation{VID: 120, Zone: "zone-b", Network: vlanalloc.NetworkRef{Namespace: "other", Name: "net-b"}, Vlan: "subnet-b"})
		if err := c.Create(ctx, second); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("the API server must refuse a second claim on one ID, got %v", err)
		}
	})
}
