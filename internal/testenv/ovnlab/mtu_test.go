//go:build linux

package ovnlab_test

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/ovnlab"
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

// transferSize is the TCP transfer from a VM to a pod on another chassis.
const transferSize = 10 << 20

// transferToPod sends transferSize bytes over TCP from vm1 (MTU 1500) to
// pod3 (MTU 1500, so it announces an MSS of 1460) on ch3, without
// gateway_mtu: full-size segments cannot cross the Geneve tunnel and no
// ICMP error says so, so the transfer stalls. It returns the result.
func transferToPod(t *testing.T, g *gatewayLab) ovnlab.Transfer {
	t.Helper()
	r, err := g.vm1.TransferTCP(g.pod3, transferSize, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MTU, TCP from the VM to a pod on another chassis without gateway_mtu: %s", r)
	if r.Done {
		t.Errorf("without gateway_mtu, a TCP transfer of full-size segments across the tunnel was expected to stall: %s", r)
	}
	return r
}

// dfPing sends count echoes of size bytes, 0.2 s apart, from h with ping's
// path MTU mode (-M do: never fragment; -M want: fragment to the path MTU
// the kernel learned) and returns ping's output and whether a reply came.
func dfPing(t *testing.T, h *ovnlab.Host, dst netip.Addr, size, count int, mode string) (string, bool) {
	t.Helper()
	out, err := h.Run("ping", "-n", "-c", strconv.Itoa(count), "-i", "0.2", "-W", "1", "-M", mode, "-s", strconv.Itoa(size-28), dst.String())
	return out, err == nil
}

// checkGatewayMTU: the controller's gateway writes options:gateway_mtu on
// the VM's router port from the zone's gateway MTU (1400 for a 1500-byte
// zone); then a don't-fragment packet too large for the tunnel is answered
// with ICMP "fragmentation needed", the VM's next packet of that size is
// fragmented to the path MTU and arrives, and TCP completes. Setting the
// gateway MTU to 0 removes the option again.
func checkGatewayMTU(t *testing.T, g *gatewayLab, without ovnlab.Transfer) {
	t.Helper()
	ctx := context.Background()
	gw := g.gws["sub1"]
	gw.GatewayMTU = int(v1alpha1.GatewayMTUOf(v1alpha1.ProxmoxNetworkZoneSpec{}))
	if o, err := g.nb.Reconcile(ctx, gw); err != nil || o.GatewayMTU != 1400 {
		t.Fatalf("Reconcile(%s) with the zone's gateway MTU = %+v, %v", gw.RouterPort, o, err)
	}
	g.SyncHV()
	port := g.sub1.RouterPort()
	if got := strings.TrimSpace(g.NBCtl("get", "Logical_Router_Port", port, "options:gateway_mtu")); got != `"1400"` {
		t.Fatalf("options:gateway_mtu of %s is %s, want \"1400\"", port, got)
	}
	dst := g.pod3.Addr.Addr()
	out, ok := dfPing(t, g.vm1, dst, 1500, 1, "do")
	if ok || !strings.Contains(out, "Frag needed and DF set (mtu = 1400)") {
		t.Errorf("with gateway_mtu=1400 on %s, a 1500-byte DF packet to the pod on ch3 must be answered with ICMP fragmentation needed (mtu 1400):\n%s", port, out)
	}
	t.Logf("MTU, gateway_mtu=1400 on %s, 1500-byte DF packet to the pod on ch3: %s", port, firstLine(out, "Frag"))
	// The pod's 1500-byte reply crosses the tunnel the other way: the
	// router answers it with the same ICMP error, so the pod's first reply
	// is lost and the next ones are fragmented too.
	out, ok = dfPing(t, g.vm1, dst, 1500, 3, "want")
	if !ok {
		t.Errorf("after the ICMP error, the VM's next 1500-byte packets to the pod must be fragmented to the path MTU and arrive:\n%s", out)
	}
	t.Logf("MTU, the VM's next three 1500-byte echoes, fragmented to the path MTU: %s", firstLine(out, "received"))
	if !dfPasses(t, g.vm1, dst, 1400) {
		t.Errorf("with gateway_mtu=1400 on %s, a 1400-byte DF packet to the pod must pass", port)
	}
	// The router checks what enters from its gateway port too, so routed
	// VLAN-to-VLAN traffic gets the same limit.
	if out, ok := dfPing(t, g.vm1, g.vm2.Addr.Addr(), 1500, 1, "do"); ok || !strings.Contains(out, "mtu = 1400") {
		t.Errorf("with gateway_mtu=1400 on %s, a 1500-byte DF packet to the VM on sub2 must be answered with ICMP fragmentation needed (mtu 1400):\n%s", port, out)
	}
	r, err := g.vm1.TransferTCP(g.pod3, transferSize, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MTU, TCP from the VM to a pod on another chassis with gateway_mtu=1400: %s (without: %s)", r, without)
	if !r.Done {
		t.Errorf("with gateway_mtu, the TCP transfer to the pod must complete: %s", r)
	}
	gw.GatewayMTU = 0
	if _, err := g.nb.Reconcile(ctx, gw); err != nil {
		t.Fatal(err)
	}
	g.SyncHV()
	if got := strings.TrimSpace(g.NBCtl("--if-exists", "get", "Logical_Router_Port", port, "options:gateway_mtu")); got != "" {
		t.Errorf("with the gateway MTU 0, the controller must remove its options:gateway_mtu from %s; it is %s", port, got)
	}
	// Forget the path MTU the ICMP error taught the VM.
	if _, err := g.vm1.Run("ip", "route", "flush", "cache"); err != nil {
		t.Fatal(err)
	}
	if !dfPasses(t, g.vm1, g.vm2.Addr.Addr(), 1500) {
		t.Errorf("without gateway_mtu again, a 1500-byte DF packet to %s must pass", g.vm2.Addr.Addr())
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
