package capmoxrender_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// bridgeRefusal is render's refusal of proxmox.network.bridge b.
func bridgeRefusal(b string) string {
	return `proxmox.network.bridge "` + b + `" is not a Linux bridge name such as vmbr0 (1 to 15 letters, digits, hyphens, underscores or dots, starting with a letter): ` +
		`capmox writes it into the VM's net0 as it is, so a comma would start a setting of its own; put the VLAN in proxmox.network.vlan`
}

func TestNodesRefusals(t *testing.T) {
	type mut = func(*capmoxrender.KubernetesNodes, *capmoxrender.Options)
	vpc := func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
		n.Spec.Proxmox.Network = capmoxrender.NodeNetwork{VPC: "net", Subnet: "private"}
		o.Networks = networks(t)
	}
	cases := map[string]struct {
		reason string
		mutate mut
		want   string
	}{
		"Accepted": {reason: "the control renders", mutate: func(*capmoxrender.KubernetesNodes, *capmoxrender.Options) {}},
		"NoCPU":    {reason: "no instanceType on proxmox", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Resources.CPU = nil }, want: "substrate proxmox requires resources.cpu and resources.memory: there is no instanceType to size the pool from"},
		"NoMemory": {reason: "both sizes are needed", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Resources.Memory = nil }, want: "substrate proxmox requires resources.cpu and resources.memory: there is no instanceType to size the pool from"},
		"NoTags":   {reason: "capmox clones a template", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.TemplateTags = nil }, want: "substrate proxmox requires proxmox.templateTags: capmox clones a VM template and has no image URL to fall back on"},
		"NoBridge": {reason: "raw mode needs a bridge", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.Network.Bridge = "" }, want: "substrate proxmox requires proxmox.network.bridge"},
		"NoDNS":    {reason: "off-cluster workers need resolvers", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.DNSServers = nil }, want: "substrate proxmox requires proxmox.dnsServers: an off-cluster worker cannot resolve through the management cluster's CoreDNS"},
		"BadDNS": {reason: "entries are addresses", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.DNSServers = []string{"8.8.8.8:53"}
		}, want: `proxmox.dnsServers[0] is "8.8.8.8:53": entries must be IPv4 or IPv6 addresses. Write each resolver as a bare address such as 1.1.1.1 or 2606:4700:4700::1111, without a port or a name.`},
		"StorageLinked": {reason: "storage is a full-clone parameter", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.Storage = "main-pool" },
			want: "proxmox.storage needs full: true: a target storage is a full-clone parameter, and a linked clone always lives on the template's storage"},
		"StorageFullAccepted": {reason: "storage with a full clone renders", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.Storage, n.Spec.Proxmox.Full = "main-pool", true
		}},
		"GPUsWithoutMappings": {reason: "gpus are placed on the PCI mappings' devices", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.GPUs = []capmoxrender.GPU{{Name: "a100"}}
		}, want: "gpus needs the Proxmox VE cluster's PCI mappings to place the workers on their devices: pass --pci-mappings FILE (Options.PCIMappings) with the answer of pvesh get /cluster/mapping/pci --output-format json"},
		"Serial": {reason: "kubevirt only", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.LogSerialConsole = true }, want: "logSerialConsole is a kubevirt-only field; use the Proxmox serial console on the VM"},
		"PodCPU": {reason: "kubevirt only", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.PodCPURequest = q("0") }, want: "podCpuLimit/podCpuRequest size the virt-launcher pod and are kubevirt-only"},
		"OSImage": {reason: "the disk comes from the template", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.OSImage = json.RawMessage(`{"factory":{}}`)
		}, want: "substrate proxmox does not take osImage: the worker disk is cloned from the Proxmox VM template. Remove osImage and use talos.version / talos.schematicID for the in-guest installer target."},
		"Substrate": {reason: "unknown substrate", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Substrate = "xen" }, want: `substrate "xen" is not supported; use "kubevirt" or "proxmox"`},
		"VPCAndBridge": {reason: "a VPC brings its bridge", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			vpc(n, o)
			n.Spec.Proxmox.Network.Bridge = "vmbr0"
		}, want: "proxmox.network: set either vpc/subnet or bridge/vlan, not both; a VPC subnet's bridge and VLAN come from the platform"},
		"VPCAccepted": {reason: "a Ready subnet renders", mutate: vpc},
		"ExtraNoVPC": {reason: "extra NICs only on VPC subnets", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			vpc(n, o)
			n.Spec.Proxmox.AdditionalNetworks = []capmoxrender.AdditionalNetwork{{Name: "net1"}}
		}, want: "proxmox.additionalNetworks[net1]: set vpc and subnet; extra NICs only attach to Proxmox-backed VPC subnets"},
		"ExtraNet0": {reason: "net0 is the primary NIC", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			vpc(n, o)
			n.Spec.Proxmox.AdditionalNetworks = []capmoxrender.AdditionalNetwork{{Name: "net0", VPC: "net", Subnet: "private"}}
		}, want: `proxmox.additionalNetworks: name "net0" must be net1..net31`},
		"ExtraNet32": {reason: "PVE has net0..net31", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			vpc(n, o)
			n.Spec.Proxmox.AdditionalNetworks = []capmoxrender.AdditionalNetwork{{Name: "net32", VPC: "net", Subnet: "private"}}
		}, want: `proxmox.additionalNetworks: name "net32" must be net1..net31`},
		"ExtraTwice": {reason: "names are unique", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			vpc(n, o)
			a := capmoxrender.AdditionalNetwork{Name: "net1", VPC: "net", Subnet: "private"}
			n.Spec.Proxmox.AdditionalNetworks = []capmoxrender.AdditionalNetwork{a, a}
		}, want: "proxmox.additionalNetworks: net1 is used twice"},
		"ExtraGapV08": {reason: "capmox v0.8+ refuses a Machine whose NICs have a gap", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			vpc(n, o)
			o.Capmox = capmoxrender.CapmoxV08
			n.Spec.Proxmox.AdditionalNetworks = []capmoxrender.AdditionalNetwork{{Name: "net2", VPC: "net", Subnet: "private"}}
		}, want: `proxmox.additionalNetworks: the NICs are net0, net2: capmox v0.8 and later admit a machine only when its NICs are net0, net1, net2, … without a gap ("Non-consecutive proxmox interface name"), and the Machines made from this template would all be refused; name the additional NICs net1 to net1`},
		"ExtraNet10V08": {reason: "capmox v0.8+ sorts NIC names as text", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			vpc(n, o)
			o.Capmox = capmoxrender.CapmoxV08
			for i := 1; i <= 10; i++ {
				n.Spec.Proxmox.AdditionalNetworks = append(n.Spec.Proxmox.AdditionalNetworks, capmoxrender.AdditionalNetwork{Name: "net" + strconv.Itoa(i), VPC: "net", Subnet: "private"})
			}
		}, want: `proxmox.additionalNetworks: net10: capmox v0.8 and later order NIC names as text (net10 sorts before net2) and refuse a machine whose names are not net0, net1, net2, … in that order ("Non-consecutive proxmox interface name"), so no machine with net10 or beyond is admitted; use at most nine additional NICs, net1 to net9`},
		"ExtraConsecutiveV08Accepted": {reason: "net1, net2 in any order are admitted", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			vpc(n, o)
			o.Capmox = capmoxrender.CapmoxV08
			n.Spec.Proxmox.AdditionalNetworks = []capmoxrender.AdditionalNetwork{{Name: "net2", VPC: "net", Subnet: "private"}, {Name: "net1", VPC: "net", Subnet: "private"}}
		}},
		"ExtraGapV07Accepted": {reason: "capmox v0.7 admits a gap", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			vpc(n, o)
			n.Spec.Proxmox.AdditionalNetworks = []capmoxrender.AdditionalNetwork{{Name: "net2", VPC: "net", Subnet: "private"}}
		}},
		"StartupBelow30s": {reason: "Cluster API's webhook wants at least 30s", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.NodeStartupTimeout = "29s" },
			want: `nodeStartupTimeout "29s" is below 30s, the least Cluster API's MachineHealthCheck webhook admits ("must be at least 30s"); a worker needs longer than that to clone, boot and join anyway`},
		"Startup30sAccepted": {reason: "30s is the bound, inclusive", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.NodeStartupTimeout = "30s" }},
		"MaxUnhealthyOverflow": {reason: "Cluster API parses the percentage as an int", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.MaxUnhealthy = q("99999999999999999999%")
		}, want: `maxUnhealthy "99999999999999999999%" is too large: Cluster API refuses a percentage that does not fit a 64-bit integer; anything from 100% up lets every worker be remediated at once`},
		"MaxUnhealthy150Accepted": {reason: "Cluster API admits more than 100%", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.MaxUnhealthy = q("150%") }},
		"KubeletBadMemory": {reason: "a reservation is a memory quantity", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Kubelet.SystemReservedMemory = q("lots")
		}, want: `kubelet.systemReservedMemory "lots" is not a memory quantity such as 512Mi or 1Gi`},
		"KubeletZeroCPU": {reason: "a reservation is above zero", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Kubelet.KubeReservedCPU = q("0")
		}, want: `kubelet.kubeReservedCpu "0" must be above zero: leave it out for the default`},
		"KubeletTooMuchMemory": {reason: "the reservations leave memory for Pods", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Kubelet.SystemReservedMemory = q("3.5Gi")
		}, want: "kubelet: the reserved memory (systemReservedMemory 3.5Gi + kubeReservedMemory 256Mi + evictionHardMemory 7%) must be less than the worker's 4096Mi: lower a reservation or give the workers more memory"},
		"KubeletTooMuchCPU": {reason: "the reservations leave CPU for Pods", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Kubelet.SystemReservedCPU = q("2")
		}, want: "kubelet: the reserved CPU (systemReservedCpu 2 + kubeReservedCpu 100m) must be less than the worker's 2 cores: lower a reservation or give the workers more CPU"},
		"KubeletEvictionOrder": {reason: "hard below soft", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Kubelet.EvictionHardMemory = q("12%")
		}, want: "kubelet.evictionHardMemory 12% must be below kubelet.evictionSoftMemory 10%: the kubelet evicts softly first, then hard"},
		"KubeletEvictionKinds": {reason: "one kind for both", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Kubelet.EvictionHardMemory = q("200Mi")
		}, want: "kubelet.evictionHardMemory 200Mi and kubelet.evictionSoftMemory 10% must be of one kind, both percentages or both memory quantities"},
		"KubeletEvictionPercent": {reason: "a percentage is at most 100", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Kubelet.EvictionSoftMemory = q("150%")
		}, want: `kubelet.evictionSoftMemory "150%" is not a percentage above 0 and at most 100`},
		"KubeletAccepted": {reason: "every reservation given", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Kubelet = capmoxrender.Kubelet{SystemReservedMemory: q("300Mi"), KubeReservedMemory: q("300Mi"),
				SystemReservedCPU: q("0.1"), KubeReservedCPU: q("100m"), EvictionHardMemory: q("100Mi"), EvictionSoftMemory: q("200Mi")}
		}},
		"FactoryNotURL": {reason: "the factory is an http(s) URL", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Talos.ImageFactoryURL = "factory.internal"
		}, want: `talos.imageFactoryURL "factory.internal" is not an http(s) URL of an Image Factory, such as https://factory.talos.dev`},
		"MirrorNoEndpoints": {reason: "a mirror needs endpoints", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Talos.RegistryMirrors = map[string]capmoxrender.RegistryMirror{"ghcr.io": {}}
		}, want: "talos.registryMirrors[ghcr.io].endpoints is empty: list the mirror's URLs, such as https://mirror.local/v2 or http://10.0.0.5:5000"},
		"MirrorBadEndpoint": {reason: "an endpoint is a URL", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Talos.RegistryMirrors = map[string]capmoxrender.RegistryMirror{"ghcr.io": {Endpoints: []string{"mirror.local"}}}
		}, want: `talos.registryMirrors[ghcr.io].endpoints[0] "mirror.local" is not an http(s) URL of a registry, such as https://mirror.local`},
		"MirrorBadHost": {reason: "a mirror is keyed by a registry host", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Talos.RegistryMirrors = map[string]capmoxrender.RegistryMirror{"https://ghcr.io": {Endpoints: []string{"https://m"}}}
		}, want: `talos.registryMirrors[https://ghcr.io]: "https://ghcr.io" is not a registry host such as ghcr.io or registry.local:5000 (or * for every registry)`},
		"KubectlImage": {reason: "an image reference", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Images.Kubectl = "Not An Image"
		}, want: `images.kubectl: "Not An Image" is not an image reference (invalid reference format: repository name (library/Not An Image) must be lowercase): write name:tag, name@sha256:<64 hex> or name:tag@sha256:<64 hex>`},
		"PoolWithSpace": {reason: "proxmox.pool is a PVE pool id", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.Pool = "tenant a" },
			want: `proxmox.pool: pool name 'tenant a' contains invalid characters: name the Proxmox VE pool as pveum pool list shows it (letters, digits, '-' and '_', up to three levels joined by '/')`},
		"PoolWithSemicolon": {reason: "no shell or list separators", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.Pool = "pool;rm" },
			want: `proxmox.pool: pool name 'pool;rm' contains invalid characters: name the Proxmox VE pool as pveum pool list shows it (letters, digits, '-' and '_', up to three levels joined by '/')`},
		"PoolWithComma": {reason: "a comma lists two pools", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.Pool = "pool,x" },
			want: `proxmox.pool: pool name 'pool,x' contains invalid characters: name the Proxmox VE pool as pveum pool list shows it (letters, digits, '-' and '_', up to three levels joined by '/')`},
		"NestedPoolAccepted": {reason: "a nested pool is a pool id", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.Pool = "tenants/e2e" }},
		"ExtraNotReady": {reason: "extra NIC subnet must be Ready", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			vpc(n, o)
			n.Spec.Proxmox.AdditionalNetworks = []capmoxrender.AdditionalNetwork{{Name: "net1", VPC: "net", Subnet: "data"}}
		}, want: `proxmox.additionalNetworks[net1]: Proxmox network tenant-e2e/` + subnetID("tenant-e2e", "net", "data") + ` (VPC "net" subnet "data") is not Ready: Pending: the controller has not reported yet`},
		"PoolSwitch": {reason: "a live KubeVirt pool must not switch", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			l := &capmoxrender.Objects{}
			l.Add(liveMD(n.Namespace, "kubernetes-k8s-e2e-md0", "KubevirtMachineTemplate"))
			o.Guards = l
		}, want: "already runs KubevirtMachineTemplate workers"},
		"ParentKubevirt": {reason: "the pool follows its cluster", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			l := &capmoxrender.Objects{}
			l.Add(liveCluster(n.Namespace, "kubernetes-k8s-e2e", "KubevirtCluster"))
			o.Guards = l
		}, want: `parent cluster "kubernetes-k8s-e2e" runs on KubevirtCluster`},
		"MTUBelowWebhook": {reason: "the capmox webhook wants 1 or >= 1280", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.Network.MTU = new(int)
			*n.Spec.Proxmox.Network.MTU = 1000
		}, want: "proxmox.network.mtu is 1000: capmox accepts 1 (inherit the bridge MTU) or 1280 to 65520"},
		"BridgeWithTag": {reason: "capmox writes the bridge into net0 unescaped, so a comma would add a tag of its own", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.Network.Bridge = "vmbr70,tag=102"
		}, want: bridgeRefusal("vmbr70,tag=102")},
		"BridgeTooLong": {reason: "Linux names an interface in at most 15 bytes", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.Network.Bridge = "vmbr0123456789ab"
		}, want: bridgeRefusal("vmbr0123456789ab")},
		"Bridge15Accepted": {reason: "15 bytes is a Linux interface name", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.Network.Bridge = "vmbr0123456789a"
		}},
		"StatusBridgeWithTag": {reason: "a Proxmox network's bridge is held to the same rule", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			vpc(n, o)
			ns := "tenant-e2e"
			net := pxnet(ns, subnetID(ns, "net", "private"), true)
			net.Object["status"].(map[string]any)["bridge"] = "vmbr1,tag=5"
			l := &capmoxrender.Objects{}
			l.Add(net)
			o.Networks = l
		}, want: `proxmox.network: Proxmox network tenant-e2e/` + subnetID("tenant-e2e", "net", "private") + ` reports bridge "vmbr1,tag=5", which is not a Linux bridge name such as vmbr0 (1 to 15 letters, digits, hyphens, underscores or dots, starting with a letter)`},
		"VLAN4095": {reason: "capmox takes 1..4094", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			v := 4095
			n.Spec.Proxmox.Network.VLAN = &v
		}, want: "proxmox.network.vlan is 4095: capmox takes a VLAN tag from 1 to 4094"},
		"MaxUnhealthy": {reason: "bare integer or percentage", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.MaxUnhealthy = q("half") }, want: `maxUnhealthy must be a bare integer (e.g. 0, 1) or an integer percentage (e.g. 50%), got "half"`},
		"BadTag": {reason: "the CRD pattern", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.TemplateTags = []string{"-x"}
		}, want: `proxmox.templateTags[0] is "-x": a Proxmox tag starts with a letter, digit or _ and holds only letters, digits and _ - + .`},
		"NoCluster": {reason: "the parent is required", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Cluster = "" }, want: "cluster is required: name the parent Kubernetes object; the KubernetesNodes object is named <cluster>-<pool>"},
		"ZeroCPU":   {reason: "a size above zero", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Resources.CPU = q("0") }, want: `resources.cpu: CPU quantity "0" must be above zero`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n, o := validNodes(), capmoxrender.Options{}
			tc.mutate(&n, &o)
			_, err := capmoxrender.RenderNodes(context.Background(), n, o)
			if strings.HasPrefix(name, "PoolSwitch") || strings.HasPrefix(name, "ParentKubevirt") {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s: want a refusal containing %q, got %v", tc.reason, tc.want, err)
				}
				return
			}
			checkRefusal(t, tc.reason, err, tc.want)
		})
	}
}

func TestGuardsOffline(t *testing.T) {
	// No lookup means no guard: the same input that a live KubeVirt pool
	// refuses renders offline.
	if _, err := capmoxrender.RenderNodes(context.Background(), validNodes(), capmoxrender.Options{}); err != nil {
		t.Fatalf("offline render: %v", err)
	}
	l := &capmoxrender.Objects{Err: context.DeadlineExceeded}
	_, err := capmoxrender.RenderNodes(context.Background(), validNodes(), capmoxrender.Options{Guards: l})
	if err == nil || !strings.Contains(err.Error(), "cannot look up MachineDeployment") {
		t.Fatalf("a failing lookup must be an error, got %v", err)
	}
}

// TestNodesRefusalOrder: with every fault at once, the refusals come one by
// one in the chart's order as each fault is mended.
func TestNodesRefusalOrder(t *testing.T) {
	n := validNodes()
	n.Spec.Resources = capmoxrender.Resources{}
	n.Spec.Proxmox = capmoxrender.NodesProxmox{Storage: "main-pool"}
	n.Spec.OSImage = json.RawMessage(`{"builtin":{}}`)
	n.Spec.GPUs = []capmoxrender.GPU{{}}
	n.Spec.LogSerialConsole = true
	n.Spec.PodCPULimit = q("1")
	mends := []struct {
		want string
		mend func()
	}{
		{"substrate proxmox requires resources.cpu and resources.memory", func() { n.Spec.Resources = validNodes().Spec.Resources }},
		{"substrate proxmox requires proxmox.templateTags", func() { n.Spec.Proxmox.TemplateTags = []string{"talos"} }},
		{"substrate proxmox requires proxmox.network.bridge", func() { n.Spec.Proxmox.Network.Bridge = "vmbr0" }},
		{"substrate proxmox requires proxmox.dnsServers", func() { n.Spec.Proxmox.DNSServers = []string{"1.1.1.1"} }},
		{"substrate proxmox requires proxmox.pool", func() { n.Spec.Proxmox.Pool = "tenant-e2e" }},
		{"substrate proxmox does not take osImage", func() { n.Spec.OSImage = nil }},
		{"proxmox.storage needs full: true", func() { n.Spec.Proxmox.Full = true }},
		{"logSerialConsole is a kubevirt-only field", func() { n.Spec.LogSerialConsole = false }},
		{"podCpuLimit/podCpuRequest size the virt-launcher pod", func() { n.Spec.PodCPULimit = nil }},
		{"gpus[0].name is empty", func() { n.Spec.GPUs = nil }},
	}
	for _, m := range mends {
		_, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{})
		if err == nil || !strings.HasPrefix(err.Error(), m.want) {
			t.Fatalf("want the refusal starting %q, got %v", m.want, err)
		}
		m.mend()
	}
	if _, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{}); err != nil {
		t.Fatalf("with every fault mended the pool renders, got %v", err)
	}
}
