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

// AddRouter creates a VPC's logical router as Kube-OVN does
// (external_ids vendor=kube-ovn).
func (l *Lab) AddRouter(vpc string) {
	l.t.Helper()
	l.NBCtl("lr-add", vpc, "--", "set", "Logical_Router", vpc, "external_ids:vendor=kube-ovn")
}

// AddSubnet lays out a subnet as Kube-OVN does for a custom VPC: the logical
// switch, the router port "<vpc>-<subnet>" with the gateway address, its peer
// "<subnet>-<vpc>" of type router, and for a VLAN subnet the localnet port
// "localnet.<subnet>" with addresses "unknown", network_name set to the
// provider network and the VLAN in tag. It sets no gateway_chassis and no
// ha_chassis_group, as Kube-OVN does not.
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
