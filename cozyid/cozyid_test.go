package cozyid_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/cozyid"
)

func TestDeterministicIDs(t *testing.T) {
	cases := map[string]struct {
		reason     string
		ns         string
		vpc        cozyid.VPCName
		sn         cozyid.SubnetName
		wantVPC    cozyid.VPCID
		wantSubnet cozyid.SubnetID
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
			vpc := cozyid.VPC(tc.ns, tc.vpc)
			got := [2]string{string(vpc), string(cozyid.Subnet(tc.ns, vpc, tc.sn))}
			if diff := cmp.Diff([2]string{string(tc.wantVPC), string(tc.wantSubnet)}, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	if got := cozyid.Egress("tenant-test", "vpc-a0c9fc"); got != "subnet-aa3414a4" {
		t.Errorf("egress internal subnet id = %s, want subnet-aa3414a4 (the chart fixture)", got)
	}
	if got := cozyid.VPC("tenant-other", "other"); got != "vpc-37739d" {
		t.Errorf("peer VPC id = %s, want vpc-37739d (the chart's peering fixture)", got)
	}
	if got := cozyid.Release("myvpc"); got != "virtualprivatecloud-myvpc" {
		t.Errorf("release of myvpc = %s, want virtualprivatecloud-myvpc", got)
	}
}
