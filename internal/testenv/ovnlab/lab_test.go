//go:build linux

package ovnlab_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/ovnlab"
)

// TestLabTwoVMsOneVLAN checks the plumbing without OVN in the path: two VMs
// on the same VLAN reach each other through the hypervisor bridge, a VM on
// another VLAN does not, and the chassis are registered in the SB.
func TestLabTwoVMsOneVLAN(t *testing.T) {
	lab := ovnlab.New(t, ovnlab.Options{Chassis: []ovnlab.ChassisSpec{{Name: "ch1", Trunk: true}}})
	a := lab.AddVM(ovnlab.VM{Name: "a", VLAN: 10, Addr: netip.MustParsePrefix("10.9.0.1/24"), Gateway: netip.MustParseAddr("10.9.0.254")})
	lab.AddVM(ovnlab.VM{Name: "b", VLAN: 10, Addr: netip.MustParsePrefix("10.9.0.2/24"), Gateway: netip.MustParseAddr("10.9.0.254")})
	lab.AddVM(ovnlab.VM{Name: "c", VLAN: 11, Addr: netip.MustParsePrefix("10.9.0.3/24"), Gateway: netip.MustParseAddr("10.9.0.254")})
	if out, err := a.Ping(netip.MustParseAddr("10.9.0.2"), 0, false, 2*time.Second); err != nil {
		t.Errorf("VMs on one VLAN must reach each other: %v\n%s", err, out)
	}
	if out, err := a.Ping(netip.MustParseAddr("10.9.0.3"), 0, false, 500*time.Millisecond); err == nil {
		t.Errorf("a VM on another VLAN must not answer:\n%s", out)
	}
	if got := strings.TrimSpace(lab.SBCtl("--bare", "--columns=name", "list", "Chassis")); got != "ch1" {
		t.Errorf("SB chassis = %q, want ch1", got)
	}
}
