package vpcrender

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// FuzzRenderSpec feeds arbitrary bytes through ParseSpec and Render. A parse
// failure must be ErrParse; a render failure must consist of refusals with
// messages; an accepted render must be deterministic and keep the address
// split and routing invariants.
func FuzzRenderSpec(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/*.yaml")
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("namespace: t\nname: v\nsubnets: [{name: s, cidr: 10.0.0.0/28, proxmox: {vmRange: 10.0.0.2-10.0.0.14}}]\nzones: [{name: z}]\n"))
	f.Add([]byte("namespace: t\nname: v\nsubnets: [{name: s, cidr: 10.0.0.0/8, proxmox: {}}]\nroutes: [{cidr: 0.0.0.0/0, nextHopIP: 10.255.255.255}]\nzones: [{name: z}]\n"))
	f.Add([]byte(`{"namespace":"t","name":"v","peers":[{"vpcName":"x","tenantNamespace":"y"}],"routes":[{"cidr":"1.2.3.4","nextHopIP":"169.254.0.1"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSpec(data)
		if err != nil {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("parse error is not ErrParse: %v", err)
			}
			assertBounded(t, err)
			return
		}
		r, err := Render(s)
		if err != nil {
			rs := Refusals(err)
			if !errors.Is(err, ErrRefused) || len(rs) == 0 {
				t.Fatalf("render error without refusals: %v", err)
			}
			assertBounded(t, err)
			for _, x := range rs {
				if x.Message == "" || x.Field == "" {
					t.Fatalf("refusal without message or field: %+v", x)
				}
			}
			return
		}
		again, err := Render(s)
		if err != nil {
			t.Fatalf("second render failed: %v", err)
		}
		a, _ := r.YAML()
		b, _ := again.YAML()
		if string(a) != string(b) {
			t.Fatalf("render is not deterministic")
		}
		checkRenderInvariants(t, s, r)
	})
}

func checkRenderInvariants(t *testing.T, s Spec, r Rendering) {
	t.Helper()
	var inside []netip.Prefix
	seen := map[string]bool{}
	for _, o := range r.Objects {
		key := strings.TrimPrefix(strings.Split(typeName(o), ".")[1], "*") + "/" + nameOf(o)
		if seen[key] {
			t.Fatalf("%s rendered twice", key)
		}
		seen[key] = true
		switch v := o.(type) {
		case *kubeovnv1.Subnet:
			for _, c := range strings.Split(v.Spec.CIDRBlock, ",") {
				p, err := netip.ParsePrefix(strings.TrimSpace(c))
				if err != nil {
					t.Fatalf("subnet %s has cidr %q: %v", v.Name, v.Spec.CIDRBlock, err)
				}
				inside = append(inside, p)
			}
			if v.Spec.Vlan != "" {
				checkSplit(t, v)
			}
		case *Vpc:
			for _, p := range v.Spec.VpcPeerings {
				l, err := netip.ParsePrefix(p.LocalConnectIP)
				if err != nil || l.Bits() != 30 || !linkLocal.Contains(l.Addr()) {
					t.Fatalf("peering link %q is not a /30 in 169.254.0.0/16", p.LocalConnectIP)
				}
			}
		}
	}
	if len(s.Peers) > 0 {
		inside = append(inside, linkLocal)
	}
	for _, rt := range s.Routes {
		hop := netip.MustParseAddr(rt.NextHopIP)
		if hop.Is4() && !containsAny(inside, hop) {
			t.Fatalf("accepted route %+v leaves the VPC", rt)
		}
	}
}

// checkSplit: the gateway is the first address, the VM range lies after it
// and before the broadcast address, and the pool holds exactly that range.
func checkSplit(t *testing.T, v *kubeovnv1.Subnet) {
	t.Helper()
	p := netip.MustParsePrefix(v.Spec.CIDRBlock)
	gw := netip.MustParseAddr(v.Spec.Gateway)
	if gw != p.Addr().Next() {
		t.Fatalf("gateway %s is not the first address of %s", gw, p)
	}
	ends := strings.Split(v.Spec.ExcludeIps[0], "..")
	from, to := netip.MustParseAddr(ends[0]), netip.MustParseAddr(ends[1])
	bcast := fromUint(toUint(p.Addr()) | (1<<(32-p.Bits()) - 1))
	if !gw.Less(from) || to.Compare(bcast) >= 0 || to.Less(from) {
		t.Fatalf("VM range %s-%s of %s does not lie after %s and before %s", from, to, p, gw, bcast)
	}
}

func typeName(o any) string {
	switch o.(type) {
	case *Vpc:
		return "vpcrender.Vpc"
	case *kubeovnv1.Subnet:
		return "kubeovnv1.Subnet"
	case *NetworkAttachmentDefinition:
		return "vpcrender.NAD"
	case *ipamv1alpha2.InClusterIPPool:
		return "ipamv1alpha2.Pool"
	case *v1alpha1.ProxmoxNetwork:
		return "v1alpha1.ProxmoxNetwork"
	case *VpcEgressGateway:
		return "vpcrender.Egress"
	}
	return "vpcrender.Unknown"
}

// FuzzProxmoxSubnet drives the address split with arbitrary CIDRs and VM
// ranges: whatever is accepted keeps the split invariants, whatever is
// refused is refused for this subnet.
func FuzzProxmoxSubnet(f *testing.F) {
	f.Add("10.208.64.0/24", "")
	f.Add("10.208.64.0/24", "10.208.64.1-10.208.64.50")
	f.Add("10.208.64.0/24", "10.208.64.100-10.208.65.10")
	f.Add("10.0.0.0/8", "10.0.0.2-10.255.255.254")
	f.Add("10.0.0.0/28", " 10.0.0.2 - 10.0.0.13 ")
	f.Add("fd00::/64", "")
	f.Fuzz(func(t *testing.T, cidr, vmRange string) {
		s := base(func(s *Spec) {
			s.Subnets[0].CIDR = cidr
			s.Subnets[0].Proxmox.VMRange = vmRange
		})
		r, err := Render(s)
		if err != nil {
			for _, x := range Refusals(err) {
				if !strings.HasPrefix(x.Field, "subnets[") {
					t.Fatalf("refusal about %s for a subnet input", x.Field)
				}
			}
			return
		}
		checkRenderInvariants(t, s, r)
	})
}

// FuzzParseLookup: no panic, a failure is ErrParse, and every zone and
// network read has a name.
func FuzzParseLookup(f *testing.F) {
	f.Add([]byte(lookupFixture))
	f.Add([]byte("kind: List\nitems: [{kind: ProxmoxNetworkZone, metadata: {name: z}, spec: {mtu: '1500'}}]"))
	f.Add([]byte("kind: ProxmoxNetwork\nmetadata: {name: n}\nstatus: {ipPool: {used: 1.5}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLookup(data)
		if err != nil {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("error is not ErrParse: %v", err)
			}
			return
		}
		for _, z := range l.Zones {
			if z.Name == "" {
				t.Fatalf("zone without a name: %+v", z)
			}
		}
		for _, n := range l.Networks {
			if n.Name == "" {
				t.Fatalf("network without a name: %+v", n)
			}
		}
	})
}

// assertBounded fails t when err's text floods (more than
// termsafe.MaxErrors+1 lines) or carries a control character.
func assertBounded(t *testing.T, err error) {
	t.Helper()
	if msg := err.Error(); strings.Count(msg, "\n") > termsafe.MaxErrors || strings.ContainsFunc(msg, termsafe.IsEscaped) {
		t.Fatalf("the refusal floods or carries a control character: %q", msg)
	}
}
