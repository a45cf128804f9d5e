package capmoxrender_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go4.org/netipx"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

func TestValidDNSServer(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   bool
	}{
		"IPv4":          {reason: "a dotted quad", in: "8.8.8.8", want: true},
		"IPv6":          {reason: "hex and colons", in: "2606:4700:4700::1111", want: true},
		"Loopback6":     {reason: "::1 is an address", in: "::1", want: true},
		"LeadingZero":   {reason: "the strict quad has no leading zeros", in: "08.8.8.8"},
		"Octet256":      {reason: "octets stop at 255", in: "256.1.1.1"},
		"Name":          {reason: "a name is not an address", in: "dns.google"},
		"Port":          {reason: "a port is not part of an address", in: "8.8.8.8:53"},
		"Zone":          {reason: "a zone is not hex", in: "fe80::1%eth0"},
		"Mapped":        {reason: "an IPv4-mapped form has dots", in: "::ffff:1.2.3.4"},
		"Empty":         {reason: "empty", in: ""},
		"ColonsOnly":    {reason: "colons alone are no address", in: ":::"},
		"Space":         {reason: "spaces are refused (the value reaches a heredoc)", in: " 8.8.8.8"},
		"Newline":       {reason: "newlines are refused", in: "8.8.8.8\n"},
		"ShortQuad":     {reason: "three octets", in: "1.1.1"},
		"UpperHexIPv6":  {reason: "upper-case hex is hex", in: "2001:DB8::1", want: true},
		"InvalidIPv6":   {reason: "hex and colons that are no address", in: "1:2:3:4:5:6:7:8:9"},
		"ShellMetachar": {reason: "no shell metacharacters", in: "1.1.1.1;reboot"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := capmoxrender.ValidDNSServer(tc.in); got != tc.want {
				t.Errorf("%s: ValidDNSServer(%q) = %t, want %t", tc.reason, tc.in, got, tc.want)
			}
		})
	}
}

func TestParseIPv4PoolEntry(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   string
		err    bool
	}{
		"Single":    {reason: "one address", in: "10.0.0.5", want: "10.0.0.5"},
		"Range":     {reason: "a range", in: "10.0.0.160-10.0.0.170", want: "10.0.0.160-10.0.0.170"},
		"CIDR":      {reason: "a CIDR covers its block", in: "10.0.0.0/28", want: "10.0.0.0-10.0.0.15"},
		"CIDRHost":  {reason: "host bits are masked", in: "10.0.0.7/30", want: "10.0.0.4-10.0.0.7"},
		"Slash32":   {reason: "a /32 is one address", in: "10.0.0.7/32", want: "10.0.0.7"},
		"Backwards": {reason: "a range must not end before it starts", in: "10.0.0.9-10.0.0.1", err: true},
		"IPv6":      {reason: "ipv4Config takes IPv4 only", in: "2001:db8::1", err: true},
		"Garbage":   {reason: "not an address", in: "ten", err: true},
		"Empty":     {reason: "empty", in: "", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := capmoxrender.ParseIPv4PoolEntry(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("%s: ParseIPv4PoolEntry(%q) error %v, want error %t", tc.reason, tc.in, err, tc.err)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, got.String()); diff != "" {
					t.Errorf("%s: (-want +got):\n%s", tc.reason, diff)
				}
			}
		})
	}
}

// FuzzAddresses: a pool entry that parses has First <= Last, both IPv4, and
// its canonical form parses back to the same range; a DNS entry that is
// accepted is an address netip agrees with.
func FuzzAddresses(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "10.0.0.1-10.0.0.9", "10.0.0.0/8", "::1", "8.8.8.8", "1.2.3.4/33", "1.2.3.4-1.2.3.3", "0.0.0.0/0"} {
		f.Add(s)
	}
	for _, s := range []string{"10.0.0.1 - 10.0.0.9", "10.0.0.1\t", " 10.0.0.0/24"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if capmoxrender.ValidDNSServer(s) {
			if _, err := netip.ParseAddr(s); err != nil {
				t.Fatalf("ValidDNSServer accepted %q, which is no address: %v", s, err)
			}
		}
		r, err := capmoxrender.ParseIPv4PoolEntry(s)
		if err != nil {
			return
		}
		if !r.First.Is4() || !r.Last.Is4() || r.Last.Less(r.First) {
			t.Fatalf("ParseIPv4PoolEntry(%q) = %v", s, r)
		}
		back, err := capmoxrender.ParseIPv4PoolEntry(r.String())
		if err != nil || back != r {
			t.Fatalf("canonical form %q of %q does not round-trip: %v %v", r.String(), s, back, err)
		}
		if first, last, err := ipamEntry(s); err != nil || first != r.First || last != r.Last {
			t.Fatalf("the IPAM provider reads %q as %v-%v (%v), the render as %v", s, first, last, err, r)
		}
	})
}

// FuzzIPv6Addresses: an IPv6 pool entry the render accepts is IPv6, in
// order, and read the same by the IPAM provider's parsers.
func FuzzIPv6Addresses(f *testing.F) {
	for _, s := range []string{"fd00::1", "fd00::1-fd00::9", "fd00::/120", "10.0.0.1", "::ffff:10.0.0.1", "fe80::1%eth0", "fd00::9-fd00::1", "fd00::1 - fd00::2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := capmoxrender.ParseIPv6PoolEntry(s)
		if err != nil {
			return
		}
		if !r.First.Is6() || !r.Last.Is6() || r.Last.Less(r.First) {
			t.Fatalf("ParseIPv6PoolEntry(%q) = %v", s, r)
		}
		if first, last, err := ipamEntry(s); err != nil || first != r.First || last != r.Last {
			t.Fatalf("the IPAM provider reads %q as %v-%v (%v), the render as %v", s, first, last, err, r)
		}
	})
}

// ipamEntry reads a pool entry with the parsers the in-cluster IPAM
// provider v1.0.3 uses (poolutil.AddressToIPSet): netipx.ParseIPRange for
// a-b, netip.ParsePrefix for a CIDR, netip.ParseAddr otherwise.
func ipamEntry(s string) (netip.Addr, netip.Addr, error) {
	switch {
	case strings.Contains(s, "-"):
		r, err := netipx.ParseIPRange(s)
		return r.From(), r.To(), err
	case strings.Contains(s, "/"):
		p, err := netip.ParsePrefix(s)
		r := netipx.RangeOfPrefix(p)
		return r.From(), r.To(), err
	}
	a, err := netip.ParseAddr(s)
	return a, a, err
}
