package vpcrender

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"slices"

	"github.com/pxsubstrate/pxsubstrate/cozyid"
)

// PeeringLink returns the local end of the peering link between the VPCs
// localID and remoteID: a /30 in 169.254.0.0/16 derived from the sorted pair
// of ids, where the id that sorts first holds the first host address and the
// other the second. Both sides compute the same /30 without talking to each
// other.
func PeeringLink(localID, remoteID cozyid.VPCID) netip.Prefix {
	pair := []cozyid.VPCID{localID, remoteID}
	slices.Sort(pair)
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
