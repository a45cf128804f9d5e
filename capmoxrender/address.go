package capmoxrender

import (
	"net/netip"
	"regexp"
	"strings"

	"go4.org/netipx"
)

// dottedQuad is the strict IPv4 form the charts accept for DNS entries.
var dottedQuad = regexp.MustCompile(`^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$`)

// ValidDNSServer reports whether s is an address the charts accept as a
// resolver: a strict dotted quad, or a string with a colon made only of hex
// digits and colons that parses as an IPv6 address.
func ValidDNSServer(s string) bool {
	if dottedQuad.MatchString(s) {
		return true
	}
	if !strings.Contains(s, ":") {
		return false
	}
	for _, r := range s {
		if r != ':' && !isHex(r) {
			return false
		}
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6()
}

func isHex(r rune) bool {
	return (r >= '0' && r <= '9') || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F')
}

// AddressRange is one entry of an IP pool: a single address, a range a-b or
// a CIDR, normalised to its first and last address.
type AddressRange struct {
	First, Last netip.Addr
}

// ParseIPv4PoolEntry parses one ipv4Config.addresses entry the way the IPAM
// provider does: "10.0.0.5", "10.0.0.160-10.0.0.170" or "10.0.0.0/28".
// Only IPv4 is accepted, and a range must not end before it starts.
//
// Like the IPAM provider, it takes no space or tab anywhere: "10.0.0.5 -
// 10.0.0.9" is refused, since the provider's webhook refuses the pool
// ("provided address is not a valid IP, range, nor CIDR").
func ParseIPv4PoolEntry(s string) (AddressRange, error) { return parsePoolEntry(s, false) }

// ParseIPv6PoolEntry is ParseIPv4PoolEntry for ipv6Config.addresses:
// "fd00::10", "fd00::10-fd00::20" or "fd00::/120".
func ParseIPv6PoolEntry(s string) (AddressRange, error) { return parsePoolEntry(s, true) }

func parsePoolEntry(s string, v6 bool) (AddressRange, error) {
	if strings.ContainsAny(s, " \t\r\n") {
		return AddressRange{}, errorf("%q holds a space or tab, which the IPAM provider refuses", s)
	}
	parse := parseIPv4
	if v6 {
		parse = parseIPv6
	}
	if first, last, ok := strings.Cut(s, "-"); ok {
		a, err := parse(first)
		if err != nil {
			return AddressRange{}, err
		}
		b, err := parse(last)
		if err != nil {
			return AddressRange{}, err
		}
		if b.Less(a) {
			return AddressRange{}, errorf("range %q ends before it starts", s)
		}
		return AddressRange{First: a, Last: b}, nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Is4() == v6 || p.Addr().Zone() != "" {
			return AddressRange{}, errorf("%q is not an %s CIDR", s, family(v6))
		}
		p = p.Masked()
		return AddressRange{First: p.Addr(), Last: lastOf(p)}, nil
	}
	a, err := parse(s)
	if err != nil {
		return AddressRange{}, err
	}
	return AddressRange{First: a, Last: a}, nil
}

func family(v6 bool) string {
	if v6 {
		return "IPv6"
	}
	return "IPv4"
}

func parseIPv6(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
		return netip.Addr{}, errorf("%q is not an IPv6 address", s)
	}
	return a, nil
}

func parseIPv4(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Addr{}, errorf("%q is not an IPv4 address", s)
	}
	return a, nil
}

func lastOf(p netip.Prefix) netip.Addr { return netipx.RangeOfPrefix(p.Masked()).To() }

// String renders the entry in its canonical form.
func (r AddressRange) String() string {
	if r.First == r.Last {
		return r.First.String()
	}
	return r.First.String() + "-" + r.Last.String()
}

// Prefix returns the network of the pool entry's first address with bits
// prefix bits: the subnet the IPAM provider holds every entry of a pool to.
func (r AddressRange) Prefix(bits int) netip.Prefix {
	return netip.PrefixFrom(r.First, bits).Masked()
}

// lastIn is the last address of p.
func (AddressRange) lastIn(p netip.Prefix) netip.Addr { return lastOf(p.Masked()) }

// Within reports whether the whole range lies inside p.
func (r AddressRange) Within(p netip.Prefix) bool { return p.Contains(r.First) && p.Contains(r.Last) }
