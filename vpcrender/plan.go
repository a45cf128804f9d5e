package vpcrender

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pxsubstrate/pxsubstrate/cozyid"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// subnetPlan is a subnet whose input has been checked and parsed.
type subnetPlan struct {
	index    int
	spec     VPCSubnet
	id       string
	prefixes []netip.Prefix
	proxmox  *proxmoxPlan
}

// proxmoxPlan is the address split of a Proxmox-backed subnet.
type proxmoxPlan struct {
	zone    Zone
	prefix  netip.Prefix
	gateway netip.Addr
	from    netip.Addr
	to      netip.Addr
}

func checkIdentity(s Spec, rf *refusals) {
	if msgs := validation.IsDNS1123Label(s.Namespace); len(msgs) > 0 {
		rf.addf("namespace", "namespace %q is not a namespace name: %s", s.Namespace, strings.Join(msgs, "; "))
	}
	if s.Name == "" {
		rf.add("name", "name: set the VPC's name")
		return
	}
	release := cozyid.Release(cozyid.VPCName(s.Name))
	if msgs := validation.IsDNS1123Label(release); len(msgs) > 0 {
		rf.addf("name", "name %q: %s must be a DNS label: %s", s.Name, termsafe.Cut(release), strings.Join(msgs, "; "))
	}
}

// planSubnets checks every subnet and parses its addresses. Subnets that are
// refused are left out of the result, so later checks see only good ones.
func planSubnets(s Spec, vpcID cozyid.VPCID, rf *refusals) []subnetPlan {
	seen := map[string]bool{}
	var out []subnetPlan
	if s.API == APIAbsent {
		if i := slices.IndexFunc(s.Subnets, func(v VPCSubnet) bool { return v.Proxmox != nil }); i >= 0 {
			rf.add(fmt.Sprintf("subnets[%d].proxmox", i), APINotInstalled)
			return nil
		}
	}
	for i, sub := range s.Subnets {
		field := fmt.Sprintf("subnets[%d]", i)
		if msgs := validation.IsDNS1123Label(sub.Name); len(msgs) > 0 {
			rf.addf(field+".name", "subnets[%d]: name %q must be a DNS label: %s", i, sub.Name, strings.Join(msgs, "; "))
			continue
		}
		if seen[sub.Name] {
			rf.addf(field+".name", "subnet %q is listed twice; subnet names must be unique in a VPC", sub.Name)
			continue
		}
		seen[sub.Name] = true
		p := subnetPlan{index: i, spec: sub, id: string(cozyid.Subnet(s.Namespace, vpcID, cozyid.SubnetName(sub.Name)))}
		var ok bool
		if sub.Proxmox != nil {
			p.proxmox, ok = planProxmox(sub, s.Zones, s.API, rf)
			if ok {
				p.prefixes = []netip.Prefix{p.proxmox.prefix}
			}
		} else {
			p.prefixes, ok = parseOverlayCIDR(sub, rf)
		}
		if ok {
			out = append(out, p)
		}
	}
	checkOverlaps(out, rf)
	return out
}

// parseOverlayCIDR reads the cidr of an overlay subnet: one network, or an
// IPv4 and an IPv6 network separated by a comma (dual stack).
func parseOverlayCIDR(sub VPCSubnet, rf *refusals) ([]netip.Prefix, bool) {
	field := "subnets[" + sub.Name + "].cidr"
	if sub.CIDR == "" {
		rf.addf(field, "subnet %q: set a cidr", sub.Name)
		return nil, false
	}
	parts := strings.Split(sub.CIDR, ",")
	var out []netip.Prefix
	for _, part := range parts {
		p, err := netip.ParsePrefix(strings.TrimSpace(part))
		if err != nil {
			rf.addf(field, "subnet %q: cidr %q is not a network (%v)", sub.Name, sub.CIDR, err)
			return nil, false
		}
		out = append(out, p)
	}
	if len(out) > 2 || (len(out) == 2 && out[0].Addr().Is4() == out[1].Addr().Is4()) {
		rf.addf(field, "subnet %q: cidr %q must be one network, or one IPv4 and one IPv6 network separated by a comma", sub.Name, sub.CIDR)
		return nil, false
	}
	return out, true
}

func planProxmox(sub VPCSubnet, zones []Zone, api APIState, rf *refusals) (*proxmoxPlan, bool) {
	name := sub.Name
	field := "subnets[" + name + "]"
	if sub.CIDR == "" {
		rf.addf(field+".cidr", "subnet %q: a Proxmox-backed subnet needs a cidr", name)
		return nil, false
	}
	if len(sub.AllowSubnets) > 0 {
		rf.addf(field+".allowSubnets", "subnet %q: allowSubnets has no effect on a Proxmox-backed subnet, which is not private and accepts everything its VPC routes to it; remove allowSubnets from it", name)
		return nil, false
	}
	prefix, err := netip.ParsePrefix(sub.CIDR)
	if err != nil || !prefix.Addr().Is4() {
		rf.addf(field+".cidr", "subnet %q: cidr %q must be an IPv4 network; Proxmox-backed subnets are IPv4 only", name, sub.CIDR)
		return nil, false
	}
	if prefix.Bits() < 8 || prefix.Bits() > 28 {
		rf.addf(field+".cidr", "subnet %q: prefix /%d is outside /8../28; a Proxmox-backed subnet needs room for a gateway, VMs and pods", name, prefix.Bits())
		return nil, false
	}
	if prefix.Masked() != prefix {
		rf.addf(field+".cidr", "subnet %q: %q is not a network address (host bits set)", name, sub.CIDR)
		return nil, false
	}
	plan, ok := splitRange(sub, prefix, rf)
	if !ok {
		return nil, false
	}
	zone, ok := resolveZone(name, sub.Proxmox.Zone, zones, api, rf)
	if !ok {
		return nil, false
	}
	plan.zone = zone
	return plan, true
}

// splitRange places the VM range in the subnet: after the gateway (the
// first address) and before the broadcast address.
func splitRange(sub VPCSubnet, prefix netip.Prefix, rf *refusals) (*proxmoxPlan, bool) {
	name := sub.Name
	field := "subnets[" + name + "].proxmox.vmRange"
	base := toUint(prefix.Addr())
	size := uint32(1) << (32 - prefix.Bits())
	gw, last := base+1, base+size-2
	from, to := base+size/4, base+3*(size/4)-1
	if r := sub.Proxmox.VMRange; r != "" {
		parts := strings.Split(r, "-")
		if len(parts) != 2 {
			rf.addf(field, "subnet %q: proxmox.vmRange %q must be first-last", name, r)
			return nil, false
		}
		var bounds [2]uint32
		for i, part := range parts {
			a, err := netip.ParseAddr(strings.TrimSpace(part))
			if err != nil || !a.Is4() {
				rf.addf(field, "subnet %q: proxmox.vmRange %q: %q is not an IPv4 address", name, r, strings.TrimSpace(part))
				return nil, false
			}
			bounds[i] = toUint(a)
		}
		from, to = bounds[0], bounds[1]
	}
	if from > to {
		rf.addf(field, "subnet %q: proxmox.vmRange ends before it starts", name)
		return nil, false
	}
	if from <= gw || to > last {
		rf.addf(field, "subnet %q: proxmox.vmRange %s-%s must lie inside %s after the gateway %s and before the broadcast address",
			name, fromUint(from), fromUint(to), sub.CIDR, fromUint(gw))
		return nil, false
	}
	return &proxmoxPlan{prefix: prefix, gateway: fromUint(gw), from: fromUint(from), to: fromUint(to)}, true
}

// resolveZone finds the subnet's zone. A subnet that names none gets the
// only zone there is. A named zone that the cluster lacks is kept by name:
// the controller reports ZoneNotFound on the ProxmoxNetwork. With no zone
// at all, a cluster known to serve the API needs a zone created, not the
// package enabled.
func resolveZone(subnet, zone string, zones []Zone, api APIState, rf *refusals) (Zone, bool) {
	field := "subnets[" + subnet + "].proxmox.zone"
	if zone != "" {
		for _, z := range zones {
			if z.Name == zone {
				return z, true
			}
		}
		return Zone{Name: zone}, true
	}
	switch len(zones) {
	case 1:
		return zones[0], true
	case 0:
		fix := "ask the platform administrator to enable the proxmox-network package"
		if api == APIServed {
			fix = "the proxmox.cozystack.io API is installed; ask the platform administrator to create a ProxmoxNetworkZone"
		}
		rf.addf(field, "subnet %q: no ProxmoxNetworkZone exists; %s", subnet, fix)
	default:
		names := make([]string, 0, len(zones))
		for _, z := range zones {
			names = append(names, z.Name)
		}
		sort.Strings(names)
		rf.addf(field, "subnet %q: several ProxmoxNetworkZones exist (%s); set proxmox.zone", subnet, termsafe.Cut(strings.Join(names, ", ")))
	}
	return Zone{}, false
}

// checkOverlaps refuses two subnets of one VPC whose networks overlap:
// Kube-OVN would refuse the second one.
func checkOverlaps(plans []subnetPlan, rf *refusals) {
	for i := range plans {
		for j := i + 1; j < len(plans); j++ {
			for _, a := range plans[i].prefixes {
				for _, b := range plans[j].prefixes {
					if a.Overlaps(b) {
						rf.addf("subnets["+plans[j].spec.Name+"].cidr", "subnets %q and %q overlap (%s, %s); subnets of one VPC must not overlap",
							plans[i].spec.Name, plans[j].spec.Name, a, b)
					}
				}
			}
		}
	}
}

func toUint(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func fromUint(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
