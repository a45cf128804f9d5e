package capmoxrender

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// MaxClusterNameLength caps a Kubernetes name so that every pool's
// KubernetesNodes release name fits Helm's 53-character limit.
const MaxClusterNameLength = 32

// Infrastructure kinds the guards compare.
const (
	KindKubevirtCluster         = "KubevirtCluster"
	KindKubevirtMachineTemplate = "KubevirtMachineTemplate"
)

// clusterPlan is a validated Kubernetes input with every default applied.
type clusterPlan struct {
	name, release, ns string
	version           string
	replicas          int32
	allowedNodes, dns []string
	pool              poolPlan
	insecure          bool
	ccmSecret         string
	capmoxSecret      string
	csi               bool
	csiSecret         string
	storageClasses    []StorageClass
	memoryAdjustment  *int64
}

type poolPlan struct {
	addresses []string
	gateway   string
	prefix    int
	// v6 is the IPv6 pool of a dual-stack cluster, nil without one.
	v6 *poolPlan
}

// ReleaseName is the Helm release and CAPI Cluster name of a Kubernetes object.
func ReleaseName(cluster string) string { return "kubernetes-" + cluster }

func checkSubstrate(s string) error {
	switch s {
	case "proxmox":
		return nil
	case "", "kubevirt":
		return refuse("substrate", "substrate %q is rendered by the kubevirt charts, not by capmoxrender: set substrate: proxmox to run the workers on Proxmox VE", or(s, "kubevirt"))
	}
	return refuse("substrate", "substrate %q is not supported; use \"kubevirt\" or \"proxmox\"", s)
}

func checkClusterName(name string) error {
	if len(name) > MaxClusterNameLength {
		return refuse("metadata.name", "cluster name %q is %d characters long: at most %d are allowed so that every pool's KubernetesNodes release name fits Helm's 53-character limit; choose a shorter name", name, len(name), MaxClusterNameLength)
	}
	if errs := validation.IsDNS1123Label(ReleaseName(name)); len(errs) > 0 {
		return refuse("metadata.name", "cluster name %q cannot name Kubernetes objects: %s", name, errs[0])
	}
	return nil
}

func planCluster(ctx context.Context, k Kubernetes, o Options) (clusterPlan, error) {
	if err := checkSubstrate(k.Spec.Substrate); err != nil {
		return clusterPlan{}, err
	}
	if err := checkClusterName(k.Name); err != nil {
		return clusterPlan{}, err
	}
	p := clusterPlan{name: k.Name, release: ReleaseName(k.Name), ns: k.Namespace}
	if err := guardCluster(ctx, o.Guards, p.ns, p.release, k.Spec.Substrate); err != nil {
		return clusterPlan{}, err
	}
	px := k.Spec.Proxmox
	var err error
	if p.version, err = o.kubernetesVersion("version", k.Spec.Version); err != nil {
		return clusterPlan{}, err
	}
	if p.replicas, err = controlPlaneReplicas(k.Spec.ControlPlane.Replicas); err != nil {
		return clusterPlan{}, err
	}
	if p.dns, err = checkDNSServers("proxmox.dnsServers", px.DNSServers); err != nil {
		return clusterPlan{}, err
	}
	if p.allowedNodes, err = checkAllowedNodes(px.AllowedNodes); err != nil {
		return clusterPlan{}, err
	}
	if p.pool, err = planPool(ctx, k, o); err != nil {
		return clusterPlan{}, err
	}
	if h := px.SchedulerHints; h != nil && h.MemoryAdjustment != nil {
		if *h.MemoryAdjustment < 0 {
			return clusterPlan{}, refuse("proxmox.schedulerHints.memoryAdjustment", "proxmox.schedulerHints.memoryAdjustment is %d: it is a percentage of each node's memory, 0 or more (100 by default, above 100 overcommits, 0 turns capmox's memory check off)", *h.MemoryAdjustment)
		}
		p.memoryAdjustment = ptr(*h.MemoryAdjustment)
	}
	if err := planCredentials(&p, px); err != nil {
		return clusterPlan{}, err
	}
	p.insecure = px.Insecure != nil && *px.Insecure
	if p.csi {
		p.storageClasses, err = checkStorageClasses(px.CSI.StorageClasses)
	}
	return p, err
}

func guardCluster(ctx context.Context, l SubstrateLookup, ns, release, substrate string) error {
	if l == nil {
		return nil
	}
	kind, found, err := l.ClusterInfrastructureKind(ctx, ns, release)
	if err != nil {
		return fmt.Errorf("cannot look up Cluster %s/%s: %w: %w", ns, release, ErrLookup, err)
	}
	if !found || kind == "" || kind == capmox.KindProxmoxCluster {
		return nil
	}
	return refuse("substrate", "kubernetes: cluster %q already runs on %s and substrate is now %q, which renders a %s. Switching the substrate of a live cluster removes the cloud-controller-manager, the CSI controller and the in-tenant CSI HelmRelease, so Flux uninstalls the driver behind every existing PVC. Create a new cluster on the other substrate and migrate the workloads instead.", release, kind, substrate, capmox.KindProxmoxCluster)
}

func controlPlaneReplicas(r *int32) (int32, error) {
	if r == nil {
		return 2, nil
	}
	if *r < 1 {
		return 0, refuse("controlPlane.replicas", "controlPlane.replicas is %d: the control plane needs at least one replica", *r)
	}
	return *r, nil
}

// checkDNSServers refuses an empty list, a non-address entry and a
// duplicate (v1alpha2 declares dnsServers a set).
func checkDNSServers(field string, in []string) ([]string, error) {
	if len(in) == 0 {
		if field == "proxmox.dnsServers" {
			return nil, refuse(field, "substrate proxmox requires proxmox.dnsServers: an off-cluster worker cannot resolve through the management cluster's CoreDNS")
		}
		return nil, refuse(field, "%s is empty: give at least one resolver address", field)
	}
	seen := map[string]bool{}
	for i, s := range in {
		if !ValidDNSServer(s) {
			return nil, refuse(fmt.Sprintf("%s[%d]", field, i), "%s[%d] is %q: entries must be IPv4 or IPv6 addresses. Write each resolver as a bare address such as 1.1.1.1 or 2606:4700:4700::1111, without a port or a name.", field, i, s)
		}
		if seen[s] {
			return nil, refuse(fmt.Sprintf("%s[%d]", field, i), "%s[%d] is %q, which is listed twice: capmox keeps resolvers as a set, so list each once", field, i, s)
		}
		seen[s] = true
	}
	return append([]string(nil), in...), nil
}

func checkAllowedNodes(in []string) ([]string, error) {
	seen := map[string]bool{}
	for i, n := range in {
		if n == "" || seen[n] {
			return nil, refuse(fmt.Sprintf("proxmox.allowedNodes[%d]", i), "proxmox.allowedNodes[%d] is %q: list each PVE node name once, and leave the list empty to allow every node", i, n)
		}
		if !nodeName.MatchString(n) {
			return nil, refuse(fmt.Sprintf("proxmox.allowedNodes[%d]", i), "proxmox.allowedNodes[%d] is %q, which is not a Proxmox node name (letters, digits and hyphens): list each node as an item of its own", i, n)
		}
		seen[n] = true
	}
	return append([]string(nil), in...), nil
}

func planPool(ctx context.Context, k Kubernetes, o Options) (poolPlan, error) {
	px := k.Spec.Proxmox
	c := px.IPv4Config
	hasIPv4 := len(c.Addresses) > 0 || c.Gateway != "" || c.Prefix != nil
	if px.Network.Set() {
		if hasIPv4 {
			return poolPlan{}, refuse("proxmox.network", "proxmox: set either network.vpc/subnet or ipv4Config, not both; a VPC subnet brings its own IP pool")
		}
		if c6 := px.IPv6Config; len(c6.Addresses) > 0 || c6.Gateway != "" || c6.Prefix != nil {
			return poolPlan{}, refuse("proxmox.ipv6Config", "proxmox: a VPC subnet's pool is IPv4 only, so ipv6Config (dual stack) goes with ipv4Config, not with network.vpc/subnet")
		}
		n, _, err := resolveNetwork(ctx, o.Networks, "proxmox.network", k.Namespace, px.Network)
		if err != nil {
			return poolPlan{}, err
		}
		gw, err := parseIPv4(n.Gateway)
		if err != nil || n.Prefix < 1 || n.Prefix > 32 {
			return poolPlan{}, refuse("proxmox.network", "proxmox.network: the ProxmoxNetwork of VPC %q subnet %q reports gateway %q and prefix %d, which cannot make an IPv4 pool; wait until the controller reports its addressing", px.Network.VPC, px.Network.Subnet, n.Gateway, n.Prefix)
		}
		// The sentinel pool: the IPAM provider always excludes the gateway,
		// so this pool can never hand out an address.
		return poolPlan{addresses: []string{gw.String()}, gateway: gw.String(), prefix: n.Prefix}, nil
	}
	if len(c.Addresses) == 0 {
		return poolPlan{}, refuse("proxmox.ipv4Config.addresses", "substrate proxmox requires proxmox.ipv4Config.addresses: capmox allocates static addresses and has no DHCP mode")
	}
	p, err := checkIPv4Config(c, o.Capmox)
	if err != nil {
		return poolPlan{}, err
	}
	if c6 := px.IPv6Config; len(c6.Addresses) > 0 || c6.Gateway != "" || c6.Prefix != nil {
		if len(c6.Addresses) == 0 {
			return poolPlan{}, refuse("proxmox.ipv6Config.addresses", "proxmox.ipv6Config.addresses is empty: list the IPv6 addresses of the dual-stack pool, or leave ipv6Config out")
		}
		v6, err := checkIPConfig("proxmox.ipv6Config", c6, o.Capmox, true)
		if err != nil {
			return poolPlan{}, err
		}
		p.v6 = &v6
	}
	return p, nil
}

func checkIPv4Config(c IPConfig, gen Capmox) (poolPlan, error) {
	return checkIPConfig("proxmox.ipv4Config", c, gen, false)
}

// checkIPConfig checks an address pool of one family (field is
// proxmox.ipv4Config or proxmox.ipv6Config) as the IPAM provider and capmox
// take it; an IPv4 pool's prefix defaults to 24, an IPv6 pool's to 64.
func checkIPConfig(field string, c IPConfig, gen Capmox, v6 bool) (poolPlan, error) {
	p, bits, example := poolPlan{prefix: 24}, 32, "10.0.0.160-10.0.0.170"
	parse, parseAddr := ParseIPv4PoolEntry, parseIPv4
	if v6 {
		p.prefix, bits, example = 64, 128, "fd00::10-fd00::20"
		parse, parseAddr = ParseIPv6PoolEntry, parseIPv6
	}
	if c.Prefix != nil {
		p.prefix = *c.Prefix
	}
	if p.prefix < 1 || p.prefix > bits {
		return poolPlan{}, refuse(field+".prefix", "%s.prefix is %d: an %s prefix length is 1 to %d", field, p.prefix, family(v6), bits)
	}
	seen := map[string]bool{}
	var subnet netip.Prefix
	for i, a := range c.Addresses {
		f := fmt.Sprintf("%s.addresses[%d]", field, i)
		r, err := parse(a)
		if err != nil {
			return poolPlan{}, refuse(f, "%s: %v; write an address, a range such as %s, or a CIDR", f, err, example)
		}
		if seen[r.String()] {
			return poolPlan{}, refuse(f, "%s is %q, which is listed twice: list each range once", f, a)
		}
		if i == 0 {
			subnet = r.Prefix(p.prefix)
		}
		if !r.Within(subnet) {
			return poolPlan{}, refuse(f, "%s is %q, which is not inside %s, the subnet of the first address with prefix %d: the IPAM provider refuses such a pool (\"provided address belongs to a different subnet than others\"); keep every range inside one subnet, or fix the prefix", f, a, subnet, p.prefix)
		}
		seen[r.String()] = true
		p.addresses = append(p.addresses, a)
	}
	if c.Gateway == "" {
		if gen == CapmoxV08 {
			return poolPlan{}, refuse(field+".gateway", "%s.gateway is required for capmox v0.8 and later: its v1alpha2 ProxmoxCluster requires %s.gateway", field, strings.TrimPrefix(field, "proxmox."))
		}
		return p, nil
	}
	gw, err := parseAddr(c.Gateway)
	if err != nil {
		return poolPlan{}, refuse(field+".gateway", "%s.gateway: %v", field, err)
	}
	if err := checkGateway(field+".gateway", gw, subnet); err != nil {
		return poolPlan{}, err
	}
	p.gateway = gw.String()
	return p, nil
}

// checkGateway holds a gateway to its subnet: capmox writes it into every
// worker as the next hop of the default route, which a VM reaches only
// inside its own subnet, and never on the subnet's network or broadcast
// address (which the IPAM provider leaves out of every pool, too).
func checkGateway(field string, gw netip.Addr, subnet netip.Prefix) error {
	first, last := subnet.Masked().Addr(), AddressRange{}.lastIn(subnet)
	switch {
	case !subnet.Contains(gw):
		return refuse(field, "%s %s is not inside %s, the subnet of the addresses: a worker reaches its default gateway only inside its own subnet; give the router's address in that subnet", field, gw, subnet)
	case gw.Is4() && subnet.Bits() < 31 && (gw == first || gw == last):
		return refuse(field, "%s %s is the network or broadcast address of %s, which no router has; give the router's address", field, gw, subnet)
	}
	return nil
}

func planCredentials(p *clusterPlan, px ClusterProxmox) error {
	p.ccmSecret = px.CCM.CredentialsSecretName
	if p.ccmSecret == "" {
		return refuse("proxmox.ccm.credentialsSecretName", "proxmox.ccm.credentialsSecretName is required on the proxmox substrate: without a cloud-controller-manager every worker keeps the uninitialized taint and the cluster schedules nothing")
	}
	if err := checkSecretName("proxmox.ccm.credentialsSecretName", p.ccmSecret); err != nil {
		return err
	}
	p.csi = px.CSI.On()
	if p.csi {
		p.csiSecret = px.CSI.CredentialsSecretName
		if p.csiSecret == "" {
			return refuse("proxmox.csi.credentialsSecretName", "proxmox.csi.credentialsSecretName is required on the proxmox substrate: the CSI controller cannot reach the hypervisor without an API token")
		}
		if err := checkSecretName("proxmox.csi.credentialsSecretName", p.csiSecret); err != nil {
			return err
		}
	}
	return planCapmoxCredentials(p, px)
}

// planCapmoxCredentials checks the optional per-cluster capmox Secret. It
// must not be the CCM's or the CSI's: those Pods mount their Secret whole,
// and the capmox token clones, reconfigures and deletes VMs.
func planCapmoxCredentials(p *clusterPlan, px ClusterProxmox) error {
	const f = "proxmox.capmox.credentialsSecretName"
	p.capmoxSecret = px.Capmox.CredentialsSecretName
	if p.capmoxSecret == "" {
		return nil
	}
	if err := checkSecretName(f, p.capmoxSecret); err != nil {
		return err
	}
	if p.capmoxSecret == p.ccmSecret || p.capmoxSecret == p.csiSecret {
		return refuse(f, "%s %q is also the CCM or CSI credentials Secret: those Pods mount their Secret whole, and the capmox token clones and deletes VMs; give capmox a Secret of its own (keys url, token, secret, insecure, root_ca)", f, p.capmoxSecret)
	}
	return nil
}

func checkSecretName(field, name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return refuse(field, "%s %q is not a Secret name: %s", field, name, errs[0])
	}
	return nil
}

func checkStorageClasses(in []StorageClass) ([]StorageClass, error) {
	out := make([]StorageClass, 0, len(in))
	seen := map[string]int{}
	for i, sc := range in {
		f := fmt.Sprintf("proxmox.csi.storageClasses[%d]", i)
		if errs := validation.IsDNS1123Subdomain(sc.Name); len(errs) > 0 {
			return nil, refuse(f+".name", "%s.name %q is not a StorageClass name: it must be a DNS-1123 subdomain, %s", f, sc.Name, errs[0])
		}
		if j, ok := seen[sc.Name]; ok {
			return nil, refuse(f+".name", "%s.name %q is also the name of proxmox.csi.storageClasses[%d]: each StorageClass needs a name of its own", f, sc.Name, j)
		}
		seen[sc.Name] = i
		if sc.Storage == "" {
			return nil, refuse(f, "%s.storage is empty: name the PVE storage id as pvesm status shows it", f)
		}
		sc.FSType = or(sc.FSType, "ext4")
		sc.ReclaimPolicy = or(sc.ReclaimPolicy, "Delete")
		if sc.FSType != "ext4" && sc.FSType != "xfs" {
			return nil, refuse(f, "%s.fstype is %q: use ext4 or xfs", f, sc.FSType)
		}
		if sc.ReclaimPolicy != "Delete" && sc.ReclaimPolicy != "Retain" {
			return nil, refuse(f, "%s.reclaimPolicy is %q: use Delete or Retain", f, sc.ReclaimPolicy)
		}
		out = append(out, sc)
	}
	return out, nil
}
