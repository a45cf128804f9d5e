package vpcrender

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const lookupFixture = `apiVersion: v1
kind: List
items:
- apiVersion: proxmox.cozystack.io/v1alpha1
  kind: ProxmoxNetworkZone
  metadata: {name: default}
  spec:
    bridge: vmbr70
    providerNetwork: pxtenant
    vlanRanges: ["101-199"]
    mtu: 8996
    egress: {externalSubnet: px-transit, gatewayNamespace: cozy-proxmox-network}
---
apiVersion: proxmox.cozystack.io/v1alpha1
kind: ProxmoxNetwork
metadata:
  name: subnet-695b0802
  namespace: tenant-test
  labels: {cozystack.io/vpcId: vpc-a0c9fc, cozystack.io/subnetName: gone}
spec: {zone: default, subnet: subnet-695b0802, ipPool: subnet-695b0802}
status:
  ipPool: {total: "100", used: "3", free: "97"}
`

func TestParseLookup(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   Lookup
		err    error
		named  string // in the error
	}{
		"ListAndDocument": {
			reason: "a List and a second document; numbers may be strings",
			in:     lookupFixture,
			want: Lookup{
				Zones:    []Zone{{Name: "default", ProviderNetwork: "pxtenant", MTU: 8996, Egress: &ZoneEgress{ExternalSubnet: "px-transit", GatewayNamespace: "cozy-proxmox-network"}}},
				Networks: []Network{{Name: "subnet-695b0802", VPCID: "vpc-a0c9fc", SubnetName: "gone", UsedAddresses: 3}},
			},
		},
		"OtherKind": {
			reason: "a file of other objects is refused, not ignored",
			in:     "kind: ConfigMap\nmetadata: {name: x}\n",
			err:    ErrParse,
		},
		"NoName": {
			reason: "a zone needs its name",
			in:     "kind: ProxmoxNetworkZone\nspec: {bridge: vmbr70}\n",
			err:    ErrParse,
		},
		"BadUsed": {
			reason: "status.ipPool.used must be a whole number",
			in:     "kind: ProxmoxNetwork\nmetadata: {name: n}\nstatus: {ipPool: {used: many}}\n",
			err:    ErrParse,
		},
		"NegativeMTU": {
			reason: "a negative spec.mtu is no MTU: refused, not wrapped",
			in:     "kind: ProxmoxNetworkZone\nmetadata: {name: z}\nspec: {mtu: -1}\n",
			err:    ErrParse,
		},
		"Empty": {
			reason: "an empty file is an empty lookup",
			in:     "",
		},
		"EmptyDocuments": {
			reason: "empty documents are passed over",
			in:     "---\n---\nkind: ProxmoxNetworkZone\nmetadata: {name: z}\n---\n",
			want:   Lookup{Zones: []Zone{{Name: "z"}}},
		},
		"AfterEndMarker": {
			reason: "an object after a document end marker is refused, not skipped",
			in:     "kind: ProxmoxNetworkZone\nmetadata: {name: z}\n...\nkind: ProxmoxNetwork\nmetadata: {name: n}\n",
			err:    ErrParse,
			named:  "document 2: yaml: line 3",
		},
		"SyntaxInLaterDocument": {
			reason: "a syntax error in any document is refused",
			in:     "kind: ProxmoxNetworkZone\nmetadata: {name: z}\n---\nkind: ProxmoxNetwork\n metadata: {name: n}\n",
			err:    ErrParse,
			named:  "document 2: yaml: line 5",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseLookup([]byte(tc.in))
			if !errors.Is(err, tc.err) {
				t.Fatalf("%s: error %v, want %v", tc.reason, err, tc.err)
			}
			if tc.named != "" && !strings.Contains(err.Error(), tc.named) {
				t.Errorf("%s: the error %q does not name %s", tc.reason, err, tc.named)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestLookupDrivesRefusal: the ProxmoxNetwork read from the cluster refuses
// the removal of the subnet while VMs hold addresses on it.
func TestLookupDrivesRefusal(t *testing.T) {
	l, err := ParseLookup([]byte(lookupFixture))
	if err != nil {
		t.Fatal(err)
	}
	s := base(func(s *Spec) { s.Zones, s.Previous = l.Zones, l.Networks })
	_, err = Render(s)
	rs := Refusals(err)
	if len(rs) != 1 || rs[0].Message != `subnet "gone" is Proxmox-backed and 3 VM address(es) are still allocated on it; delete those machines before removing the subnet` {
		t.Fatalf("got %v", err)
	}
}
