//go:build linux

package ovnlab

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Subnet is a Kube-OVN subnet of a VPC: a logical switch connected to the
// VPC's logical router.
type Subnet struct {
	// VPC is the logical router's name (Kube-OVN's vpc.status.router).
	VPC string
	// Name is the subnet's, and the logical switch's, name.
	Name string
	// Gateway is the router port's address with the subnet's prefix length,
	// e.g. 10.100.0.1/24.
	Gateway netip.Prefix
	// VLAN tags the subnet's localnet port; 0 makes an overlay subnet
	// without a localnet port.
	VLAN int
	// MAC is the router port's MAC, set by AddSubnet.
	MAC string
}

// RouterPort is the subnet's logical router port, "<vpc>-<subnet>".
func (s Subnet) RouterPort() string { return s.VPC + "-" + s.Name }

// AddRouter creates a VPC's logical router as Kube-OVN's vpc controller
// does for a VPC without external connection or peering: external_ids
// vendor=kube-ovn and the options mac_binding_age_threshold=300,
// dynamic_neigh_routers=true and always_learn_from_arp_request=false
// (AddPeering drops the last, as Kube-OVN does for a peered VPC).
func (l *Lab) AddRouter(vpc string) {
	l.t.Helper()
	l.NBCtl("lr-add", vpc, "--", "set", "Logical_Router", vpc, "external_ids:vendor=kube-ovn",
		"options:mac_binding_age_threshold=300", "options:dynamic_neigh_routers=true",
		"options:always_learn_from_arp_request=false")
}

// AddPeering lays out one side of a VPC peering as Kube-OVN does for an
// entry {remoteVpc, localConnectIP} of the Vpc's spec.vpcPeerings: the
// router port "<vpc>-<remote>" on vpc's router with the networks of
// localConnectIP (comma-separated, each an address with its prefix length,
// e.g. 169.254.19.246/30), peer "<remote>-<vpc>" and external_ids lr and
// vendor. The remote side is the remote VPC's own entry. A peered VPC's
// router learns from ARP requests again. It returns the port's name.
func (l *Lab) AddPeering(vpc, remote, localConnectIP string) string {
	l.t.Helper()
	networks := strings.Split(localConnectIP, ",")
	for _, n := range networks {
		if _, err := netip.ParsePrefix(n); err != nil {
			l.t.Fatalf("peering of %s with %s: localConnectIP %q: %v; give each address with its prefix length, e.g. 169.254.0.1/30", vpc, remote, localConnectIP, err)
		}
	}
	l.nextMAC++
	lrp := vpc + "-" + remote
	args := append([]string{"lrp-add", vpc, lrp, fmt.Sprintf("0a:00:00:02:%02x:01", l.nextMAC)}, networks...)
	args = append(args, "peer="+remote+"-"+vpc,
		"--", "set", "Logical_Router_Port", lrp, "external_ids:lr="+vpc, "external_ids:vendor=kube-ovn",
		"--", "remove", "Logical_Router", vpc, "options", "always_learn_from_arp_request")
	l.NBCtl(args...)
	return lrp
}

// AddStaticRoute adds a static route to vpc's router as Kube-OVN does for an
// entry of the Vpc's spec.staticRoutes with its default policy: dst-ip, in
// the main route table, with external_ids vendor=kube-ovn.
func (l *Lab) AddStaticRoute(vpc, cidr, nextHop string) {
	l.t.Helper()
	l.NBCtl("--id=@r", "create", "Logical_Router_Static_Route", "ip_prefix="+cidr, "nexthop="+nextHop, "policy=dst-ip",
		"external_ids:vendor=kube-ovn", "--", "add", "Logical_Router", vpc, "static_routes", "@r")
}

// AddSubnet lays out a subnet as Kube-OVN does for a custom VPC: the logical
// switch, the router port "<vpc>-<subnet>" with the gateway address, its peer
// "<subnet>-<vpc>" of type router, and for a VLAN subnet the localnet port
// "localnet.<subnet>" with addresses "unknown", network_name set to the
// provider network and the VLAN in tag. It sets no gateway_chassis and no
// ha_chassis_group, as Kube-OVN does not. It leaves out the src-ip route
// from the subnet to its own gateway that Kube-OVN also adds: Kube-OVN's
// OVN build ranks a src-ip route below every dst-ip route with a prefix,
// stock OVN by its prefix length, where it would outrank a dst-ip route
// shorter than the subnet that a Kube-OVN deployment follows.
func (l *Lab) AddSubnet(s *Subnet) {
	l.t.Helper()
	if s.VPC == "" || s.Name == "" || !s.Gateway.IsValid() {
		l.t.Fatalf("subnet %+v: VPC, Name and Gateway are required", *s)
	}
	if s.VLAN < 0 || s.VLAN > 4095 {
		l.t.Fatalf("subnet %s: VLAN %d is outside 0..4095", s.Name, s.VLAN)
	}
	l.nextMAC++
	s.MAC = fmt.Sprintf("0a:00:00:00:%02x:01", l.nextMAC)
	lrp, lsp := s.RouterPort(), s.Name+"-"+s.VPC
	l.NBCtl("ls-add", s.Name, "--", "set", "Logical_Switch", s.Name, "external_ids:vendor=kube-ovn",
		"other_config:subnet="+s.Gateway.Masked().String())
	l.NBCtl("lrp-add", s.VPC, lrp, s.MAC, s.Gateway.String(),
		"--", "set", "Logical_Router_Port", lrp, "external_ids:lr="+s.VPC, "external_ids:vendor=kube-ovn")
	l.NBCtl("lsp-add", s.Name, lsp, "--", "lsp-set-type", lsp, "router", "--", "lsp-set-addresses", lsp, "router",
		"--", "lsp-set-options", lsp, "router-port="+lrp)
	if s.VLAN > 0 {
		ln := "localnet." + s.Name
		l.NBCtl("lsp-add", s.Name, ln, "--", "lsp-set-type", ln, "localnet", "--", "lsp-set-addresses", ln, "unknown",
			"--", "lsp-set-options", ln, "network_name="+l.provider,
			"--", "set", "Logical_Switch_Port", ln, "tag="+strconv.Itoa(s.VLAN), "external_ids:vendor=kube-ovn")
	}
}

// Binding is the chassis a port is bound to in the SB, "" when none.
func (l *Lab) Binding(port string) string {
	l.t.Helper()
	uuid := strings.TrimSpace(l.SBCtl("--bare", "--columns=chassis", "find", "Port_Binding", "logical_port="+port))
	if uuid == "" {
		return ""
	}
	return strings.TrimSpace(l.SBCtl("--bare", "--columns=name", "list", "Chassis", uuid))
}

// WaitBinding waits up to timeout until port is bound to chassis, and
// returns how long that took.
func (l *Lab) WaitBinding(port, chassis string, timeout time.Duration) time.Duration {
	l.t.Helper()
	start := time.Now()
	for {
		got := l.Binding(port)
		if got == chassis {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			l.t.Fatalf("port %s is bound to %q after %s, want %q", port, got, timeout, chassis)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LogicalFlows returns the lines of `ovn-sbctl lflow-list <datapath>` that
// belong to the given stage, e.g. "ls_in_arp_rsp".
func (l *Lab) LogicalFlows(datapath, stage string) []string {
	l.t.Helper()
	var out []string
	for _, line := range strings.Split(l.SBCtl("lflow-list", datapath), "\n") {
		if strings.Contains(line, "("+stage+" ") || strings.Contains(line, "("+stage+")") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}
