package sim

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// Zone returns a ProxmoxNetworkZone.
func Zone(name, bridge, provider string, ranges ...string) *v1alpha1.ProxmoxNetworkZone {
	return &v1alpha1.ProxmoxNetworkZone{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.ProxmoxNetworkZoneSpec{Bridge: bridge, ProviderNetwork: provider, VLANRanges: ranges},
	}
}

// ProviderNetwork returns a Kube-OVN ProviderNetwork whose status says ready.
func ProviderNetwork(name string, ready bool) *kubeovnv1.ProviderNetwork {
	p := &kubeovnv1.ProviderNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kubeovnv1.ProviderNetworkSpec{DefaultInterface: "ens19"},
	}
	p.Status.Ready = ready
	if ready {
		p.Status.ReadyNodes = []string{"node-1", "node-2"}
	}
	return p
}

// Namespace returns a namespace with labels.
func Namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// Network returns what the vpc chart writes for one Proxmox-backed subnet
// named id in namespace ns: the Kube-OVN Subnet (labelled with its tenant
// namespace ns, cidr, first address as
// gateway, spec.vlan naming the Vlan of the same name, the middle half of
// the CIDR in excludeIps), the InClusterIPPool over that middle half, and
// the ProxmoxNetwork binding them to zone. cidr must be an IPv4 /24 to /28.
func Network(ns, id, zone, vpc, cidr string) ([]client.Object, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() || p.Bits() > 28 {
		return nil, fmt.Errorf("cannot build network %s/%s: %q is not an IPv4 CIDR of /28 or larger", ns, id, cidr)
	}
	p = p.Masked()
	size := uint32(1) << (32 - p.Bits())
	base := ip4(p.Addr())
	from, to := u32addr(base+size/4), u32addr(base+size/4*3-1)
	gw := u32addr(base + 1)
	objs := []client.Object{
		&kubeovnv1.Subnet{
			ObjectMeta: metav1.ObjectMeta{Name: id, Labels: map[string]string{v1alpha1.LabelTenantName: ns}},
			Spec: kubeovnv1.SubnetSpec{
				Vpc: vpc, CIDRBlock: p.String(), Gateway: gw.String(), Vlan: id,
				ExcludeIps: []string{from.String() + ".." + to.String()}, LogicalGateway: true,
			},
		},
		&ipamv1alpha2.InClusterIPPool{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id},
			Spec: ipamv1alpha2.InClusterIPPoolSpec{
				Addresses: []string{from.String() + "-" + to.String()}, Prefix: p.Bits(), Gateway: gw.String(),
			},
		},
		&v1alpha1.ProxmoxNetwork{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id},
			Spec:       v1alpha1.ProxmoxNetworkSpec{Zone: zone, Subnet: id, IPPool: id},
		},
	}
	return objs, nil
}

func ip4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func u32addr(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// IPAddress returns an IPAddress allocated from the InClusterIPPool pool.
func IPAddress(ns, name, pool, address string, prefix int32) *capiipam.IPAddress {
	return &capiipam.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: capiipam.IPAddressSpec{
			ClaimRef: capiipam.IPAddressClaimReference{Name: name},
			PoolRef:  capiipam.IPPoolReference{APIGroup: capmox.IPAMGroup, Kind: capmox.KindInClusterIPPool, Name: pool},
			Address:  address,
			Prefix:   &prefix,
		},
	}
}

// Machine returns a capmox ProxmoxMachine of version "v1alpha1" (net0 in
// network.default) or "v1alpha2" (network.networkDevices) whose NIC draws
// from pool.
func Machine(ns, name, version, bridge string, vlan int, pool string) *unstructured.Unstructured {
	ref := map[string]any{"apiGroup": capmox.IPAMGroup, "kind": capmox.KindInClusterIPPool, "name": pool}
	var net map[string]any
	if version == "v1alpha2" {
		net = map[string]any{"networkDevices": []any{map[string]any{
			"name": "net0", "bridge": bridge, "vlan": int64(vlan), "ipPoolRef": []any{ref},
		}}}
	} else {
		net = map[string]any{"default": map[string]any{"bridge": bridge, "vlan": int64(vlan), "ipv4PoolRef": ref}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"network":          net,
		"templateSelector": map[string]any{"matchTags": []any{"cozystack", "talos"}},
	}}}
	u.SetAPIVersion(capmox.Group + "/" + version)
	u.SetKind(capmox.KindProxmoxMachine)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}
