package vpcrender

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/cozyid"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// linkLocal is where peering links live; a route may point into it when the
// VPC declares peers.
var linkLocal = netip.MustParsePrefix("169.254.0.0/16")

func planPeerings(s Spec, vpcID cozyid.VPCID, rf *refusals) []VpcPeering {
	seen := map[cozyid.VPCID]bool{}
	links := map[netip.Prefix]string{}
	var out []VpcPeering
	for i, p := range s.Peers {
		field := fmt.Sprintf("peers[%d]", i)
		if p.VPCName == "" || p.TenantNamespace == "" {
			rf.addf(field, "peers[%d]: set both vpcName and tenantNamespace", i)
			continue
		}
		remote := cozyid.VPC(p.TenantNamespace, cozyid.VPCName(p.VPCName))
		if remote == vpcID {
			rf.addf(field, "peers[%d]: peer %s is this VPC; a VPC cannot peer with itself", i, peerString(p))
			continue
		}
		if seen[remote] {
			rf.addf(field, "peer %s is listed twice", peerString(p))
			continue
		}
		seen[remote] = true
		link := PeeringLink(vpcID, remote)
		if other, clash := links[linkNetwork(link)]; clash {
			rf.addf(field, "peers %s and %s derive the same link network %s, which one router cannot hold twice; drop one of the two peerings",
				other, peerString(p), linkNetwork(link))
			continue
		}
		links[linkNetwork(link)] = peerString(p)
		out = append(out, VpcPeering{RemoteVpc: string(remote), LocalConnectIP: link.String()})
	}
	return out
}

// parsedRoute is a route whose destination and next hop parse.
type parsedRoute struct {
	route Route
	dst   netip.Prefix
	hop   netip.Addr
}

// parseRouteDst reads a route destination: a network, or a bare address
// meaning a host route.
func parseRouteDst(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// checkRoutes refuses a static route whose IPv4 next hop lies outside every
// subnet of the VPC, or outside the peering links' 169.254.0.0/16 when the
// VPC declares peers. Such a hop is unreachable from a router with no
// external connection, and could aim at another tenant's gateway.
func checkRoutes(s Spec, plans []subnetPlan, rf *refusals) []parsedRoute {
	var inside []netip.Prefix
	for _, p := range plans {
		inside = append(inside, p.prefixes...)
	}
	if len(s.Peers) > 0 {
		inside = append(inside, linkLocal)
	}
	var out []parsedRoute
	for i, r := range s.Routes {
		field := fmt.Sprintf("routes[%d]", i)
		dst, err := parseRouteDst(r.CIDR)
		if err != nil {
			rf.addf(field+".cidr", "routes[%d]: cidr %q is not an IP network or address", i, r.CIDR)
			continue
		}
		hop, err := netip.ParseAddr(r.NextHopIP)
		if err != nil {
			rf.addf(field+".nextHopIP", "route to %s: next hop %q is not an IP address", termsafe.Cut(r.CIDR), r.NextHopIP)
			continue
		}
		if hop.Is4() && !containsAny(inside, hop) {
			rf.addf(field+".nextHopIP", "route to %s: next hop %s is outside every subnet of this VPC", r.CIDR, r.NextHopIP)
			continue
		}
		out = append(out, parsedRoute{route: r, dst: dst, hop: hop})
	}
	return out
}

func containsAny(nets []netip.Prefix, a netip.Addr) bool {
	for _, n := range nets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// egressPolicyRoutes keeps traffic that a static route sends elsewhere (a
// peered VPC, say) out of the egress gateway: one allow at 30500 per IPv4
// destination narrower than /0, host bits cleared, each once. A default
// route gets none, so the gateway stays the Proxmox subnets' way out.
func egressPolicyRoutes(routes []parsedRoute) []PolicyRoute {
	seen := map[netip.Prefix]bool{}
	var out []PolicyRoute
	for _, r := range routes {
		if !r.dst.Addr().Is4() || r.dst.Bits() == 0 {
			continue
		}
		n := r.dst.Masked()
		if seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, PolicyRoute{Priority: egressPriority, Action: "allow", Match: "ip4.dst == " + n.String()})
	}
	return out
}

// checkReleasable refuses a render that would drop a Proxmox-backed subnet
// of this VPC unsafely: one that keeps its name but loses `proxmox` (Kube-OVN
// keeps the switch's localnet port tagged with the VLAN for as long as the
// switch exists, so the VLAN could never be released), or one removed while
// VMs still hold addresses on it.
func checkReleasable(s Spec, vpcID cozyid.VPCID, plans []subnetPlan, rf *refusals) {
	keep := map[string]bool{}
	listed := map[string]bool{}
	for _, sub := range s.Subnets {
		listed[sub.Name] = true
	}
	for _, p := range plans {
		if p.proxmox != nil {
			keep[p.id] = true
		}
	}
	for _, n := range s.Previous {
		if n.VPCID != string(vpcID) || keep[n.Name] {
			continue
		}
		name := n.SubnetName
		if name == "" {
			name = n.Name
		}
		field := "subnets[" + name + "]"
		if listed[name] {
			if sub := findSubnet(s.Subnets, name); sub != nil && sub.Proxmox != nil {
				continue // refused for its own reasons already
			}
			rf.addf(field+".proxmox", "subnet %q is Proxmox-backed and its proxmox setting cannot be removed; remove the subnet and add it back under a new name", name)
			continue
		}
		if n.UsedAddresses > 0 {
			rf.addf(field, "subnet %q is Proxmox-backed and %d VM address(es) are still allocated on it; delete those machines before removing the subnet", name, n.UsedAddresses)
		}
	}
}

func findSubnet(subs []VPCSubnet, name string) *VPCSubnet {
	for i := range subs {
		if subs[i].Name == name {
			return &subs[i]
		}
	}
	return nil
}

// egressPlan is a checked egress section.
type egressPlan struct {
	zone         Zone
	ids          []string
	internalID   string
	internalCIDR string
	replicas     int32
}

func planEgress(s Spec, vpcID cozyid.VPCID, plans []subnetPlan, rf *refusals) *egressPlan {
	if s.Egress == nil || !s.Egress.Enabled {
		return nil
	}
	var px []subnetPlan
	for _, p := range plans {
		if p.proxmox != nil {
			px = append(px, p)
		}
	}
	if len(px) == 0 {
		if !hasProxmoxSubnet(s) {
			rf.add("egress.enabled", "egress.enabled needs at least one Proxmox-backed subnet: the gateway reroutes those subnets only")
		}
		return nil
	}
	sort.Slice(px, func(i, j int) bool { return px[i].spec.Name < px[j].spec.Name })
	first := px[0].proxmox.zone
	plan := &egressPlan{zone: first, internalID: px[0].id, replicas: 1}
	for _, p := range px {
		if p.proxmox.zone.Name != first.Name {
			rf.addf("egress.enabled", "egress.enabled: Proxmox-backed subnets span zones %q and %q; one egress gateway serves one zone", first.Name, p.proxmox.zone.Name)
			return nil
		}
		plan.ids = append(plan.ids, p.id)
	}
	if first.Egress == nil || first.Egress.ExternalSubnet == "" {
		rf.addf("egress.enabled", "egress.enabled: zone %q declares no egress.externalSubnet", first.Name)
		return nil
	}
	if first.Egress.GatewayNamespace == "" {
		rf.addf("egress.enabled", "egress.enabled: zone %q declares no egress.gatewayNamespace", first.Name)
		return nil
	}
	if r := s.Egress.Replicas; r < 0 {
		rf.addf("egress.replicas", "egress.replicas must be 1 or more, got %d", r)
		return nil
	} else if r > 0 {
		plan.replicas = r
	}
	if c := s.Egress.InternalCIDR; c != "" {
		if !checkInternalCIDR(c, plans, rf) {
			return nil
		}
		plan.internalID, plan.internalCIDR = string(cozyid.Egress(s.Namespace, vpcID)), c
	}
	return plan
}

// checkInternalCIDR checks the egress gateway's own overlay network.
func checkInternalCIDR(c string, plans []subnetPlan, rf *refusals) bool {
	p, err := netip.ParsePrefix(c)
	if err != nil || !p.Addr().Is4() {
		rf.addf("egress.internalCidr", "egress.internalCidr %q must be an IPv4 network", c)
		return false
	}
	for _, sp := range plans {
		for _, q := range sp.prefixes {
			if q.Overlaps(p) {
				rf.addf("egress.internalCidr", "egress.internalCidr %s overlaps subnet %q (%s); give the gateway a network of its own", c, sp.spec.Name, q)
				return false
			}
		}
	}
	return true
}

func hasProxmoxSubnet(s Spec) bool {
	for _, sub := range s.Subnets {
		if sub.Proxmox != nil {
			return true
		}
	}
	return false
}
