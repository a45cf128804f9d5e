package network

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"strings"

	"go4.org/netipx"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// ErrInvalidAddress says a pool entry, an excludeIps entry or a CIDR does
// not parse.
var ErrInvalidAddress = errors.New("invalid address")

// ParsePoolEntry parses one InClusterIPPool addresses entry: a single IP, a
// range "a-b" or a CIDR, into the range of addresses it names.
func ParsePoolEntry(s string) (netipx.IPRange, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netipx.IPRange{}, fmt.Errorf("pool entry %q is not an IP, a range a-b or a CIDR: %w", s, ErrInvalidAddress)
		}
		return netipx.RangeOfPrefix(p.Masked()), nil
	}
	if from, to, ok := strings.Cut(s, "-"); ok {
		return parseRange(s, from, to, "pool entry", "a range a-b")
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netipx.IPRange{}, fmt.Errorf("pool entry %q is not an IP, a range a-b or a CIDR: %w", s, ErrInvalidAddress)
	}
	return netipx.IPRangeFrom(a, a), nil
}

// ParseExcludeIP parses one Kube-OVN excludeIps entry: a single IP or a
// range "a..b".
func ParseExcludeIP(s string) (netipx.IPRange, error) {
	s = strings.TrimSpace(s)
	if from, to, ok := strings.Cut(s, ".."); ok {
		return parseRange(s, from, to, "excludeIps entry", "a range a..b")
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netipx.IPRange{}, fmt.Errorf("excludeIps entry %q is not an IP or a range a..b: %w", s, ErrInvalidAddress)
	}
	return netipx.IPRangeFrom(a, a), nil
}

func parseRange(s, from, to, what, form string) (netipx.IPRange, error) {
	a, errA := netip.ParseAddr(strings.TrimSpace(from))
	b, errB := netip.ParseAddr(strings.TrimSpace(to))
	if errA != nil || errB != nil || a.Zone() != "" || b.Zone() != "" {
		return netipx.IPRange{}, fmt.Errorf("%s %q is not an IP or %s: %w", what, s, form, ErrInvalidAddress)
	}
	r := netipx.IPRangeFrom(a, b)
	if !r.IsValid() {
		return netipx.IPRange{}, fmt.Errorf("%s %q ends before it starts or mixes IPv4 and IPv6: %w", what, s, ErrInvalidAddress)
	}
	return r, nil
}

// poolRanges is the union of a pool's addresses minus its excludedAddresses.
func poolRanges(spec ipamv1alpha2.InClusterIPPoolSpec) (*netipx.IPSet, error) {
	var b netipx.IPSetBuilder
	for _, e := range spec.Addresses {
		r, err := ParsePoolEntry(e)
		if err != nil {
			return nil, err
		}
		b.AddRange(r)
	}
	for _, e := range spec.ExcludedAddresses {
		r, err := ParsePoolEntry(e)
		if err != nil {
			return nil, err
		}
		b.RemoveRange(r)
	}
	return b.IPSet()
}

// PoolTotal counts the addresses the in-cluster IPAM provider can hand out
// from spec: its addresses minus excludedAddresses and the gateway, and,
// unless allocateReservedIPAddresses is set, minus the network address and
// (IPv4) the broadcast address of the subnet inferred from the first
// address and the prefix. The count saturates at MaxInt32.
func PoolTotal(spec ipamv1alpha2.InClusterIPPoolSpec) (int32, error) {
	set, err := poolRanges(spec)
	if err != nil {
		return 0, err
	}
	var b netipx.IPSetBuilder
	b.AddSet(set)
	if gw, err := netip.ParseAddr(spec.Gateway); err == nil {
		b.Remove(gw)
	}
	if !spec.AllocateReservedIPAddresses && len(spec.Addresses) > 0 {
		first, _ := ParsePoolEntry(spec.Addresses[0])
		if p, err := first.From().Prefix(spec.Prefix); err == nil {
			b.Remove(p.Addr())
			if p.Addr().Is4() {
				b.Remove(netipx.PrefixLastIP(p))
			}
		}
	}
	usable, err := b.IPSet()
	if err != nil {
		return 0, fmt.Errorf("cannot count the pool's addresses: %w", err)
	}
	return countSet(usable), nil
}

func countSet(s *netipx.IPSet) int32 {
	total := new(big.Int)
	for _, r := range s.Ranges() {
		from := new(big.Int).SetBytes(r.From().AsSlice())
		to := new(big.Int).SetBytes(r.To().AsSlice())
		total.Add(total, to.Sub(to, from).Add(to, big.NewInt(1)))
	}
	if !total.IsInt64() || total.Int64() > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(total.Int64())
}

// SubnetCIDRs parses a Kube-OVN cidrBlock: one CIDR, or an IPv4 and an IPv6
// CIDR separated by a comma.
func SubnetCIDRs(cidrBlock string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range strings.Split(cidrBlock, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			return nil, fmt.Errorf("subnet cidrBlock %q is not a CIDR or a comma-separated pair of CIDRs: %w", cidrBlock, ErrInvalidAddress)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// CheckPoolSplit says whether a pool fits the Proxmox split of its subnet:
// every pool address inside the subnet's CIDR, inside the subnet's
// excludeIps (so Kube-OVN never gives it to a pod), and not the subnet's
// gateway, with the subnet's gateway and prefix. It returns "", "" when the
// split holds, otherwise the IPPoolReady reason, spelled as Cozystack's
// controller spells it, and a message saying which addresses break it:
// PoolAddressInvalid, SubnetCIDRInvalid, SubnetExcludeIPsInvalid (an entry
// that does not parse), PoolOutsideSubnet, PoolOverlapsSubnet (addresses
// Kube-OVN may give to pods, or the gateway), PoolPrefixMismatch or
// PoolGatewayMismatch.
func CheckPoolSplit(cidrBlock, gateway string, excludeIps []string, spec ipamv1alpha2.InClusterIPPoolSpec) (reason, msg string) {
	pool, err := poolRanges(spec)
	if err != nil {
		return v1alpha1.ReasonPoolAddressInvalid, err.Error()
	}
	cidrs, err := SubnetCIDRs(cidrBlock)
	if err != nil {
		return v1alpha1.ReasonSubnetCIDRInvalid, err.Error()
	}
	var inCIDR, excluded netipx.IPSetBuilder
	for _, p := range cidrs {
		inCIDR.AddPrefix(p)
	}
	for _, e := range excludeIps {
		r, err := ParseExcludeIP(e)
		if err != nil {
			return v1alpha1.ReasonSubnetExcludeIPsInvalid, err.Error()
		}
		excluded.AddRange(r)
	}
	if out := minus(pool, &inCIDR); out != "" {
		return v1alpha1.ReasonPoolOutsideSubnet, fmt.Sprintf("pool addresses %s are outside the subnet's CIDR %s", out, cidrBlock)
	}
	if out := minus(pool, &excluded); out != "" {
		return v1alpha1.ReasonPoolOverlapsSubnet, fmt.Sprintf("pool addresses %s are not in the subnet's excludeIps, so Kube-OVN may give them to pods", out)
	}
	if gw, err := netip.ParseAddr(gateway); err == nil && pool.Contains(gw) {
		return v1alpha1.ReasonPoolOverlapsSubnet, fmt.Sprintf("the pool includes the subnet's gateway %s", gw)
	}
	return checkPoolRouting(cidrs, gateway, pool, spec)
}

// checkPoolRouting compares the pool's gateway and prefix, which capmox
// writes into every machine's network config, with the subnet's of the
// pool's address family: a machine given another gateway or prefix has no
// route off its subnet.
func checkPoolRouting(cidrs []netip.Prefix, gateway string, pool *netipx.IPSet, spec ipamv1alpha2.InClusterIPPoolSpec) (reason, msg string) {
	ranges := pool.Ranges()
	if len(ranges) == 0 {
		return "", ""
	}
	is4 := ranges[0].From().Is4()
	for _, p := range cidrs {
		if p.Addr().Is4() == is4 && spec.Prefix != p.Bits() {
			return v1alpha1.ReasonPoolPrefixMismatch, fmt.Sprintf("the pool's prefix %d differs from the subnet's prefix %d (%s): machines would get a netmask the subnet does not have", spec.Prefix, p.Bits(), p)
		}
	}
	if spec.Gateway == "" {
		return "", ""
	}
	pgw, err := netip.ParseAddr(spec.Gateway)
	if err != nil {
		return v1alpha1.ReasonPoolGatewayMismatch, fmt.Sprintf("the pool's gateway %q is not an address", spec.Gateway)
	}
	for _, g := range strings.Split(gateway, ",") {
		sgw, err := netip.ParseAddr(strings.TrimSpace(g))
		if err == nil && sgw.Is4() == pgw.Is4() && sgw != pgw {
			return v1alpha1.ReasonPoolGatewayMismatch, fmt.Sprintf("the pool's gateway %s differs from the subnet's gateway %s: machines would route through an address the subnet does not answer on", pgw, sgw)
		}
	}
	return "", ""
}

// minus returns the ranges of a not covered by b, comma-separated.
func minus(a *netipx.IPSet, b *netipx.IPSetBuilder) string {
	var d netipx.IPSetBuilder
	d.AddSet(a)
	bs, _ := b.IPSet()
	d.RemoveSet(bs)
	ds, _ := d.IPSet()
	var parts []string
	for _, r := range ds.Ranges() {
		if r.From() == r.To() {
			parts = append(parts, r.From().String())
		} else {
			parts = append(parts, r.String())
		}
	}
	return strings.Join(parts, ",")
}
