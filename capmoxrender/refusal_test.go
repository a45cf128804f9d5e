package capmoxrender_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/cozyid"
)

func validCluster() capmoxrender.Kubernetes {
	return capmoxrender.Kubernetes{Name: "k8s-e2e", Namespace: "tenant-e2e", Spec: capmoxrender.KubernetesSpec{
		Substrate: "proxmox", Version: "v1.35.2",
		Proxmox: capmoxrender.ClusterProxmox{
			DNSServers: []string{"8.8.8.8", "1.1.1.1"},
			IPv4Config: capmoxrender.IPv4Config{Addresses: []string{"10.0.0.180-10.0.0.185"}, Gateway: "10.0.0.1"},
			CCM:        capmoxrender.CredentialsRef{CredentialsSecretName: "pve"},
			CSI:        capmoxrender.CSI{CredentialsSecretName: "pve", StorageClasses: []capmoxrender.StorageClass{{Name: "proxmox", Storage: "vm-disks1"}}},
		},
	}}
}

func q(s string) *capmoxrender.Quantity { v := capmoxrender.Quantity(s); return &v }

func validNodes() capmoxrender.KubernetesNodes {
	return capmoxrender.KubernetesNodes{Name: "k8s-e2e-md0", Namespace: "tenant-e2e", Spec: capmoxrender.NodesSpec{
		Cluster: "k8s-e2e", Substrate: "proxmox", Version: "v1.35.2",
		Resources: capmoxrender.Resources{CPU: q("2"), Memory: q("4Gi")},
		Proxmox: capmoxrender.NodesProxmox{
			TemplateTags: []string{"cozystack", "talos"},
			Network:      capmoxrender.NodeNetwork{Bridge: "vmbr50"},
			DNSServers:   []string{"8.8.8.8"},
			Pool:         "tenant-e2e",
		},
	}}
}

// networks is a lookup with a Ready network for (net, private) and a
// pending one for (net, data) in tenant-e2e.
func networks(t *testing.T) *capmoxrender.Objects {
	t.Helper()
	ns := "tenant-e2e"
	o := &capmoxrender.Objects{}
	o.Add(pxnet(ns, subnetID(ns, "net", "private"), true))
	o.Add(pxnet(ns, subnetID(ns, "net", "data"), false))
	return o
}

// subnetID is the ProxmoxNetwork name of subnet of VPC vpc in ns.
func subnetID(ns, vpc, subnet string) string {
	return string(cozyid.Subnet(ns, cozyid.VPC(ns, cozyid.VPCName(vpc)), cozyid.SubnetName(subnet)))
}

func pxnet(ns, name string, ready bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "proxmox.cozystack.io/v1alpha1", "kind": "ProxmoxNetwork",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"status":   map[string]any{"bridge": "vmbr1", "vlan": int64(3901), "gateway": "10.1.0.1", "prefix": int64(24)},
	}}
	if ready {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready"}}, "status", "conditions")
	}
	return u
}

func liveCluster(ns, name, infraKind string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"infrastructureRef": map[string]any{"kind": infraKind, "name": name}},
	}}
}

func liveMD(ns, name, infraKind string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"infrastructureRef": map[string]any{"kind": infraKind}}}},
	}}
}

func TestClusterRefusals(t *testing.T) {
	const switchMsg = `kubernetes: cluster "kubernetes-k8s-e2e" already runs on KubevirtCluster and substrate is now "proxmox", which renders a ProxmoxCluster. Switching the substrate of a live cluster removes the cloud-controller-manager, the CSI controller and the in-tenant CSI HelmRelease, so Flux uninstalls the driver behind every existing PVC. Create a new cluster on the other substrate and migrate the workloads instead.`
	cases := map[string]struct {
		reason string
		mutate func(*capmoxrender.Kubernetes, *capmoxrender.Options)
		want   string
	}{
		"Accepted":         {reason: "the control renders", mutate: func(*capmoxrender.Kubernetes, *capmoxrender.Options) {}},
		"UnknownSubstrate": {reason: "only kubevirt and proxmox exist", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) { k.Spec.Substrate = "vmware" }, want: `substrate "vmware" is not supported; use "kubevirt" or "proxmox"`},
		"NoAddresses": {reason: "capmox has no DHCP mode", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config = capmoxrender.IPv4Config{}
		}, want: "substrate proxmox requires proxmox.ipv4Config.addresses: capmox allocates static addresses and has no DHCP mode"},
		"BadDNS": {reason: "a DNS entry must be an address", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.DNSServers = []string{"8.8.8.8", "dns.google"}
		}, want: `proxmox.dnsServers[1] is "dns.google": entries must be IPv4 or IPv6 addresses. Write each resolver as a bare address such as 1.1.1.1 or 2606:4700:4700::1111, without a port or a name.`},
		"IPv6DNSAccepted": {reason: "an IPv6 resolver is an address", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.DNSServers = []string{"2606:4700:4700::1111"}
		}},
		"VPCAndIPv4": {reason: "a VPC subnet brings its own pool", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.Network = capmoxrender.SubnetRef{VPC: "net", Subnet: "private"}
		}, want: "proxmox: set either network.vpc/subnet or ipv4Config, not both; a VPC subnet brings its own IP pool"},
		"NoCCMSecret": {reason: "without a CCM nothing schedules", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.CCM.CredentialsSecretName = ""
		},
			want: "proxmox.ccm.credentialsSecretName is required on the proxmox substrate: without a cloud-controller-manager every worker keeps the uninitialized taint and the cluster schedules nothing"},
		"NoCSISecret": {reason: "an enabled CSI needs a token", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.CSI.CredentialsSecretName = ""
		},
			want: "proxmox.csi.credentialsSecretName is required on the proxmox substrate: the CSI controller cannot reach the hypervisor without an API token"},
		"CSIOffNeedsNoSecret": {reason: "a disabled CSI needs no secret", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.CSI = capmoxrender.CSI{Enabled: new(bool)}
		}},
		"NameTooLong": {reason: "pool release names must fit 53 characters", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Name = "a23456789012345678901234567890123"
		},
			want: `cluster name "a23456789012345678901234567890123" is 33 characters long: at most 32 are allowed so that every pool's KubernetesNodes release name fits Helm's 53-character limit; choose a shorter name`},
		"Name32Accepted": {reason: "32 characters is the limit, inclusive", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) { k.Name = "a2345678901234567890123456789012" }},
		"SubstrateSwitch": {reason: "a live KubeVirt cluster must not switch", mutate: func(k *capmoxrender.Kubernetes, o *capmoxrender.Options) {
			l := &capmoxrender.Objects{}
			l.Add(liveCluster(k.Namespace, "kubernetes-k8s-e2e", "KubevirtCluster"))
			o.Guards = l
		}, want: switchMsg},
		"LiveProxmoxAccepted": {reason: "a live Proxmox cluster re-renders", mutate: func(k *capmoxrender.Kubernetes, o *capmoxrender.Options) {
			l := &capmoxrender.Objects{}
			l.Add(liveCluster(k.Namespace, "kubernetes-k8s-e2e", "ProxmoxCluster"))
			o.Guards = l
		}},
		"GatewayRequiredV08": {reason: "v1alpha2 requires the gateway", mutate: func(k *capmoxrender.Kubernetes, o *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config.Gateway = ""
			o.Capmox = capmoxrender.CapmoxV08
		}, want: "proxmox.ipv4Config.gateway is required for capmox v0.8 and later: its v1alpha2 ProxmoxCluster requires ipv4Config.gateway"},
		"AddressWithSpaces": {reason: "the IPAM provider parses no space", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config.Addresses = []string{"10.0.0.180 - 10.0.0.185"}
		}, want: `proxmox.ipv4Config.addresses[0]: "10.0.0.180 - 10.0.0.185" holds a space or tab, which the IPAM provider refuses; write an address, a range such as 10.0.0.160-10.0.0.170, or a CIDR`},
		"AddressWithTab": {reason: "nor a tab", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config.Addresses = []string{"10.0.0.180\t"}
		}, want: `proxmox.ipv4Config.addresses[0]: "10.0.0.180\t" holds a space or tab, which the IPAM provider refuses; write an address, a range such as 10.0.0.160-10.0.0.170, or a CIDR`},
		"RangeAcrossSubnets": {reason: "the IPAM provider holds every entry to the first one's subnet", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config.Addresses = []string{"10.0.0.250-10.0.1.5"}
			k.Spec.Proxmox.IPv4Config.Gateway = "10.0.0.1"
		}, want: `proxmox.ipv4Config.addresses[0] is "10.0.0.250-10.0.1.5", which is not inside 10.0.0.0/24, the subnet of the first address with prefix 24: the IPAM provider refuses such a pool ("provided address belongs to a different subnet than others"); keep every range inside one subnet, or fix the prefix`},
		"Prefix32Range": {reason: "a range cannot sit in a /32", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			p := 32
			k.Spec.Proxmox.IPv4Config.Prefix = &p
		}, want: `proxmox.ipv4Config.addresses[0] is "10.0.0.180-10.0.0.185", which is not inside 10.0.0.180/32, the subnet of the first address with prefix 32: the IPAM provider refuses such a pool ("provided address belongs to a different subnet than others"); keep every range inside one subnet, or fix the prefix`},
		"SecondEntryElsewhere": {reason: "a second entry in another subnet", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config.Addresses = append(k.Spec.Proxmox.IPv4Config.Addresses, "10.0.9.0/28")
		}, want: `proxmox.ipv4Config.addresses[1] is "10.0.9.0/28", which is not inside 10.0.0.0/24, the subnet of the first address with prefix 24: the IPAM provider refuses such a pool ("provided address belongs to a different subnet than others"); keep every range inside one subnet, or fix the prefix`},
		"GatewayOutside": {reason: "the next hop must be on the subnet", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config.Gateway = "10.0.1.1"
		}, want: "proxmox.ipv4Config.gateway 10.0.1.1 is not inside 10.0.0.0/24, the subnet of the addresses: a worker reaches its default gateway only inside its own subnet; give the router's address in that subnet"},
		"GatewayNetwork": {reason: "no router has the network address", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config.Gateway = "10.0.0.0"
		}, want: "proxmox.ipv4Config.gateway 10.0.0.0 is the network or broadcast address of 10.0.0.0/24, which no router has; give the router's address"},
		"GatewayBroadcast": {reason: "nor the broadcast address", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config.Gateway = "10.0.0.255"
		}, want: "proxmox.ipv4Config.gateway 10.0.0.255 is the network or broadcast address of 10.0.0.0/24, which no router has; give the router's address"},
		"GatewayLastHostAccepted": {reason: "the last host address is a router's", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config.Gateway = "10.0.0.254"
		}},
		"DualStackAccepted": {reason: "an IPv6 pool beside the IPv4 one", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv6Config = capmoxrender.IPConfig{Addresses: []string{"fd00::10-fd00::20"}, Gateway: "fd00::1"}
		}},
		"IPv6NoAddresses": {reason: "an IPv6 pool needs addresses", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv6Config = capmoxrender.IPConfig{Gateway: "fd00::1"}
		}, want: "proxmox.ipv6Config.addresses is empty: list the IPv6 addresses of the dual-stack pool, or leave ipv6Config out"},
		"IPv6GivenIPv4": {reason: "the IPv6 pool takes IPv6 only", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv6Config = capmoxrender.IPConfig{Addresses: []string{"10.0.0.9"}, Gateway: "fd00::1"}
		}, want: `proxmox.ipv6Config.addresses[0]: "10.0.0.9" is not an IPv6 address; write an address, a range such as fd00::10-fd00::20, or a CIDR`},
		"IPv6GatewayOutside": {reason: "the IPv6 gateway is on the subnet", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.IPv6Config = capmoxrender.IPConfig{Addresses: []string{"fd00::10"}, Gateway: "fd01::1"}
		}, want: "proxmox.ipv6Config.gateway fd01::1 is not inside fd00::/64, the subnet of the addresses: a worker reaches its default gateway only inside its own subnet; give the router's address in that subnet"},
		"IPv6GatewayRequiredV08": {reason: "v1alpha2 requires each pool's gateway", mutate: func(k *capmoxrender.Kubernetes, o *capmoxrender.Options) {
			k.Spec.Proxmox.IPv6Config = capmoxrender.IPConfig{Addresses: []string{"fd00::10"}}
			o.Capmox = capmoxrender.CapmoxV08
		}, want: "proxmox.ipv6Config.gateway is required for capmox v0.8 and later: its v1alpha2 ProxmoxCluster requires ipv6Config.gateway"},
		"IPv6WithVPC": {reason: "a VPC subnet is IPv4 only", mutate: func(k *capmoxrender.Kubernetes, o *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config = capmoxrender.IPConfig{}
			k.Spec.Proxmox.IPv6Config = capmoxrender.IPConfig{Addresses: []string{"fd00::10"}, Gateway: "fd00::1"}
			k.Spec.Proxmox.Network = capmoxrender.SubnetRef{VPC: "net", Subnet: "private"}
		}, want: "proxmox: a VPC subnet's pool is IPv4 only, so ipv6Config (dual stack) goes with ipv4Config, not with network.vpc/subnet"},
		"AllowedNodesComma": {reason: "one item names one node, as the pool's rule says", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.AllowedNodes = []string{"pve1,pve2"}
		}, want: `proxmox.allowedNodes[0] is "pve1,pve2", which is not a Proxmox node name (letters, digits and hyphens): list each node as an item of its own`},
		"AllowedNodesAccepted": {reason: "two nodes, two items", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.AllowedNodes = []string{"pve1", "pve2"}
		}},
		"GatewayOptionalV07": {reason: "v1alpha1 takes no gateway", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) { k.Spec.Proxmox.IPv4Config.Gateway = "" }},
		"VPCNotBacked": {reason: "the subnet must be Proxmox-backed", mutate: func(k *capmoxrender.Kubernetes, o *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config = capmoxrender.IPv4Config{}
			k.Spec.Proxmox.Network = capmoxrender.SubnetRef{VPC: "net", Subnet: "other"}
			o.Networks = networks(t)
		}, want: `proxmox.network: subnet "other" of VPC "net" is not Proxmox-backed (no ProxmoxNetwork ` + subnetID("tenant-e2e", "net", "other") + ` in tenant-e2e); add proxmox: {} to the subnet in the VPC application`},
		"VPCNotReady": {reason: "the network must be Ready", mutate: func(k *capmoxrender.Kubernetes, o *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config = capmoxrender.IPv4Config{}
			k.Spec.Proxmox.Network = capmoxrender.SubnetRef{VPC: "net", Subnet: "data"}
			o.Networks = networks(t)
		}, want: `proxmox.network: Proxmox network tenant-e2e/` + subnetID("tenant-e2e", "net", "data") + ` (VPC "net" subnet "data") is not Ready: Pending: the controller has not reported yet`},
		"VPCHalf": {reason: "both vpc and subnet", mutate: func(k *capmoxrender.Kubernetes, o *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config = capmoxrender.IPv4Config{}
			k.Spec.Proxmox.Network = capmoxrender.SubnetRef{VPC: "net"}
			o.Networks = networks(t)
		}, want: "proxmox.network: set both vpc and subnet"},
		"VPCReadyAccepted": {reason: "a Ready Proxmox-backed subnet renders", mutate: func(k *capmoxrender.Kubernetes, o *capmoxrender.Options) {
			k.Spec.Proxmox.IPv4Config = capmoxrender.IPv4Config{}
			k.Spec.Proxmox.Network = capmoxrender.SubnetRef{VPC: "net", Subnet: "private"}
			o.Networks = networks(t)
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			k, o := validCluster(), capmoxrender.Options{}
			tc.mutate(&k, &o)
			_, err := capmoxrender.RenderCluster(context.Background(), k, o)
			checkRefusal(t, tc.reason, err, tc.want)
		})
	}
}

func checkRefusal(t *testing.T, reason string, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("%s: want a render, got %v", reason, err)
		}
		return
	}
	var r *capmoxrender.RefusalError
	if !errors.As(err, &r) || !errors.Is(err, capmoxrender.ErrRefused) {
		t.Fatalf("%s: want a *RefusalError, got %T %v", reason, err, err)
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("%s: message (-want +got):\n%s", reason, diff)
	}
}

// TestClusterMemoryAdjustment: proxmox.schedulerHints.memoryAdjustment
// reaches the ProxmoxCluster of both generations (0 included, which turns
// capmox's memory check off); a negative value is refused by name.
func TestClusterMemoryAdjustment(t *testing.T) {
	for _, gen := range []capmoxrender.Capmox{capmoxrender.CapmoxV07, capmoxrender.CapmoxV08} {
		for _, v := range []int64{0, 150} {
			k := validCluster()
			k.Spec.Proxmox.SchedulerHints = &capmoxrender.SchedulerHints{MemoryAdjustment: &v}
			objs, err := capmoxrender.RenderCluster(context.Background(), k, capmoxrender.Options{Capmox: gen})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, u := range objs {
				if u.GetKind() == "ProxmoxCluster" {
					got, ok, _ := unstructured.NestedInt64(u.Object, "spec", "schedulerHints", "memoryAdjustment")
					found = ok && got == v
				}
			}
			if !found {
				t.Errorf("%s: memoryAdjustment %d not in the ProxmoxCluster", gen, v)
			}
		}
		k := validCluster()
		k.Spec.Proxmox.SchedulerHints = &capmoxrender.SchedulerHints{MemoryAdjustment: new(int64)}
		*k.Spec.Proxmox.SchedulerHints.MemoryAdjustment = -1
		_, err := capmoxrender.RenderCluster(context.Background(), k, capmoxrender.Options{Capmox: gen})
		checkRefusal(t, "a negative percentage", err, "proxmox.schedulerHints.memoryAdjustment is -1: it is a percentage of each node's memory, 0 or more (100 by default, above 100 overcommits, 0 turns capmox's memory check off)")
	}
}
