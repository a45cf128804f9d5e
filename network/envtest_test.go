package network_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// startAPIServer starts kube-apiserver with the real Kube-OVN, in-cluster
// IPAM, Cluster API and capmox CRDs and this repository's own.
func startAPIServer(t testing.TB) (*rest.Config, client.WithWatch) {
	t.Helper()
	cfg, _ := testenv.StartAPIServer(t, testenv.APIServerOptions{
		Scheme:       sim.Scheme(),
		UpstreamCRDs: []string{"kube-ovn-v1.15.24", "capmox-v0.9.0"},
		CAPIIPAM:     true,
		CAPI:         true,
		CRDPaths:     []string{"../config/crd/bases"},
	})
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: the server is the one measured
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: sim.Scheme()})
	if err != nil {
		t.Fatalf("cannot create a client: %v", err)
	}
	return cfg, c
}

// TestAPIServer runs the network lifecycle and the split-brain scenario
// against a real kube-apiserver.
func TestAPIServer(t *testing.T) {
	_, c := startAPIServer(t)
	t.Run("SplitBrain", func(t *testing.T) { splitBrain(t, c, 30) })
	t.Run("Lifecycle", func(t *testing.T) { apiLifecycle(t, c) })
	t.Run("SubnetFinalizer", func(t *testing.T) { subnetFinalizerCases(t, c) })
	t.Run("VlanAdoption", func(t *testing.T) { vlanAdoptionCases(t, c) })
}

// apiLifecycle: a zone of two VLANs and three networks (one exhausted), a
// delete held by an address and a machine, then the release and the waiting
// network taking the freed VLAN; the objects go through the real CRDs'
// schemas and the real API server's finalizer and status semantics.
func apiLifecycle(t *testing.T, store client.WithWatch) {
	ctx := context.Background()
	h := sim.NewHarness(sim.Options{Store: store})
	c := h.Client()
	pn := sim.ProviderNetwork("pxlife", true)
	mustCreate(t, c, pn, sim.Zone("zone-life", "vmbr9", "pxlife", "200-201"), sim.Namespace("life-0", nil))
	pn.Status.Ready, pn.Status.ReadyNodes = true, []string{"node-1"}
	if err := c.Status().Update(ctx, pn); err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cidr := range []string{"10.77.0.0/24", "10.77.1.0/24", "10.77.2.0/24"} {
		objs, err := sim.Network("life-0", "life-"+string(rune('a'+i)), "zone-life", "vpc-life", cidr)
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, c, objs...)
		converge(t, h)
	}
	wantNet(t, c, "life-a", "True/Ready", 200)
	wantNet(t, c, "life-b", "True/Ready", 201)
	wantNet(t, c, "life-c", "False/ZoneExhausted", 0)

	mustCreate(t, c, sim.IPAddress("life-0", "vm-0", "life-b", "10.77.1.64", 24),
		sim.Machine("life-0", "vm-0", "v1alpha2", "vmbr9", 201, "life-b"))
	for _, r := range []sim.ObjectRef{
		{APIVersion: "proxmox.cozystack.io/v1alpha1", Kind: "ProxmoxNetwork", Namespace: "life-0", Name: "life-b"},
		{APIVersion: "kubeovn.io/v1", Kind: "Subnet", Name: "life-b"},
		{APIVersion: "ipam.cluster.x-k8s.io/v1alpha2", Kind: "InClusterIPPool", Namespace: "life-0", Name: "life-b"},
	} {
		if err := h.Delete(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	converge(t, h)
	wantNet(t, c, "life-b", "False/InUse", 201)
	if err := h.Delete(ctx, sim.ObjectRef{APIVersion: "ipam.cluster.x-k8s.io/v1beta2", Kind: "IPAddress", Namespace: "life-0", Name: "vm-0"}); err != nil {
		t.Fatal(err)
	}
	converge(t, h)
	wantNet(t, c, "life-b", "False/InUse", 201) // the machine still has a NIC on the pool
	if err := h.Delete(ctx, sim.ObjectRef{APIVersion: "infrastructure.cluster.x-k8s.io/v1alpha2", Kind: "ProxmoxMachine", Namespace: "life-0", Name: "vm-0"}); err != nil {
		t.Fatal(err)
	}
	converge(t, h)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "life-0", Name: "life-b"}, &v1alpha1.ProxmoxNetwork{}); err == nil {
		t.Fatal("the released network is still there")
	}
	wantNet(t, c, "life-c", "True/Ready", 201)
	if err := sim.VerifyInvariants(ctx, c); err != nil {
		t.Error(err)
	}
}

func wantNet(t *testing.T, c client.Client, name, ready string, vlan int32) {
	t.Helper()
	n := &v1alpha1.ProxmoxNetwork{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "life-0", Name: name}, n); err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	got := "(absent)"
	if cond := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionReady); cond != nil {
		got = string(cond.Status) + "/" + cond.Reason
	}
	if got != ready || n.Status.VLAN != vlan {
		t.Fatalf("network %s: Ready %s VLAN %d, want %s VLAN %d (%+v)", name, got, n.Status.VLAN, ready, vlan, n.Status.Conditions)
	}
}
