package vpcrender

import (
	"net/netip"
	"testing"

	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/cozyid"
)

func TestPeeringLinkFixture(t *testing.T) {
	local, remote := cozyid.VPC("tenant-test", "myvpc"), cozyid.VPC("tenant-other", "other")
	if remote != "vpc-37739d" {
		t.Fatalf("remote id = %s", remote)
	}
	// The chart fixture routes to the peer over 169.254.19.245: the end of
	// the VPC whose id sorts first.
	if got := PeeringLink(remote, local).String(); got != "169.254.19.245/30" {
		t.Errorf("remote end = %s, want 169.254.19.245/30", got)
	}
	if got := PeeringLink(local, remote).String(); got != "169.254.19.246/30" {
		t.Errorf("local end = %s, want 169.254.19.246/30", got)
	}
}

// TestPeeringLinkProperties: for any two distinct ids, both ends are /30s
// of the same network inside 169.254.0.0/16, avoid the 169.254.0.0/24 and
// 169.254.255.0/24 blocks, are distinct host addresses, and the id that sorts
// first holds the first host.
func TestPeeringLinkProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := cozyid.VPC(rapid.StringMatching(`[a-z][a-z0-9-]{0,20}`).Draw(t, "nsA"), cozyid.VPCName(rapid.StringMatching(`[a-z][a-z0-9]{0,10}`).Draw(t, "vpcA")))
		b := cozyid.VPC(rapid.StringMatching(`[a-z][a-z0-9-]{0,20}`).Draw(t, "nsB"), cozyid.VPCName(rapid.StringMatching(`[a-z][a-z0-9]{0,10}`).Draw(t, "vpcB")))
		if a == b {
			return // a VPC does not peer with itself
		}
		la, lb := PeeringLink(a, b), PeeringLink(b, a)
		if la.Bits() != 30 || lb.Bits() != 30 {
			t.Fatalf("links %s %s are not /30s", la, lb)
		}
		if la.Masked() != lb.Masked() || la.Addr() == lb.Addr() {
			t.Fatalf("ends %s and %s are not two hosts of one /30", la, lb)
		}
		if !linkLocal.Contains(la.Addr()) {
			t.Fatalf("%s is outside 169.254.0.0/16", la)
		}
		third := la.Addr().As4()[2]
		if third == 0 || third == 255 {
			t.Fatalf("%s uses a reserved 169.254 block", la)
		}
		first, second := la, lb
		if b < a {
			first, second = lb, la
		}
		net := first.Masked().Addr().As4()
		if first.Addr() != netip.AddrFrom4([4]byte{net[0], net[1], net[2], net[3] + 1}) ||
			second.Addr() != netip.AddrFrom4([4]byte{net[0], net[1], net[2], net[3] + 2}) {
			t.Fatalf("first id holds %s, second %s", first, second)
		}
	})
}
