package vpcrender

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
)

// ReleasePrefix is prepended to a VPC's name to form its release name.
const ReleasePrefix = "virtualprivatecloud-"

// egressSubnetKey is the subnet name the egress gateway's own overlay
// subnet is hashed under. Subnet names are DNS labels, so it never collides
// with a tenant subnet.
const egressSubnetKey = "__egress"

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// VPCID is the Kube-OVN Vpc name of VPC vpc in namespace ns:
// "vpc-" + sha256("<ns>/virtualprivatecloud-<vpc>")[:6].
func VPCID(ns, vpc string) string {
	return "vpc-" + sha256Hex(ns + "/" + ReleasePrefix + vpc)[:6]
}

// SubnetID is the name shared by the Kube-OVN Subnet, the Vlan, the
// InClusterIPPool, the ProxmoxNetwork and the NetworkAttachmentDefinition of
// subnet in the VPC with id vpcID: "subnet-" + sha256("<ns>/<vpcID>/<subnet>")[:8].
func SubnetID(ns, vpcID, subnet string) string {
	return "subnet-" + sha256Hex(ns + "/" + vpcID + "/" + subnet)[:8]
}

// EgressSubnetID is the id of the overlay subnet an egress gateway gets when
// the VPC sets egress.internalCidr.
func EgressSubnetID(ns, vpcID string) string {
	return SubnetID(ns, vpcID, egressSubnetKey)
}

// PeeringLink returns the local end of the peering link between the VPCs
// localID and remoteID: a /30 in 169.254.0.0/16 derived from the sorted pair
// of ids, where the id that sorts first holds the first host address and the
// other the second. Both sides compute the same /30 without talking to each
// other.
func PeeringLink(localID, remoteID string) netip.Prefix {
	pair := []string{localID, remoteID}
	sort.Strings(pair)
	sum := sha256.Sum256([]byte(pair[0] + "/" + pair[1]))
	third := sum[0]%254 + 1
	base := (sum[1] % 64) * 4
	host := base + 2
	if localID == pair[0] {
		host = base + 1
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{169, 254, third, host}), 30)
}

// linkNetwork is the /30 network a peering link address lies in.
func linkNetwork(p netip.Prefix) netip.Prefix { return p.Masked() }

func peerString(p Peer) string { return fmt.Sprintf("%s/%s", p.TenantNamespace, p.VPCName) }
