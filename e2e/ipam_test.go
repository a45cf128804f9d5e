package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/vpcrender"
)

const (
	ipamCIDR    = "10.61.0.0/28"
	ipamGateway = "10.61.0.1"
	ipamVMRange = "10.61.0.4-10.61.0.6"
	// poolHeld is the IPAM provider's webhook refusing to delete a pool
	// that still has addresses.
	// releaseAddress is the finalizer the provider puts on a claim it
	// answers; noAddress is its error when the pool has none left.
	releaseAddress = "ipam.cluster.x-k8s.io/ReleaseAddress"
	noAddress      = "failed to find free address: no address available"
	poolHeld       = "Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed."
)

// TestIPAMProvider runs our controller with the real in-cluster IPAM
// provider and Cluster API core (which converts the provider's v1beta1
// IPAddresses and claims): a Proxmox-backed network rendered by vpcrender
// hands out addresses of its vmRange to IPAddressClaims made as capmox makes
// them, never the gateway; status.ipPool counts the provider's
// IPAddresses; a claim beyond the pool leaves the network PoolExhausted;
// the provider's webhook refuses to delete a pool that has addresses (the
// seed's reason for leaving the webhook out: an uninstall that deletes the
// pool stops at that refusal) unless the pool carries the
// skip-validate-delete-webhook annotation our render writes, so with the
// webhook live the VPC's deletion is accepted and the network is held until
// the last claim goes.
func TestIPAMProvider(t *testing.T) {
	e := newEnv(t)
	mgrs := capi.StartT(t, e.cfg, capi.Options{CAPI: true, IPAM: true})
	ctx := context.Background()
	cl := cluster("i", 61)
	cl.Setup(t, e.admin, "i-node-1")
	kubeOVN := sim.World{PruneSubnets: true, IPAMProvider: true}
	step := func() error { _, err := kubeOVN.React(ctx, e.admin); return err }
	e.start(t, "ipam", append(leaseFlags, "--manage-gateway-chassis=false", "--webhook-port=0")...)

	objs := renderVPC(t, cl)
	var netName, poolName string
	for _, o := range objs {
		switch o.GetKind() {
		case "ProxmoxNetwork":
			netName = o.GetName()
		case "InClusterIPPool":
			poolName = o.GetName()
		}
		if err := e.admin.Create(ctx, o); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	controllertest.Eventually(t, 90*time.Second, step, func() (bool, string) { return cl.Ready(ctx, e.admin, netName) })

	for i := range 2 {
		claim(t, e.admin, cl.Tenant, fmt.Sprintf("vm-%d-net0-0", i), poolName)
	}
	waitAddresses(t, e.admin, cl.Tenant, poolName, 2)
	checkUsage(t, e.admin, cl, netName, step, 2, 1, "Ready")
	claim(t, e.admin, cl.Tenant, "vm-2-net0-0", poolName)
	checkAddresses(t, waitAddresses(t, e.admin, cl.Tenant, poolName, 3))
	checkUsage(t, e.admin, cl, netName, step, 3, 0, v1alpha1.ReasonPoolExhausted)

	// A fourth claim finds the pool exhausted: it gets no address, and the
	// network keeps saying PoolExhausted.
	claim(t, e.admin, cl.Tenant, "vm-3-net0-0", poolName)
	checkClaimWaits(t, e.admin, mgrs.IPAM, cl.Tenant, "vm-3-net0-0")
	checkUsage(t, e.admin, cl, netName, step, 3, 0, v1alpha1.ReasonPoolExhausted)
	if n := len(poolAddresses(t, e.admin, cl.Tenant, poolName)); n != 3 {
		t.Errorf("the pool of 3 addresses handed out %d", n)
	}

	checkDeleteWebhook(t, e.admin, cl.Tenant, poolName)

	// Deleting the VPC's objects, webhook live, is accepted; the network is
	// held while addresses are in use, and goes once the claims go.
	for i := len(objs) - 1; i >= 0; i-- {
		if err := deleteEventually(ctx, e.admin, objs[i]); err != nil {
			t.Fatal(err)
		}
	}
	controllertest.Eventually(t, 60*time.Second, step, func() (bool, string) {
		n, err := network(ctx, e.admin, cl, netName)
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionReady)
		return !n.DeletionTimestamp.IsZero() && c != nil && c.Reason == v1alpha1.ReasonInUse, fmt.Sprint(n.Status.Conditions)
	})
	for i := range 4 {
		u := claimObject(cl.Tenant, fmt.Sprintf("vm-%d-net0-0", i), poolName)
		if err := e.admin.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	waitGone(t, e.admin, cl, netName, step)
}

// renderVPC renders a VPC of one Proxmox-backed subnet in cl's zone with a
// vmRange of three addresses, and returns the Vpc, Subnet, InClusterIPPool
// and ProxmoxNetwork it writes, pool first.
func renderVPC(t *testing.T, cl controllertest.Cluster) []*unstructured.Unstructured {
	t.Helper()
	r, err := vpcrender.Render(vpcrender.Spec{
		Namespace: cl.Tenant, Name: "ipam",
		Subnets: []vpcrender.VPCSubnet{{Name: "vms", CIDR: ipamCIDR, Proxmox: &vpcrender.ProxmoxSubnet{Zone: cl.Zone, VMRange: ipamVMRange}}},
		Zones:   []vpcrender.Zone{{Name: cl.Zone, ProviderNetwork: cl.ProviderNetwork}},
	})
	if err != nil {
		t.Fatal(err)
	}
	all, err := r.Unstructured()
	if err != nil {
		t.Fatal(err)
	}
	var pool, rest []*unstructured.Unstructured
	for _, o := range all {
		switch o.GetKind() {
		case "InClusterIPPool":
			pool = append(pool, o)
		case "Vpc", "Subnet", "ProxmoxNetwork":
			rest = append(rest, o)
		}
	}
	if len(pool) != 1 || len(rest) != 3 {
		t.Fatalf("the render wrote %d pools and %d of Vpc, Subnet, ProxmoxNetwork", len(pool), len(rest))
	}
	return append(pool, rest...)
}

// claimObject is an IPAddressClaim as capmox makes it for NIC net0 of a
// machine: named <machine>-<device>-<index>, drawing from the pool.
func claimObject(ns, name, pool string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ipam.cluster.x-k8s.io/v1beta2", "kind": "IPAddressClaim",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{"poolRef": map[string]any{
			"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": pool,
		}},
	}}
	return u
}

func claim(t *testing.T, c client.Client, ns, name, pool string) {
	t.Helper()
	if err := c.Create(context.Background(), claimObject(ns, name, pool)); err != nil {
		t.Fatalf("IPAddressClaim %s: %v", name, err)
	}
}

func poolAddresses(t *testing.T, c client.Client, ns, pool string) []unstructured.Unstructured {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("ipam.cluster.x-k8s.io/v1beta2")
	l.SetKind("IPAddressList")
	if err := c.List(context.Background(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []unstructured.Unstructured
	for _, a := range l.Items {
		if name, _, _ := unstructured.NestedString(a.Object, "spec", "poolRef", "name"); name == pool {
			out = append(out, a)
		}
	}
	return out
}

func waitAddresses(t *testing.T, c client.Client, ns, pool string, n int) []unstructured.Unstructured {
	t.Helper()
	var addrs []unstructured.Unstructured
	controllertest.Eventually(t, 60*time.Second, nil, func() (bool, string) {
		addrs = poolAddresses(t, c, ns, pool)
		return len(addrs) == n, fmt.Sprintf("%d IPAddresses", len(addrs))
	})
	return addrs
}

// checkAddresses: distinct addresses inside the vmRange, never the
// gateway, with the subnet's prefix and gateway.
func checkAddresses(t *testing.T, addrs []unstructured.Unstructured) {
	t.Helper()
	from, to, _ := strings.Cut(ipamVMRange, "-")
	lo, hi := netip.MustParseAddr(from), netip.MustParseAddr(to)
	seen := map[string]bool{}
	for _, a := range addrs {
		ip, _, _ := unstructured.NestedString(a.Object, "spec", "address")
		gw, _, _ := unstructured.NestedString(a.Object, "spec", "gateway")
		prefix, _, _ := unstructured.NestedInt64(a.Object, "spec", "prefix")
		addr, err := netip.ParseAddr(ip)
		if err != nil || addr.Less(lo) || hi.Less(addr) || ip == ipamGateway || seen[ip] {
			t.Errorf("IPAddress %s got %q: want a distinct address of %s, never the gateway %s", a.GetName(), ip, ipamVMRange, ipamGateway)
		}
		if gw != ipamGateway || prefix != 28 {
			t.Errorf("IPAddress %s has gateway %q and prefix %d, want the subnet's %s and 28", a.GetName(), gw, prefix, ipamGateway)
		}
		seen[ip] = true
	}
}

// checkUsage waits until the network's status.ipPool counts used and free
// of a pool of three, matching the provider's IPAddresses, with IPPoolReady
// of reason.
func checkUsage(t *testing.T, c client.Client, cl controllertest.Cluster, name string, step func() error, used, free int32, reason string) {
	t.Helper()
	ctx := context.Background()
	controllertest.Eventually(t, 60*time.Second, step, func() (bool, string) {
		n, err := network(ctx, c, cl, name)
		if err != nil {
			return false, err.Error()
		}
		u := n.Status.IPPool
		cond := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionIPPoolReady)
		ok := u != nil && u.Total == 3 && u.Used == used && u.Free == free && cond != nil && cond.Reason == reason &&
			int(u.Used) == len(poolAddresses(t, c, cl.Tenant, n.Spec.IPPool))
		return ok, fmt.Sprintf("ipPool %+v, IPPoolReady %+v", u, cond)
	})
}

// checkClaimWaits waits until the provider has taken the claim (its
// ReleaseAddress finalizer) and logged that the pool has no address left,
// and checks that the claim holds none.
func checkClaimWaits(t *testing.T, c client.Client, provider *capi.Manager, ns, name string) {
	t.Helper()
	controllertest.Eventually(t, 60*time.Second, nil, func() (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("ipam.cluster.x-k8s.io/v1beta2")
		u.SetKind("IPAddressClaim")
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return false, err.Error()
		}
		ref, _, _ := unstructured.NestedString(u.Object, "status", "addressRef", "name")
		if ref != "" {
			t.Fatalf("the claim beyond the pool got IPAddress %s", ref)
		}
		taken := slices.Contains(u.GetFinalizers(), releaseAddress)
		logged := false
		for _, line := range strings.Split(provider.ReadOutput(), "\n") {
			logged = logged || strings.Contains(line, name) && strings.Contains(line, noAddress)
		}
		return taken && logged, fmt.Sprintf("finalizers %v, provider logged %q for it: %v", u.GetFinalizers(), noAddress, logged)
	})
}

// checkDeleteWebhook: the provider's webhook refuses to delete a pool that
// has addresses (a dry run, after taking the render's
// skip-validate-delete-webhook annotation away: the seed's reason for
// leaving the webhook out, since an uninstall stops at that refusal), and
// admits it with the annotation the render writes.
func checkDeleteWebhook(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	ctx := context.Background()
	pool := &unstructured.Unstructured{}
	pool.SetAPIVersion("ipam.cluster.x-k8s.io/v1alpha2")
	pool.SetKind("InClusterIPPool")
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pool); err != nil {
		t.Fatal(err)
	}
	if _, ok := pool.GetAnnotations()[vpcrender.AnnotationSkipDeleteWebhook]; !ok {
		t.Fatalf("the rendered pool lacks %s", vpcrender.AnnotationSkipDeleteWebhook)
	}
	if err := c.Delete(ctx, pool.DeepCopy(), client.DryRunAll); err != nil {
		t.Errorf("deleting the rendered pool with addresses (dry run): %v", err)
	}
	bare := pool.DeepCopy()
	bare.SetAnnotations(nil)
	if err := c.Update(ctx, bare); err != nil {
		t.Fatal(err)
	}
	err := c.Delete(ctx, bare.DeepCopy(), client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), poolHeld) {
		t.Errorf("deleting a pool with addresses and without the annotation: want the webhook's %q, got %v", poolHeld, err)
	}
	bare.SetAnnotations(pool.GetAnnotations())
	if err := c.Update(ctx, bare); err != nil {
		t.Fatal(err)
	}
}

func deleteEventually(ctx context.Context, c client.Client, o *unstructured.Unstructured) error {
	if err := c.Delete(ctx, o.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot delete %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return nil
}
