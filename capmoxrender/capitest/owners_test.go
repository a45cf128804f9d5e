package capitest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender/internal/scenario"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
)

// managerOf is the capmox manager that reads a render generation.
var managerOf = map[capmoxrender.Capmox]capi.Capmox{capmoxrender.CapmoxV08: capi.CapmoxV09, capmoxrender.CapmoxV07: capi.CapmoxV07}

// owners is an API server with every owner of what we render running:
// Cluster API core, the IPAM provider, the Talos bootstrap provider and
// capmox of one generation, each with its webhooks.
type owners struct {
	gen capmoxrender.Capmox
	cfg *rest.Config
	c   client.Client
}

// startOwners starts the API server and the managers of gen for t (each
// capmox in a network namespace of its own, so the generations run at
// once).
func startOwners(t *testing.T, gen capmoxrender.Capmox) *owners {
	t.Helper()
	env, err := testenv.Environment(testenv.APIServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: standIns()}); err != nil {
		t.Fatal(err)
	}
	capi.StartT(t, cfg, capi.Options{CAPI: true, IPAM: true, CABPT: true, Capmox: managerOf[gen]})
	fast := rest.CopyConfig(cfg)
	fast.QPS, fast.Burst = 200, 400
	c, err := client.New(fast, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &owners{gen: gen, cfg: cfg, c: c}
}

// TestOwnersAdmit: what we render is what its owners admit, for both
// capmox generations, each with its own capmox manager (v0.9.0 for the
// v0.8+ render, v0.7.2 for the v0.7 one):
//
//   - Scenarios: every golden scenario is created with the webhooks of
//     Cluster API, the IPAM provider, CABPT and capmox live (the
//     ProxmoxCluster and ProxmoxMachineTemplate through capmox's), the
//     InClusterIPPool capmox makes from each cluster's pools through the
//     IPAM provider's, and Cluster API then makes each pool's Machines,
//     whose ProxmoxMachines pass capmox's ProxmoxMachine webhook, with its
//     defaults (on v0.9.0 net0 is defaultIPv4, so a VPC pool's net0 must
//     carry the subnet's pool in our annotation and no pool of its own).
//   - NICGapRefused, the control: a template with a gap in its NIC names
//     is admitted, and capmox v0.9.0 refuses the machine made from it.
//   - Drawn: random pools and clusters, and whatever the render admits
//     (TestOwnersAdmitDrawn's generator), the owners admit too.
func TestOwnersAdmit(t *testing.T) {
	t.Parallel()
	for _, gen := range generations {
		t.Run(string(gen), func(t *testing.T) {
			t.Parallel()
			o := startOwners(t, gen)
			t.Run("Scenarios", o.scenarios)
			if gen == capmoxrender.CapmoxV08 {
				t.Run("NICGapRefused", o.nicGapRefused)
			}
			t.Run("Drawn", o.drawn)
		})
	}
}

func (o *owners) scenarios(t *testing.T) {
	all := loadScenarios(t)
	for _, s := range all {
		ns := "owners-" + nsName(o.gen, s)
		objs := scenario.RenderT(t, s, o.gen)
		if !isNodes(s) {
			relocate(objs, ns)
			create(t, o.c, ns, objs)
			o.pools(t, objs)
			continue
		}
		cluster := clusterFor(t, s, all, o.gen)
		relocate(cluster, ns)
		relocate(objs, ns)
		create(t, o.c, ns, append(cluster, objs...))
		o.pools(t, cluster)
		playKamaji(t, o.c, only(t, cluster, "KamajiControlPlane"))
		for _, md := range kinds(objs, "MachineDeployment") {
			o.machinesAdmitted(t, md, objs, isSentinel(cluster))
		}
	}
}

// pools creates the InClusterIPPools capmox makes from a rendered
// ProxmoxCluster's ipv4Config and ipv6Config, with the spec capmox gives
// them, through the IPAM provider's webhook.
func (o *owners) pools(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, pc := range kinds(objs, capmox.KindProxmoxCluster) {
		for _, err := range poolsOf(o, pc) {
			t.Errorf("the IPAM provider refuses a pool capmox makes of %s %s: %v", pc.GetKind(), pc.GetName(), err)
		}
	}
}

// machinesAdmitted waits for the ProxmoxMachines Cluster API makes from a
// pool's template through capmox's webhook, and checks capmox's defaults.
func (o *owners) machinesAdmitted(t *testing.T, md *unstructured.Unstructured, objs []*unstructured.Unstructured, sentinel bool) {
	t.Helper()
	ns, want := md.GetNamespace(), wantReplicas(t, md)
	pmt, _ := templateNames(t, md)
	tmpl := byName(t, objs, capmox.KindProxmoxMachineTemplate, pmt)
	var machines []unstructured.Unstructured
	eventually(t, fmt.Sprintf("%d ProxmoxMachines of %s admitted by capmox", want, md.GetName()), func() (bool, string) {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(tmpl.GetAPIVersion())
		l.SetKind("ProxmoxMachineList")
		if err := o.c.List(context.Background(), l, client.InNamespace(ns), client.MatchingLabels{mdLabel: md.GetName()}); err != nil {
			t.Fatal(err)
		}
		machines = l.Items
		sets := list(t, o.c, "MachineSet", ns, map[string]string{mdLabel: md.GetName()})
		var conds []any
		for _, s := range sets {
			c, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
			conds = append(conds, c...)
		}
		return int64(len(machines)) == want, fmt.Sprintf("%d ProxmoxMachines; MachineSet conditions %v", len(machines), conds)
	})
	if o.gen != capmoxrender.CapmoxV08 {
		return
	}
	for _, m := range machines {
		checkVPCNet0(t, &m, sentinel)
	}
}

// checkVPCNet0: on capmox v0.9.0 the webhook has marked net0 defaultIPv4,
// so net0 claims from the cluster's pool. When that pool is a VPC
// sentinel (one address, the gateway), the machine must carry the subnet's
// pool in capmox.AnnotationNet0Pool (the controller's cue) and list no
// pool on net0 (it would get a second address); a render that left net0's
// address to the sentinel, as it did before, fails here.
func checkVPCNet0(t *testing.T, m *unstructured.Unstructured, sentinel bool) {
	t.Helper()
	devices, _, _ := unstructured.NestedSlice(m.Object, "spec", "network", "networkDevices")
	for _, d := range devices {
		dev, _ := d.(map[string]any)
		if dev["name"] != "net0" {
			continue
		}
		if dev["defaultIPv4"] != true {
			t.Errorf("ProxmoxMachine %s: capmox did not mark net0 defaultIPv4: %v", m.GetName(), dev)
		}
		pool := m.GetAnnotations()[capmox.AnnotationNet0Pool]
		if sentinel && pool == "" {
			t.Errorf("ProxmoxMachine %s: net0 claims from the cluster's sentinel pool, which hands out nothing, and no %s names the subnet's pool", m.GetName(), capmox.AnnotationNet0Pool)
		}
		if _, refs := dev["ipPoolRef"]; refs && pool != "" {
			t.Errorf("ProxmoxMachine %s: net0 on a VPC subnet lists a pool of its own besides the cluster's: %v", m.GetName(), dev)
		}
	}
}

// isSentinel says whether a rendered ProxmoxCluster's IPv4 pool is the VPC
// sentinel: one address, which is its gateway.
func isSentinel(cluster []*unstructured.Unstructured) bool {
	for _, pc := range kinds(cluster, capmox.KindProxmoxCluster) {
		addrs, _, _ := unstructured.NestedStringSlice(pc.Object, "spec", "ipv4Config", "addresses")
		gw, _, _ := unstructured.NestedString(pc.Object, "spec", "ipv4Config", "gateway")
		return len(addrs) == 1 && addrs[0] == gw
	}
	return false
}

// nicGapRefused: a template whose NICs are net0 and net2 is admitted by
// capmox v0.9.0's template webhook, and a machine made from it is refused
// by its machine webhook ("Non-consecutive proxmox interface name"): the
// check the render makes (capmoxrender's consecutiveNICs) is capmox's own.
func (o *owners) nicGapRefused(t *testing.T) {
	ctx := context.Background()
	ns := "owners-nic-gap"
	if err := o.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	spec := map[string]any{
		"numSockets": int64(1), "numCores": int64(1), "memoryMiB": int64(2048), "full": false,
		"templateSelector": map[string]any{"matchTags": []any{"talos"}},
		"network": map[string]any{"networkDevices": []any{
			map[string]any{"name": "net0", "bridge": "vmbr0", "model": "virtio"},
			map[string]any{"name": "net2", "bridge": "vmbr1", "model": "virtio"},
		}},
	}
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": capmox.Group + "/v1alpha2", "kind": capmox.KindProxmoxMachineTemplate,
		"metadata": map[string]any{"namespace": ns, "name": "gap"},
		"spec":     map[string]any{"template": map[string]any{"spec": spec}},
	}}
	if err := o.c.Create(ctx, tmpl); err != nil {
		t.Fatalf("capmox's template webhook refused the NIC gap too: %v", err)
	}
	m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": capmox.Group + "/v1alpha2", "kind": capmox.KindProxmoxMachine,
		"metadata": map[string]any{"namespace": ns, "name": "gap-0"}, "spec": spec,
	}}
	err := o.c.Create(ctx, m)
	if err == nil || !strings.Contains(err.Error(), "Non-consecutive proxmox interface name") {
		t.Fatalf("capmox v0.9.0 admitted a machine with a NIC gap: %v", err)
	}
	spec["network"].(map[string]any)["networkDevices"].([]any)[1].(map[string]any)["name"] = "net1"
	m.SetName("consecutive-0")
	if err := o.c.Create(ctx, m); err != nil {
		t.Fatalf("control: net0 and net1 refused: %v", err)
	}
}
