package network_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubehypervisor"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// hyperWorld is zone-a (VLANs 100-103) on a TLS Proxmox fake whose one
// node lets only VLANs 100-101 through vmbr1, with the zone's credentials
// Secret, and four networks.
func hyperWorld(t *testing.T) (*pvefake.Server, *sim.Harness, client.WithWatch) {
	t.Helper()
	srv := pvefake.NewServer(t, pvefake.WithTLS())
	if err := srv.SetInterface("pve", pvefake.Interface{Name: "vmbr1", Type: "bridge", Ports: "eno2", VLANAware: true, VIDs: "100-101"}); err != nil {
		t.Fatal(err)
	}
	h := sim.NewHarness(sim.Options{})
	c := h.Client()
	h.SetHypervisor(kubehypervisor.Hypervisor{Reader: c})
	baseWorld(t, c, map[string][]string{"zone-a": {"100-103"}})
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cozy-proxmox", Name: "pve-sdn"},
		Data: map[string][]byte{"url": []byte(strings.TrimSuffix(srv.URL, "/api2/json")), "token_id": []byte(srv.RootTokenID),
			"token_secret": []byte(srv.RootSecret), "root_ca": srv.CertificatePEM()}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	z := &v1alpha1.ProxmoxNetworkZone{}
	if err := c.Get(ctx, client.ObjectKey{Name: "zone-a"}, z); err != nil {
		t.Fatal(err)
	}
	z.Spec.SDN = &v1alpha1.ZoneSDN{Mode: "Check", CredentialsRef: &v1alpha1.SecretRef{Namespace: "cozy-proxmox", Name: "pve-sdn"}}
	if err := c.Update(ctx, z); err != nil {
		t.Fatal(err)
	}
	for n := range 4 {
		createNetwork(t, c, netID(n), "zone-a")
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	converge(t, h)
	return srv, h, c
}

// zoneSDN returns the zone's HypervisorReady condition and SDN status.
func zoneSDN(t *testing.T, c client.Client) (string, string, *v1alpha1.ZoneSDNStatus) {
	t.Helper()
	z := &v1alpha1.ProxmoxNetworkZone{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "zone-a"}, z); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(z.Status.Conditions, v1alpha1.ConditionHypervisorReady)
	if cond == nil || z.Status.SDN == nil {
		t.Fatalf("zone-a has no HypervisorReady condition or SDN status: %+v", z.Status)
	}
	return string(cond.Status) + "/" + cond.Reason, cond.Message, z.Status.SDN
}

// vlans returns the VLANs the four networks hold (0: none).
func vlans(t *testing.T, c client.Client) []int {
	t.Helper()
	var out []int
	for n := range 4 {
		out = append(out, int(getNet(t, c, netID(n)).Status.VLAN))
	}
	return out
}

// poke makes the zone reconcile again, as its resync would.
func poke(t *testing.T, h *sim.Harness, c client.Client) {
	t.Helper()
	z := &v1alpha1.ProxmoxNetworkZone{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "zone-a"}, z); err != nil {
		t.Fatal(err)
	}
	if z.Labels == nil {
		z.Labels = map[string]string{}
	}
	z.Labels["poke"] += "x"
	if err := c.Update(context.Background(), z); err != nil {
		t.Fatal(err)
	}
	converge(t, h)
}

func TestZoneHandsOutOnlyVLANsEveryNodeCarries(t *testing.T) {
	srv, h, c := hyperWorld(t)
	cond, msg, st := zoneSDN(t, c)
	if cond != "False/VLANsWithheld" || st.WithheldVLANs != "102-103" || st.CarryableVLANs != "100-101" ||
		!strings.Contains(msg, "does not allow VLANs 102-103") {
		t.Fatalf("zone with a node that drops 102-103: %s %q %+v", cond, msg, st)
	}
	got := vlans(t, c)
	held := 0
	for _, v := range got {
		if v == 102 || v == 103 {
			t.Fatalf("a withheld VLAN was handed out: %v", got)
		}
		if v != 0 {
			held++
		}
	}
	if held != 2 {
		t.Fatalf("networks hold %v; want 100 and 101 handed out, two waiting", got)
	}
	reqs := len(srv.Requests())
	srv.SetNodeUnreachable("pve", true)
	poke(t, h, c)
	cond, msg, st = zoneSDN(t, c)
	if cond != "False/StaleView" || st.WithheldVLANs != "102-103" || len(st.StaleNodes) != 1 || !strings.Contains(msg, "stale") {
		t.Fatalf("unreachable node: %s %q %+v", cond, msg, st)
	}
	if n := len(srv.Requests()) - reqs; n > 8 {
		t.Errorf("one zone pass made %d requests; the check reads each node once", n)
	}
	srv.SetNodeUnreachable("pve", false)
	if err := srv.SetInterface("pve", pvefake.Interface{Name: "vmbr1", Type: "bridge", Ports: "eno2", VLANAware: true, VIDs: "2-4094"}); err != nil {
		t.Fatal(err)
	}
	poke(t, h, c)
	cond, _, st = zoneSDN(t, c)
	if cond != "True/AllVLANsCarried" || st.WithheldVLANs != "" {
		t.Fatalf("fixed node: %s %+v", cond, st)
	}
	for _, v := range vlans(t, c) {
		if v == 0 {
			t.Fatalf("after the fix every network has a VLAN: %v", vlans(t, c))
		}
	}
	if vnet := getNet(t, c, 0).Status.VNet; vnet != "" {
		t.Errorf("a zone in mode Check gives no VNet, got %q", vnet)
	}
	z := &v1alpha1.ProxmoxNetworkZone{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "zone-a"}, z); err != nil {
		t.Fatal(err)
	}
	z.Spec.SDN.Mode, z.Spec.SDN.Zone, z.Spec.SDN.VNetPrefix = "VNets", "pxa", "pxa"
	if err := c.Update(context.Background(), z); err != nil {
		t.Fatal(err)
	}
	converge(t, h)
	for n := range 4 {
		st := getNet(t, c, netID(n)).Status
		if want := fmt.Sprintf("pxa%04d", st.VLAN); st.VNet != want {
			t.Errorf("network %d on VLAN %d in mode VNets: vnet %q, want %q", n, st.VLAN, st.VNet, want)
		}
		// The namespace lists the VNet next to the plain bridge's triple,
		// so NICs of either kind are admitted while the zone moves.
		pool := getNet(t, c, netID(n)).Spec.IPPool
		listed := strings.Split(namespaceAnnotation(t, c, netID(n).ns()), ",")
		for _, e := range []string{network.Triple(st.Bridge, st.VLAN, pool), network.VNetEntry(st.VNet, pool)} {
			if !slices.Contains(listed, e) {
				t.Errorf("namespace %s lists %v, without %s", netID(n).ns(), listed, e)
			}
		}
	}
}
