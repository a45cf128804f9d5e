package ovnlab_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/ovnlab"
)

// geneveOverhead is what OVN's Geneve encapsulation adds to an inner IP
// packet: Ethernet 14, Geneve 8 plus OVN's 8-byte option, UDP 8, IPv4 20.
const geneveOverhead = 58

// dfPasses returns whether a don't-fragment echo of size bytes reaches dst,
// and fails t if the sender was told to fragment: OVN sends no ICMP
// "fragmentation needed" on these routers, so an oversize packet vanishes.
func dfPasses(t *testing.T, h *ovnlab.Host, dst netip.Addr, size int) bool {
	t.Helper()
	out, err := h.Ping(dst, size, true, time.Second)
	if strings.Contains(out, "Frag needed") || strings.Contains(out, "frag needed") {
		t.Errorf("%d-byte DF packet to %s: the sender was told the path MTU, but OVN sends no ICMP here:\n%s", size, dst, out)
	}
	return err == nil
}

// checkMTU: the VLAN subnets carry their full 1500 bytes from VM to VM, but
// a routed packet to a pod on another chassis crosses the Geneve tunnel,
// whose 1500-byte underlay leaves 1500 - 58 = 1442 bytes; a larger
// don't-fragment packet is dropped there without an ICMP error.
func checkMTU(t *testing.T, g *gatewayLab) {
	t.Helper()
	cases := []struct {
		what  string
		dst   *ovnlab.Host
		limit int
	}{
		{"a VM on the other VLAN subnet", g.vm2, 1500},
		{"a pod across the Geneve tunnel", g.pod3, 1500 - geneveOverhead},
	}
	for _, c := range cases {
		if !dfPasses(t, g.vm1, c.dst.Addr.Addr(), c.limit) {
			t.Errorf("MTU, %s: a %d-byte DF packet must pass", c.what, c.limit)
		}
		if c.limit < g.vm1.MTU {
			if dfPasses(t, g.vm1, c.dst.Addr.Addr(), c.limit+1) {
				t.Errorf("MTU, %s: a %d-byte DF packet must be dropped", c.what, c.limit+1)
			}
			if dfPasses(t, g.vm1, c.dst.Addr.Addr(), g.vm1.MTU) {
				t.Errorf("MTU, %s: a %d-byte DF packet (the VM's MTU) must be dropped", c.what, g.vm1.MTU)
			}
		}
		t.Logf("MTU, %s: %d-byte DF packets pass, larger ones up to the VM's %d are dropped without an ICMP error", c.what, c.limit, g.vm1.MTU)
	}
}

// checkGatewayMTU: with options:gateway_mtu on a gateway port (a router port
// with the group), OVN answers an oversize don't-fragment packet routed out
// of that port with ICMP "fragmentation needed" instead of losing it.
func checkGatewayMTU(t *testing.T, g *gatewayLab) {
	t.Helper()
	port := g.sub2.RouterPort()
	g.NBCtl("set", "Logical_Router_Port", port, "options:gateway_mtu=1400")
	g.SyncHV()
	dst := g.vm2.Addr.Addr()
	out, err := g.vm1.Ping(dst, 1401, true, time.Second)
	if err == nil || !strings.Contains(out, "Frag needed and DF set (mtu = 1400)") {
		t.Errorf("with gateway_mtu=1400 on %s, a 1401-byte DF packet must be answered with ICMP fragmentation needed (mtu 1400): %v\n%s", port, err, out)
	}
	if !dfPasses(t, g.vm1, dst, 1400) {
		t.Errorf("with gateway_mtu=1400 on %s, a 1400-byte DF packet must pass", port)
	}
	t.Logf("MTU, gateway_mtu=1400 on %s: 1400 bytes pass, 1401 get ICMP fragmentation needed: %s", port, firstLine(out, "Frag"))
	g.NBCtl("remove", "Logical_Router_Port", port, "options", "gateway_mtu")
	g.SyncHV()
	// Forget the path MTU the ICMP error taught the VM.
	if _, err := g.vm1.Run("ip", "route", "flush", "cache"); err != nil {
		t.Fatal(err)
	}
	if !dfPasses(t, g.vm1, dst, 1500) {
		t.Errorf("without gateway_mtu again, a 1500-byte DF packet to %s must pass", dst)
	}
}

func firstLine(out, with string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, with) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
