package vpcrender

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func TestDeterministicIDs(t *testing.T) {
	cases := map[string]struct {
		reason      string
		ns, vpc, sn string
		wantVPC     string
		wantSubnet  string
	}{
		"FactsExample": {
			reason: "the example of the facts, checked against the chart's fixtures",
			ns:     "tenant-test", vpc: "net", sn: "private",
			wantVPC: "vpc-a40741", wantSubnet: "subnet-b10ab7f7",
		},
		"ChartFixtureWorkers": {
			reason: "the VPC chart's test fixture names its subnets",
			ns:     "tenant-test", vpc: "myvpc", sn: "workers",
			wantVPC: "vpc-a0c9fc", wantSubnet: "subnet-ff692499",
		},
		"ChartFixtureData": {
			reason: "a second subnet of the same fixture",
			ns:     "tenant-test", vpc: "myvpc", sn: "data",
			wantVPC: "vpc-a0c9fc", wantSubnet: "subnet-bd55eab5",
		},
		"ChartFixtureGone": {
			reason: "a third subnet of the same fixture",
			ns:     "tenant-test", vpc: "myvpc", sn: "gone",
			wantVPC: "vpc-a0c9fc", wantSubnet: "subnet-695b0802",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			vpc := VPCID(tc.ns, tc.vpc)
			got := [2]string{vpc, SubnetID(tc.ns, vpc, tc.sn)}
			if diff := cmp.Diff([2]string{tc.wantVPC, tc.wantSubnet}, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	if got := EgressSubnetID("tenant-test", "vpc-a0c9fc"); got != "subnet-aa3414a4" {
		t.Errorf("egress internal subnet id = %s, want subnet-aa3414a4 (the chart fixture)", got)
	}
}

func TestPeeringLinkFixture(t *testing.T) {
	local, remote := VPCID("tenant-test", "myvpc"), VPCID("tenant-other", "other")
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
		a := VPCID(rapid.StringMatching(`[a-z][a-z0-9-]{0,20}`).Draw(t, "nsA"), rapid.StringMatching(`[a-z][a-z0-9]{0,10}`).Draw(t, "vpcA"))
		b := VPCID(rapid.StringMatching(`[a-z][a-z0-9-]{0,20}`).Draw(t, "nsB"), rapid.StringMatching(`[a-z][a-z0-9]{0,10}`).Draw(t, "vpcB"))
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
