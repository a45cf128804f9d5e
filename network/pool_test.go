package network_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/network"
)

func TestPoolTotal(t *testing.T) {
	cases := map[string]struct {
		reason string
		spec   ipamv1alpha2.InClusterIPPoolSpec
		want   int32
		err    bool
	}{
		"MiddleHalf": {
			reason: "the vpc chart's default pool is the middle half of a /24: 128 addresses",
			spec:   ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.231.64.64-10.231.64.191"}, Prefix: 24, Gateway: "10.231.64.1"},
			want:   128,
		},
		"CIDRLosesNetworkBroadcastGateway": {
			reason: "a whole /24 loses its network, broadcast and gateway addresses",
			spec:   ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.0.0.0/24"}, Prefix: 24, Gateway: "10.0.0.1"},
			want:   253,
		},
		"AllocateReserved": {
			reason: "allocateReservedIPAddresses keeps network and broadcast",
			spec:   ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.0.0.0/24"}, Prefix: 24, Gateway: "10.0.0.1", AllocateReservedIPAddresses: true},
			want:   255,
		},
		"Excluded": {
			reason: "excludedAddresses are removed, overlaps counted once",
			spec: ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.0.0.10-10.0.0.19", "10.0.0.15-10.0.0.24"}, Prefix: 24,
				ExcludedAddresses: []string{"10.0.0.20", "10.0.0.11-10.0.0.12"}},
			want: 12,
		},
		"IPv6": {
			reason: "an IPv6 /120 loses only its first (anycast) address",
			spec:   ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"fd00::/120"}, Prefix: 120},
			want:   255,
		},
		"Saturates": {
			reason: "a huge IPv6 pool saturates at MaxInt32",
			spec:   ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"fd00::/64"}, Prefix: 64},
			want:   2147483647,
		},
		"Bad": {
			reason: "an entry that is no address is an error",
			spec:   ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.0.0.300"}, Prefix: 24},
			err:    true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := network.PoolTotal(tc.spec)
			if (err != nil) != tc.err {
				t.Fatalf("%s: error %v, want error %v", tc.reason, err, tc.err)
			}
			if tc.err && !errors.Is(err, network.ErrInvalidAddress) {
				t.Errorf("%s: error %v does not wrap ErrInvalidAddress", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCheckPoolSplit(t *testing.T) {
	pool := func(addrs ...string) ipamv1alpha2.InClusterIPPoolSpec {
		return ipamv1alpha2.InClusterIPPoolSpec{Addresses: addrs, Prefix: 24, Gateway: "10.0.0.1"}
	}
	cases := map[string]struct {
		reason  string
		cidr    string
		exclude []string
		pool    ipamv1alpha2.InClusterIPPoolSpec
		cause   string // the IPPoolReady reason
		want    string
	}{
		"Fits": {
			reason: "a pool inside the CIDR and the excludeIps passes",
			cidr:   "10.0.0.0/24", exclude: []string{"10.0.0.64..10.0.0.191"}, pool: pool("10.0.0.64-10.0.0.191"),
		},
		"FitsSplitExclude": {
			reason: "excludeIps entries may cover the pool together",
			cidr:   "10.0.0.0/24", exclude: []string{"10.0.0.64..10.0.0.100", "10.0.0.101", "10.0.0.102..10.0.0.191"}, pool: pool("10.0.0.64-10.0.0.191"),
		},
		"OutsideCIDR": {
			reason: "addresses outside the CIDR are named",
			cidr:   "10.0.0.0/24", exclude: []string{"10.0.0.0..10.0.1.255"}, pool: pool("10.0.0.250-10.0.1.5"),
			cause: v1alpha1.ReasonPoolOutsideSubnet, want: "pool addresses 10.0.1.0-10.0.1.5 are outside the subnet's CIDR 10.0.0.0/24",
		},
		"NotExcluded": {
			reason: "addresses Kube-OVN may give to pods are named",
			cidr:   "10.0.0.0/24", exclude: []string{"10.0.0.64..10.0.0.100"}, pool: pool("10.0.0.64-10.0.0.110", "10.0.0.120"),
			cause: v1alpha1.ReasonPoolOverlapsSubnet, want: "pool addresses 10.0.0.101-10.0.0.110,10.0.0.120 are not in the subnet's excludeIps, so Kube-OVN may give them to pods",
		},
		"Gateway": {
			reason: "the subnet's gateway must not be in the pool",
			cidr:   "10.0.0.0/24", exclude: []string{"10.0.0.1..10.0.0.20"}, pool: pool("10.0.0.1-10.0.0.20"),
			cause: v1alpha1.ReasonPoolOverlapsSubnet, want: "the pool includes the subnet's gateway 10.0.0.1",
		},
		"PoolGatewayDiffers": {
			reason: "the pool's gateway must be the subnet's",
			cidr:   "10.0.0.0/24", exclude: []string{"10.0.0.64..10.0.0.191"},
			pool:  ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.0.0.64-10.0.0.191"}, Prefix: 24, Gateway: "10.0.0.254"},
			cause: v1alpha1.ReasonPoolGatewayMismatch, want: "the pool's gateway 10.0.0.254 differs from the subnet's gateway 10.0.0.1: machines would route through an address the subnet does not answer on",
		},
		"PoolPrefixDiffers": {
			reason: "the pool's prefix must be the subnet's",
			cidr:   "10.0.0.0/24", exclude: []string{"10.0.0.64..10.0.0.191"},
			pool:  ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.0.0.64-10.0.0.191"}, Prefix: 16, Gateway: "10.0.0.1"},
			cause: v1alpha1.ReasonPoolPrefixMismatch, want: "the pool's prefix 16 differs from the subnet's prefix 24 (10.0.0.0/24): machines would get a netmask the subnet does not have",
		},
		"PoolWithoutGateway": {
			reason: "a pool that names no gateway leaves the subnet's in place",
			cidr:   "10.0.0.0/24", exclude: []string{"10.0.0.64..10.0.0.191"},
			pool: ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.0.0.64-10.0.0.191"}, Prefix: 24},
		},
		"PoolGatewayNotAnAddress": {
			reason: "a pool gateway that is no address is not the subnet's",
			cidr:   "10.0.0.0/24", exclude: []string{"10.0.0.64..10.0.0.191"},
			pool:  ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.0.0.64-10.0.0.191"}, Prefix: 24, Gateway: "gw"},
			cause: v1alpha1.ReasonPoolGatewayMismatch, want: `the pool's gateway "gw" is not an address`,
		},
		"PoolAddressInvalid": {
			reason: "a pool address that does not parse",
			cidr:   "10.0.0.0/24", exclude: []string{"10.0.0.64..10.0.0.191"}, pool: pool("10.0.0.x"),
			cause: v1alpha1.ReasonPoolAddressInvalid,
		},
		"SubnetCIDRInvalid": {
			reason: "a subnet cidrBlock that does not parse",
			cidr:   "10.0.0.0/33", exclude: []string{"10.0.0.64..10.0.0.191"}, pool: pool("10.0.0.64-10.0.0.191"),
			cause: v1alpha1.ReasonSubnetCIDRInvalid,
		},
		"SubnetExcludeIPsInvalid": {
			reason: "an excludeIps entry that does not parse",
			cidr:   "10.0.0.0/24", exclude: []string{"10.0.0.64..x"}, pool: pool("10.0.0.64-10.0.0.191"),
			cause: v1alpha1.ReasonSubnetExcludeIPsInvalid,
		},
		"DualStack": {
			reason: "an IPv4 pool fits the IPv4 half of a dual-stack subnet",
			cidr:   "10.0.0.0/24,fd00::/120", exclude: []string{"10.0.0.64..10.0.0.191"}, pool: pool("10.0.0.64-10.0.0.191"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cause, got := network.CheckPoolSplit(tc.cidr, "10.0.0.1", tc.exclude, tc.pool)
			if cause != tc.cause || (cause == "") != (got == "") {
				t.Fatalf("%s: reason %q (%s), want %q", tc.reason, cause, got, tc.cause)
			}
			if diff := cmp.Diff(tc.want, got); tc.want != "" && diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// FuzzParsePoolEntry: an entry parses into a valid range whose ends print
// back to addresses that parse again to the same range, or is refused with
// ErrInvalidAddress.
func FuzzParsePoolEntry(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "10.0.0.1-10.0.0.9", "10.0.0.0/24", "fd00::/120", "fd00::1-fd00::ff", "10.0.0.9-10.0.0.1", "a-b", "1.2.3.4/33", "fe80::1%eth0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := network.ParsePoolEntry(s)
		if err != nil {
			if !errors.Is(err, network.ErrInvalidAddress) {
				t.Fatalf("error %v does not wrap ErrInvalidAddress", err)
			}
			return
		}
		if !r.IsValid() {
			t.Fatalf("%q parsed into an invalid range %v", s, r)
		}
		again, err := network.ParsePoolEntry(r.From().String() + "-" + r.To().String())
		if err != nil || again != r {
			t.Fatalf("%q: range %v does not round-trip: %v %v", s, r, again, err)
		}
	})
}

// FuzzParseExcludeIP: the same property for Kube-OVN's "a..b" ranges.
func FuzzParseExcludeIP(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "10.0.0.1..10.0.0.9", "fd00::1..fd00::9", "10.0.0.9..10.0.0.1", "10.0.0.1-10.0.0.9", "..", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := network.ParseExcludeIP(s)
		if err != nil {
			if !errors.Is(err, network.ErrInvalidAddress) {
				t.Fatalf("error %v does not wrap ErrInvalidAddress", err)
			}
			return
		}
		if !r.IsValid() || r.From().Compare(r.To()) > 0 {
			t.Fatalf("%q parsed into an invalid range %v", s, r)
		}
		again, err := network.ParseExcludeIP(r.From().String() + ".." + r.To().String())
		if err != nil || again != r {
			t.Fatalf("%q: range %v does not round-trip: %v %v", s, r, again, err)
		}
		if _, err := netip.ParseAddr(r.From().String()); err != nil {
			t.Fatal(err)
		}
	})
}
