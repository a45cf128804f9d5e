package vpcrender

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/cozyid"
)

var (
	zoneDefault = Zone{Name: "default", ProviderNetwork: "pxtenant",
		Egress: &ZoneEgress{ExternalSubnet: "px-transit", GatewayNamespace: "cozy-proxmox-network"}}
	zoneEast = Zone{Name: "east", ProviderNetwork: "pxeast",
		Egress: &ZoneEgress{ExternalSubnet: "px-transit-east", GatewayNamespace: "cozy-proxmox-network"}}
)

// base is an accepted VPC: one Proxmox-backed subnet in the only zone.
func base(mods ...func(*Spec)) Spec {
	s := Spec{
		Namespace: "tenant-test",
		Name:      "myvpc",
		Subnets:   []VPCSubnet{{Name: "workers", CIDR: "10.208.64.0/24", Proxmox: &ProxmoxSubnet{}}},
		Zones:     []Zone{zoneDefault},
	}
	for _, m := range mods {
		m(&s)
	}
	return s
}

func vmRange(r string) func(*Spec) { return func(s *Spec) { s.Subnets[0].Proxmox.VMRange = r } }
func cidr(c string) func(*Spec)    { return func(s *Spec) { s.Subnets[0].CIDR = c } }
func routes(hop string) func(*Spec) {
	return func(s *Spec) { s.Routes = []Route{{CIDR: "10.208.128.0/24", NextHopIP: hop}} }
}
func peers(p ...Peer) func(*Spec) { return func(s *Spec) { s.Peers = p } }
func egress(e Egress) func(*Spec) { return func(s *Spec) { s.Egress = &e } }
func zones(z ...Zone) func(*Spec) { return func(s *Spec) { s.Zones = z } }
func api(a APIState) func(*Spec)  { return func(s *Spec) { s.API = a } }
func addSubnet(sub VPCSubnet) func(*Spec) {
	return func(s *Spec) { s.Subnets = append(s.Subnets, sub) }
}
func previous(n ...Network) func(*Spec) { return func(s *Spec) { s.Previous = n } }

var other = Peer{VPCName: "other", TenantNamespace: "tenant-other"}

// TestRefusals pairs every refusal with an accepted control that differs
// in one field.
func TestRefusals(t *testing.T) {
	cases := map[string]struct {
		reason  string
		refused Spec
		control Spec
		want    string
	}{
		"VMRangeHoldsGateway": {
			reason:  "the VM range may not include the gateway",
			refused: base(vmRange("10.208.64.1-10.208.64.50")), control: base(vmRange("10.208.64.2-10.208.64.50")),
			want: `subnet "workers": proxmox.vmRange 10.208.64.1-10.208.64.50 must lie inside 10.208.64.0/24 after the gateway 10.208.64.1 and before the broadcast address`,
		},
		"VMRangeOutsideCIDR": {
			reason:  "the VM range must lie inside the CIDR",
			refused: base(vmRange("10.208.64.100-10.208.65.10")), control: base(vmRange("10.208.64.100-10.208.64.254")),
			want: `subnet "workers": proxmox.vmRange 10.208.64.100-10.208.65.10 must lie inside 10.208.64.0/24 after the gateway 10.208.64.1 and before the broadcast address`,
		},
		"VMRangeHoldsBroadcast": {
			reason:  "the broadcast address is not a VM address",
			refused: base(vmRange("10.208.64.100-10.208.64.255")), control: base(vmRange("10.208.64.100-10.208.64.254")),
			want: `subnet "workers": proxmox.vmRange 10.208.64.100-10.208.64.255 must lie inside 10.208.64.0/24 after the gateway 10.208.64.1 and before the broadcast address`,
		},
		"VMRangeBeforeNetwork": {
			reason:  "a range starting below the subnet is outside it",
			refused: base(vmRange("10.208.63.250-10.208.64.20")), control: base(vmRange("10.208.64.2-10.208.64.20")),
			want: `subnet "workers": proxmox.vmRange 10.208.63.250-10.208.64.20 must lie inside 10.208.64.0/24 after the gateway 10.208.64.1 and before the broadcast address`,
		},
		"VMRangeBackwards": {
			reason:  "a range that ends before it starts",
			refused: base(vmRange("10.208.64.200-10.208.64.100")), control: base(vmRange("10.208.64.100-10.208.64.200")),
			want: `subnet "workers": proxmox.vmRange ends before it starts`,
		},
		"VMRangeShape": {
			reason:  "a range is first-last",
			refused: base(vmRange("10.208.64.100")), control: base(vmRange("10.208.64.100-10.208.64.100")),
			want: `subnet "workers": proxmox.vmRange "10.208.64.100" must be first-last`,
		},
		"VMRangeNotAnAddress": {
			reason:  "each end must be an IPv4 address",
			refused: base(vmRange("10.208.64.x-10.208.64.200")), control: base(vmRange("10.208.64.10-10.208.64.200")),
			want: `subnet "workers": proxmox.vmRange "10.208.64.x-10.208.64.200": "10.208.64.x" is not an IPv4 address`,
		},
		"AllowSubnetsOnProxmox": {
			reason:  "allowSubnets does nothing on a non-private subnet; an empty list passes",
			refused: base(func(s *Spec) { s.Subnets[0].AllowSubnets = []string{"192.168.1.0/24"} }),
			control: base(func(s *Spec) { s.Subnets[0].AllowSubnets = []string{} }),
			want:    `subnet "workers": allowSubnets has no effect on a Proxmox-backed subnet, which is not private and accepts everything its VPC routes to it; remove allowSubnets from it`,
		},
		"ProxmoxIPv6": {
			reason:  "Proxmox-backed subnets are IPv4 only",
			refused: base(cidr("fd00:10::/64")), control: base(cidr("10.208.64.0/24")),
			want: `subnet "workers": cidr "fd00:10::/64" must be an IPv4 network; Proxmox-backed subnets are IPv4 only`,
		},
		"ProxmoxHostBits": {
			reason:  "a CIDR with host bits set is refused",
			refused: base(cidr("10.208.64.7/24")), control: base(cidr("10.208.64.0/24")),
			want: `subnet "workers": "10.208.64.7/24" is not a network address (host bits set)`,
		},
		"ProxmoxPrefixTooLong": {
			reason:  "a /29 has no room for a gateway, VMs and pods",
			refused: base(cidr("10.208.64.0/29")), control: base(cidr("10.208.64.0/28")),
			want: `subnet "workers": prefix /29 is outside /8../28; a Proxmox-backed subnet needs room for a gateway, VMs and pods`,
		},
		"ProxmoxPrefixTooShort": {
			reason:  "a /7 is larger than any Proxmox subnet",
			refused: base(cidr("10.0.0.0/7")), control: base(cidr("10.0.0.0/8")),
			want: `subnet "workers": prefix /7 is outside /8../28; a Proxmox-backed subnet needs room for a gateway, VMs and pods`,
		},
		"ProxmoxNoCIDR": {
			reason:  "a Proxmox-backed subnet needs a cidr",
			refused: base(cidr("")), control: base(cidr("10.208.64.0/24")),
			want: `subnet "workers": a Proxmox-backed subnet needs a cidr`,
		},
		"NoZone": {
			reason:  "without a zone there is nowhere to allocate a VLAN",
			refused: base(zones()), control: base(zones(zoneDefault)),
			want: `subnet "workers": no ProxmoxNetworkZone exists; ask the platform administrator to enable the proxmox-network package`,
		},
		"APINotInstalled": {
			reason:  "a cluster without the API needs the package enabled, in the vpc chart's words",
			refused: base(zones(), api(APIAbsent)),
			control: base(zones(zoneDefault), api(APIServed)),
			want:    APINotInstalled,
		},
		"APINotInstalledOverlayOnly": {
			reason:  "a VPC of overlay subnets only needs no Proxmox API",
			refused: base(zones(), api(APIAbsent)),
			control: base(zones(), api(APIAbsent), func(s *Spec) { s.Subnets[0].Proxmox = nil }),
			want:    APINotInstalled,
		},
		"NoZoneAPIServed": {
			reason:  "a cluster that serves the API but has no zone needs a zone, not the package",
			refused: base(zones(), api(APIServed)),
			control: base(zones(zoneDefault), api(APIServed)),
			want:    `subnet "workers": no ProxmoxNetworkZone exists; the proxmox.cozystack.io API is installed; ask the platform administrator to create a ProxmoxNetworkZone`,
		},
		"SeveralZones": {
			reason:  "with several zones the subnet must name one",
			refused: base(zones(zoneEast, zoneDefault)),
			control: base(zones(zoneEast, zoneDefault), func(s *Spec) { s.Subnets[0].Proxmox.Zone = "east" }),
			want:    `subnet "workers": several ProxmoxNetworkZones exist (default, east); set proxmox.zone`,
		},
		"RouteHopOutside": {
			reason:  "a next hop outside every subnet of the VPC (the facts' example)",
			refused: base(addSubnet(VPCSubnet{Name: "plain", CIDR: "172.16.0.0/24"}), routes("10.70.0.12")),
			control: base(addSubnet(VPCSubnet{Name: "plain", CIDR: "172.16.0.0/24"}), routes("172.16.0.12")),
			want:    "route to 10.208.128.0/24: next hop 10.70.0.12 is outside every subnet of this VPC",
		},
		"RouteHopLinkLocalWithoutPeers": {
			reason:  "169.254.0.0/16 is inside only when the VPC declares peers",
			refused: base(routes("169.254.19.245")), control: base(routes("169.254.19.245"), peers(other)),
			want: "route to 10.208.128.0/24: next hop 169.254.19.245 is outside every subnet of this VPC",
		},
		"RouteHopNotAnAddress": {
			reason:  "a next hop must be an address",
			refused: base(routes("10.208.64.300")), control: base(routes("10.208.64.30")),
			want: `route to 10.208.128.0/24: next hop "10.208.64.300" is not an IP address`,
		},
		"RouteBadCIDR": {
			reason:  "a route destination must be a network or an address",
			refused: base(func(s *Spec) { s.Routes = []Route{{CIDR: "10.208.128.0/33", NextHopIP: "10.208.64.10"}} }),
			control: base(func(s *Spec) { s.Routes = []Route{{CIDR: "10.208.128.0/32", NextHopIP: "10.208.64.10"}} }),
			want:    `routes[0]: cidr "10.208.128.0/33" is not an IP network or address`,
		},
		"PeerWithItself": {
			reason:  "a VPC cannot peer with itself",
			refused: base(peers(Peer{VPCName: "myvpc", TenantNamespace: "tenant-test"})), control: base(peers(other)),
			want: "peers[0]: peer tenant-test/myvpc is this VPC; a VPC cannot peer with itself",
		},
		"PeerTwice": {
			reason:  "a peer listed twice would get two identical links",
			refused: base(peers(other, other)), control: base(peers(other, Peer{VPCName: "third", TenantNamespace: "tenant-other"})),
			want: "peer tenant-other/other is listed twice",
		},
		"PeerIncomplete": {
			reason:  "a peer needs both its VPC name and namespace",
			refused: base(peers(Peer{VPCName: "other"})), control: base(peers(other)),
			want: "peers[0]: set both vpcName and tenantNamespace",
		},
		"DropProxmoxKeepName": {
			reason: "a subnet cannot drop proxmox while keeping its name, even with no VM on it",
			refused: base(previous(Network{Name: "subnet-ff692499", VPCID: "vpc-a0c9fc", SubnetName: "workers"}),
				func(s *Spec) { s.Subnets[0].Proxmox = nil }),
			control: base(previous(Network{Name: "subnet-ff692499", VPCID: "vpc-a0c9fc", SubnetName: "workers"})),
			want:    `subnet "workers" is Proxmox-backed and its proxmox setting cannot be removed; remove the subnet and add it back under a new name`,
		},
		"RemoveWhileInUse": {
			reason:  "a Proxmox subnet cannot go while VMs hold addresses on it",
			refused: base(previous(Network{Name: "subnet-695b0802", VPCID: "vpc-a0c9fc", SubnetName: "gone", UsedAddresses: 3})),
			control: base(previous(Network{Name: "subnet-695b0802", VPCID: "vpc-a0c9fc", SubnetName: "gone", UsedAddresses: 0})),
			want:    `subnet "gone" is Proxmox-backed and 3 VM address(es) are still allocated on it; delete those machines before removing the subnet`,
		},
		"EgressWithoutProxmox": {
			reason:  "the gateway reroutes Proxmox subnets only",
			refused: base(func(s *Spec) { s.Subnets[0].Proxmox = nil }, egress(Egress{Enabled: true})),
			control: base(func(s *Spec) { s.Subnets[0].Proxmox = nil }, egress(Egress{Enabled: false})),
			want:    "egress.enabled needs at least one Proxmox-backed subnet: the gateway reroutes those subnets only",
		},
		"EgressSpansZones": {
			reason: "one egress gateway serves one zone",
			refused: base(zones(zoneDefault, zoneEast), egress(Egress{Enabled: true}), func(s *Spec) { s.Subnets[0].Proxmox.Zone = "default" },
				addSubnet(VPCSubnet{Name: "data", CIDR: "10.208.65.0/24", Proxmox: &ProxmoxSubnet{Zone: "east"}})),
			control: base(zones(zoneDefault, zoneEast), egress(Egress{Enabled: true}), func(s *Spec) { s.Subnets[0].Proxmox.Zone = "default" },
				addSubnet(VPCSubnet{Name: "data", CIDR: "10.208.65.0/24", Proxmox: &ProxmoxSubnet{Zone: "default"}})),
			want: `egress.enabled: Proxmox-backed subnets span zones "east" and "default"; one egress gateway serves one zone`,
		},
		"EgressZoneWithoutTransit": {
			reason:  "the zone must name its transit subnet",
			refused: base(egress(Egress{Enabled: true}), zones(Zone{Name: "default", Egress: &ZoneEgress{GatewayNamespace: "cozy-proxmox-network"}})),
			control: base(egress(Egress{Enabled: true}), zones(Zone{Name: "default", Egress: &ZoneEgress{GatewayNamespace: "cozy-proxmox-network", ExternalSubnet: "px-transit"}})),
			want:    `egress.enabled: zone "default" declares no egress.externalSubnet`,
		},
		"EgressZoneWithoutNamespace": {
			reason:  "the zone must name the gateway namespace",
			refused: base(egress(Egress{Enabled: true}), zones(Zone{Name: "default", Egress: &ZoneEgress{ExternalSubnet: "px-transit"}})),
			control: base(egress(Egress{Enabled: true}), zones(Zone{Name: "default", Egress: &ZoneEgress{ExternalSubnet: "px-transit", GatewayNamespace: "cozy-proxmox-network"}})),
			want:    `egress.enabled: zone "default" declares no egress.gatewayNamespace`,
		},
		"EgressInternalNotANetwork": {
			reason:  "the gateway's own subnet must be an IPv4 network",
			refused: base(egress(Egress{Enabled: true, InternalCIDR: "10.208.127.248"})), control: base(egress(Egress{Enabled: true, InternalCIDR: "10.208.127.248/29"})),
			want: `egress.internalCidr "10.208.127.248" must be an IPv4 network`,
		},
		"EgressInternalOverlaps": {
			reason:  "the gateway's own subnet may not overlap a subnet of the VPC",
			refused: base(egress(Egress{Enabled: true, InternalCIDR: "10.208.64.248/29"})), control: base(egress(Egress{Enabled: true, InternalCIDR: "10.208.65.248/29"})),
			want: `egress.internalCidr 10.208.64.248/29 overlaps subnet "workers" (10.208.64.0/24); give the gateway a network of its own`,
		},
		"EgressNegativeReplicas": {
			reason:  "a gateway needs at least one replica",
			refused: base(egress(Egress{Enabled: true, Replicas: -1})), control: base(egress(Egress{Enabled: true, Replicas: 3})),
			want: "egress.replicas must be 1 or more, got -1",
		},
		"SubnetListedTwice": {
			reason:  "two subnets with one name would share every id",
			refused: base(addSubnet(VPCSubnet{Name: "workers", CIDR: "172.16.0.0/24"})), control: base(addSubnet(VPCSubnet{Name: "plain", CIDR: "172.16.0.0/24"})),
			want: `subnet "workers" is listed twice; subnet names must be unique in a VPC`,
		},
		"SubnetNameNotALabel": {
			reason:  "subnet names end up in labels and ids",
			refused: base(func(s *Spec) { s.Subnets[0].Name = "Workers" }), control: base(func(s *Spec) { s.Subnets[0].Name = "workers2" }),
			want: `subnets[0]: name "Workers" must be a DNS label: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		},
		"SubnetsOverlap": {
			reason:  "Kube-OVN refuses overlapping subnets in one VPC",
			refused: base(addSubnet(VPCSubnet{Name: "plain", CIDR: "10.208.64.128/25"})), control: base(addSubnet(VPCSubnet{Name: "plain", CIDR: "10.208.65.0/25"})),
			want: `subnets "workers" and "plain" overlap (10.208.64.0/24, 10.208.64.128/25); subnets of one VPC must not overlap`,
		},
		"OverlayWithoutCIDR": {
			reason:  "an overlay subnet needs a cidr too",
			refused: base(addSubnet(VPCSubnet{Name: "plain"})), control: base(addSubnet(VPCSubnet{Name: "plain", CIDR: "172.16.0.0/24"})),
			want: `subnet "plain": set a cidr`,
		},
		"OverlayTwoIPv4": {
			reason:  "a dual-stack cidr is one IPv4 and one IPv6 network",
			refused: base(addSubnet(VPCSubnet{Name: "plain", CIDR: "172.16.0.0/24,172.16.1.0/24"})),
			control: base(addSubnet(VPCSubnet{Name: "plain", CIDR: "172.16.0.0/24,fd00:16::/64"})),
			want:    `subnet "plain": cidr "172.16.0.0/24,172.16.1.0/24" must be one network, or one IPv4 and one IPv6 network separated by a comma`,
		},
		"NoName": {
			reason:  "a VPC needs a name",
			refused: base(func(s *Spec) { s.Name = "" }), control: base(func(s *Spec) { s.Name = "x" }),
			want: "name: set the VPC's name",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Render(tc.control); err != nil {
				t.Fatalf("control must be accepted (%s): %v", tc.reason, err)
			}
			_, err := Render(tc.refused)
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("%s: want a refusal, got %v", tc.reason, err)
			}
			var msgs []string
			for _, r := range Refusals(err) {
				msgs = append(msgs, r.Message)
			}
			if diff := cmp.Diff([]string{tc.want}, msgs); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPeeringLinkClash finds two peers whose links land in the same /30 of
// one VPC and checks the refusal, and that either peer alone is accepted.
func TestPeeringLinkClash(t *testing.T) {
	self := cozyid.VPC("tenant-test", "myvpc")
	seen := map[string]Peer{}
	var a, b Peer
	for i := 0; ; i++ {
		p := Peer{VPCName: fmt.Sprintf("p%d", i), TenantNamespace: "tenant-x"}
		key := linkNetwork(PeeringLink(self, cozyid.VPC(p.TenantNamespace, cozyid.VPCName(p.VPCName)))).String()
		if prev, ok := seen[key]; ok {
			a, b = prev, p
			break
		}
		seen[key] = p
	}
	for _, p := range []Peer{a, b} {
		if _, err := Render(base(peers(p))); err != nil {
			t.Fatalf("peer %v alone: %v", p, err)
		}
	}
	_, err := Render(base(peers(a, b)))
	rs := Refusals(err)
	link := linkNetwork(PeeringLink(self, cozyid.VPC(a.TenantNamespace, cozyid.VPCName(a.VPCName))))
	want := fmt.Sprintf("peers %s and %s derive the same link network %s, which one router cannot hold twice; drop one of the two peerings", peerString(a), peerString(b), link)
	if len(rs) != 1 || rs[0].Message != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestRefusalsAreAllReported(t *testing.T) {
	s := base(vmRange("10.208.64.1-10.208.64.9"), routes("10.70.0.1"), peers(other, other))
	_, err := Render(s)
	rs := Refusals(err)
	var fields []string
	for _, r := range rs {
		fields = append(fields, r.Field)
	}
	want := []string{"subnets[workers].proxmox.vmRange", "peers[1]", "routes[0].nextHopIP"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("every refusal, in order (-want +got):\n%s", diff)
	}
	if err.Error() != rs[0].Message+"\n"+rs[1].Message+"\n"+rs[2].Message {
		t.Errorf("the joined error lists each message on its own line: %q", err)
	}
}

func TestParseSpecRefusesUnknownFields(t *testing.T) {
	_, err := ParseSpec([]byte("namespace: a\nname: b\nsubnts: []\n"))
	if !errors.Is(err, ErrParse) {
		t.Fatalf("want ErrParse, got %v", err)
	}
	if _, err := ParseSpec([]byte("namespace: a\nname: b\nsubnets: [{name: s, cidr: 10.0.0.0/24, proxmox: {}}]\n")); err != nil {
		t.Fatalf("control: %v", err)
	}
}

// TestParseSpecMatchesCase: a key in another case than its field is
// refused by its path, alone or next to the right one (which would
// otherwise keep one of the two values without a word), and so is a key
// given twice; the same document with the right keys is admitted.
func TestParseSpecMatchesCase(t *testing.T) {
	const control = "namespace: a\nname: b\nsubnets:\n- name: s\n  cidr: 10.0.0.0/24\n  proxmox: {vmRange: 10.0.0.10-10.0.0.20}\n"
	s, err := ParseSpec([]byte(control))
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	if s.Name != "b" || s.Subnets[0].Proxmox.VMRange != "10.0.0.10-10.0.0.20" {
		t.Fatalf("control decoded as %+v", s)
	}
	cases := map[string]struct{ from, to, want string }{
		"MiscasedTop":     {"name: b\n", "Name: b\n", `unknown field "Name"; did you mean "name"?`},
		"BothCasesTop":    {"name: b\n", "name: b\nNAME: c\n", `unknown field "NAME"; did you mean "name"?`},
		"MiscasedNested":  {"vmRange:", "vmrange:", `unknown field "subnets[0].proxmox.vmrange"; did you mean "vmRange"?`},
		"BothCasesNested": {"  cidr: 10.0.0.0/24\n", "  cidr: 10.0.0.0/24\n  CIDR: 10.1.0.0/24\n", `unknown field "subnets[0].CIDR"; did you mean "cidr"?`},
		"Duplicate":       {"name: b\n", "name: b\nname: c\n", `key "name" already set`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := strings.Replace(control, tc.from, tc.to, 1)
			if in == control {
				t.Fatalf("the edit %q did not apply", tc.from)
			}
			_, err := ParseSpec([]byte(in))
			if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseSpec(%q) = %v, want ErrParse naming %s", in, err, tc.want)
			}
		})
	}
}

// TestLongValueIsCut: a 1 MB value of the spec is named in a short
// refusal, cut with the count of the bytes left out.
func TestLongValueIsCut(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for name, mod := range map[string]func(*Spec){
		"CIDR":    func(s *Spec) { s.Subnets[0].CIDR = long },
		"VMRange": func(s *Spec) { s.Subnets[0].Proxmox.VMRange = long },
		"Name":    func(s *Spec) { s.Name = long },
	} {
		_, err := Render(base(mod))
		rs := Refusals(err)
		if len(rs) == 0 || len(err.Error()) > 1024 || !strings.Contains(err.Error(), "more bytes)") {
			t.Errorf("%s: %d refusals, %d bytes: %.600v", name, len(rs), len(fmt.Sprint(err)), err)
		}
	}
}
