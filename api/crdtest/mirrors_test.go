package crdtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/ptr"
	capiipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

func scheme() *runtime.Scheme {
	s := kube.Scheme()
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(kubeovnv1.AddToScheme(s))
	utilruntime.Must(ipamv1alpha2.AddToScheme(s))
	utilruntime.Must(capiipamv1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// TestAPIServer starts one kube-apiserver with every CRD these tests use:
// Kube-OVN's, the in-cluster IPAM provider's, Cluster API's and ours.
func TestAPIServer(t *testing.T) {
	_, c := testenv.StartAPIServer(t, testenv.APIServerOptions{
		Scheme:       scheme(),
		UpstreamCRDs: []string{"kube-ovn-v1.15.24"},
		CAPIIPAM:     true,
		CAPI:         true,
		CRDPaths:     []string{"../../config/crd/bases"},
	})
	t.Run("MirrorsRoundTrip", func(t *testing.T) { testMirrorsRoundTrip(t, c) })
	t.Run("ProxmoxCRDs", func(t *testing.T) { testProxmoxCRDs(t, c) })
	t.Run("Immutability", func(t *testing.T) { testImmutability(t, c) })
	t.Run("NetworkQuota", func(t *testing.T) { testNetworkQuota(t, c) })
}

// roundTrip creates obj, writes its status (taken from a copy made before
// create) when withStatus is set, reads it back into got and returns the
// object as the test meant it.
func roundTrip(t *testing.T, c client.Client, obj, got client.Object, withStatus bool) {
	t.Helper()
	ctx := context.Background()
	want := obj.DeepCopyObject().(client.Object)
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	if withStatus {
		withStatusFrom(t, want, obj)
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatalf("status update %T %s: %v", obj, obj.GetName(), err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatalf("get %T %s: %v", obj, obj.GetName(), err)
	}
}

// withStatusFrom copies the status of from into to (both of one kind).
func withStatusFrom(t *testing.T, from, to client.Object) {
	switch f := from.(type) {
	case *kubeovnv1.Vlan:
		to.(*kubeovnv1.Vlan).Status = f.Status
	case *kubeovnv1.Subnet:
		to.(*kubeovnv1.Subnet).Status = f.Status
	case *kubeovnv1.ProviderNetwork:
		to.(*kubeovnv1.ProviderNetwork).Status = f.Status
	case *ipamv1alpha2.InClusterIPPool:
		to.(*ipamv1alpha2.InClusterIPPool).Status = f.Status
	case *capiipamv1.IPAddressClaim:
		to.(*capiipamv1.IPAddressClaim).Status = f.Status
	default:
		t.Fatalf("no status copy for %T", from)
	}
}

var ignoreServerFields = cmpopts.IgnoreFields(metav1.ObjectMeta{}, "UID", "ResourceVersion", "Generation", "CreationTimestamp", "ManagedFields")

func when() metav1.Time { return metav1.NewTime(time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)) }

func testMirrorsRoundTrip(t *testing.T, c client.Client) {
	cases := map[string]struct {
		reason     string
		obj        client.Object
		got        client.Object
		withStatus bool
	}{
		"Vlan": {
			reason: "every mirrored Vlan field survives the real Kube-OVN CRD",
			obj: &kubeovnv1.Vlan{
				ObjectMeta: metav1.ObjectMeta{Name: "subnet-a", Labels: map[string]string{v1alpha1.LabelZone: "z"}, Finalizers: []string{v1alpha1.Finalizer}},
				Spec:       kubeovnv1.VlanSpec{ID: 4095, Provider: "pxtenant"},
				Status:     kubeovnv1.VlanStatus{Subnets: []string{"subnet-a", "old"}, Conflict: true},
			},
			got: &kubeovnv1.Vlan{}, withStatus: true,
		},
		"Subnet": {
			reason: "every mirrored Subnet field survives the real Kube-OVN CRD",
			obj: &kubeovnv1.Subnet{
				ObjectMeta: metav1.ObjectMeta{Name: "subnet-a"},
				Spec: kubeovnv1.SubnetSpec{
					Vpc: "vpc-a", CIDRBlock: "10.1.0.0/24", Gateway: "10.1.0.1", Provider: "ovn", Vlan: "subnet-a",
					ExcludeIps: []string{"10.1.0.64..10.1.0.191"}, MTU: 1400, LogicalGateway: true, U2OInterconnection: true,
					Protocol: "IPv4", EnableLb: ptr.To(true), Private: ptr.To(true), AllowSubnets: []string{"10.2.0.0/24"},
				},
				Status: kubeovnv1.SubnetStatus{Conditions: []kubeovnv1.SubnetCondition{{
					Type: "Ready", Status: "True", Reason: "ResetLogicalSwitchAclSuccess", Message: "ok",
					LastUpdateTime: when(), LastTransitionTime: when(),
				}}},
			},
			got: &kubeovnv1.Subnet{}, withStatus: true,
		},
		"ProviderNetwork": {
			reason: "every mirrored ProviderNetwork field survives the real Kube-OVN CRD",
			obj: &kubeovnv1.ProviderNetwork{
				ObjectMeta: metav1.ObjectMeta{Name: "pxtenant"},
				Spec:       kubeovnv1.ProviderNetworkSpec{DefaultInterface: "ens19"},
				Status: kubeovnv1.ProviderNetworkStatus{Ready: true, ReadyNodes: []string{"n1", "n2"},
					NotReadyNodes: []string{"n3"}, Vlans: []string{"subnet-a"}},
			},
			got: &kubeovnv1.ProviderNetwork{}, withStatus: true,
		},
		"InClusterIPPool": {
			reason: "every mirrored pool field survives the real in-cluster IPAM CRD",
			obj: &ipamv1alpha2.InClusterIPPool{
				ObjectMeta: metav1.ObjectMeta{Name: "pool-a", Namespace: "default"},
				Spec: ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.1.0.64-10.1.0.191"}, Prefix: 24, Gateway: "10.1.0.1",
					AllocateReservedIPAddresses: true, ExcludedAddresses: []string{"10.1.0.100"}},
				Status: ipamv1alpha2.InClusterIPPoolStatus{Addresses: &ipamv1alpha2.InClusterIPPoolStatusIPAddresses{Total: 127, Used: 2, Free: 125, OutOfRange: 1}},
			},
			got: &ipamv1alpha2.InClusterIPPool{}, withStatus: true,
		},
		"IPAddressClaim": {
			reason: "the Cluster API IPAddressClaim type matches the version its CRD stores",
			obj: &capiipamv1.IPAddressClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "vm-0-net0", Namespace: "default"},
				Spec:       capiipamv1.IPAddressClaimSpec{PoolRef: capiipamv1.IPPoolReference{APIGroup: ipamv1alpha2.GroupVersion.Group, Kind: "InClusterIPPool", Name: "pool-a"}},
				Status:     capiipamv1.IPAddressClaimStatus{AddressRef: capiipamv1.IPAddressReference{Name: "vm-0-net0"}},
			},
			got: &capiipamv1.IPAddressClaim{}, withStatus: true,
		},
		"IPAddress": {
			reason: "the Cluster API IPAddress type matches the version its CRD stores",
			obj: &capiipamv1.IPAddress{
				ObjectMeta: metav1.ObjectMeta{Name: "vm-0-net0", Namespace: "default"},
				Spec: capiipamv1.IPAddressSpec{
					ClaimRef: capiipamv1.IPAddressClaimReference{Name: "vm-0-net0"},
					PoolRef:  capiipamv1.IPPoolReference{APIGroup: ipamv1alpha2.GroupVersion.Group, Kind: "InClusterIPPool", Name: "pool-a"},
					Address:  "10.1.0.64", Prefix: ptr.To[int32](24), Gateway: "10.1.0.1",
				},
			},
			got: &capiipamv1.IPAddress{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := tc.obj.DeepCopyObject()
			roundTrip(t, c, tc.obj, tc.got, tc.withStatus)
			if diff := cmp.Diff(want, tc.got, ignoreServerFields, cmpopts.IgnoreFields(metav1.TypeMeta{}, "Kind", "APIVersion")); diff != "" {
				t.Errorf("%s: -sent +read back:\n%s", tc.reason, diff)
			}
		})
	}
}
