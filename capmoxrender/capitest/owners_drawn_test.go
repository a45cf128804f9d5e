package capitest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// drawnInputs is how many inputs Drawn draws per capmox generation.
const drawnInputs = 60

// drawn is a Kubernetes and a KubernetesNodes of one tenant, drawn near the
// edges the owners judge: pools of addresses and gateways, NIC names,
// MTUs, VLANs, timeouts, percentages, reservations, mirrors, pool ids,
// GPUs of a PCI mapping.
type drawn struct {
	Cluster capmoxrender.Kubernetes
	Pool    capmoxrender.KubernetesNodes
}

func drawnGen() *rapid.Generator[drawn] {
	return rapid.Custom(func(t *rapid.T) drawn {
		// The namespace of the nodes-vpc scenario, whose lookup knows the
		// Proxmox-backed subnets "private" and "data" of VPC "net".
		ns := "tenant-test"
		k := capmoxrender.Kubernetes{Name: "d", Namespace: ns, Spec: capmoxrender.KubernetesSpec{Substrate: "proxmox", Version: "v1.35.2"}}
		px := &k.Spec.Proxmox
		px.DNSServers = []string{"10.0.0.53"}
		px.CCM.CredentialsSecretName = "pve-ccm"
		px.CSI.Enabled = new(bool)
		px.IPv4Config = drawPool(t)
		if rapid.IntRange(0, 3).Draw(t, "dual") == 0 {
			px.IPv6Config = drawPool6(t)
		}
		px.AllowedNodes = pick(t, "allowedNodes", [][]string{nil, {"pve1"}, {"pve1", "pve-3"}}, [][]string{{"pve1,pve2"}, {"pve_4"}})
		if rapid.Bool().Draw(t, "hints") {
			v := pick(t, "memoryAdjustment", []int64{0, 100, 150, 400}, []int64{-1})
			px.SchedulerHints = &capmoxrender.SchedulerHints{MemoryAdjustment: &v}
		}
		return drawn{Cluster: k, Pool: drawPoolNodes(t, ns)}
	})
}

// pick draws from good, or, one time in twenty-four, from edge: values near or
// past what the owners take, so that most inputs render and some are
// judged at the edge.
func pick[V any](t *rapid.T, label string, good, edge []V) V {
	if len(edge) > 0 && rapid.IntRange(0, 23).Draw(t, label+"Edge") == 13 { // rapid leans to the ends of a range
		return rapid.SampledFrom(edge).Draw(t, label)
	}
	return rapid.SampledFrom(good).Draw(t, label)
}

// drawPool draws an IPv4 pool near the IPAM provider's rules: entries
// inside or across the first one's subnet, gateways inside, outside or on
// the subnet's edges.
func drawPool(t *rapid.T) capmoxrender.IPConfig {
	p := pick(t, "prefix", []int{16, 22, 24}, []int{25, 28, 30, 31, 32})
	entries := rapid.SliceOfNDistinct(pick(t, "entries", []*rapid.Generator[string]{
		rapid.SampledFrom([]string{"10.0.0.20-10.0.0.29", "10.0.0.40", "10.0.0.64/28", "10.0.0.200-10.0.0.201"}),
	}, []*rapid.Generator[string]{
		rapid.SampledFrom([]string{"10.0.0.250-10.0.1.5", "10.0.3.0/30", "10.0.0.50 - 10.0.0.60"}),
	}), 1, 3, rapid.ID[string]).Draw(t, "addresses")
	gw := pick(t, "gateway", []string{"10.0.0.1", "10.0.0.254"}, []string{"10.0.0.0", "10.0.0.255", "10.0.1.1", "10.0.3.1"})
	return capmoxrender.IPConfig{Addresses: entries, Prefix: &p, Gateway: gw}
}

func drawPool6(t *rapid.T) capmoxrender.IPConfig {
	p := pick(t, "prefix6", []int{64, 120}, []int{128})
	return capmoxrender.IPConfig{Addresses: []string{pick(t, "v6", []string{"fd00::10-fd00::20", "fd00::30"}, []string{"fd00::/124", "fd01::5"})},
		Prefix: &p, Gateway: pick(t, "gw6", []string{"fd00::1"}, []string{"fd01::1", ""})}
}

func drawPoolNodes(t *rapid.T, ns string) capmoxrender.KubernetesNodes {
	n := capmoxrender.KubernetesNodes{Name: "d-workers", Namespace: ns, Spec: capmoxrender.NodesSpec{Cluster: "d", Substrate: "proxmox"}}
	s := &n.Spec
	q := func(v string) *capmoxrender.Quantity { x := capmoxrender.Quantity(v); return &x }
	s.Resources = capmoxrender.Resources{CPU: q(rapid.SampledFrom([]string{"1", "500m", "2500m", "4"}).Draw(t, "cpu")),
		Memory: q(rapid.SampledFrom([]string{"1Gi", "2G", "3Gi", "8Gi"}).Draw(t, "memory"))}
	if rapid.Bool().Draw(t, "fixed") {
		r := int32(pick(t, "replicas", []int{1, 2, 3}, []int{0}))
		s.Replicas = &r
	} else {
		minR := int32(pick(t, "min", []int{0, 1}, []int{3}))
		maxR := int32(pick(t, "max", []int{3, 5}, []int{0, 1}))
		s.MinReplicas, s.MaxReplicas = &minR, &maxR
	}
	if rapid.Bool().Draw(t, "disk") {
		s.DiskSize = q(pick(t, "diskSize", []string{"20Gi", "64G"}, []string{"4Gi", "5Gi"}))
	}
	s.NodeStartupTimeout = pick(t, "startup", []string{"", "30s", "5m", "1h30m"}, []string{"29s"})
	s.MaxUnhealthy = q(pick(t, "maxUnhealthy", []string{"50%", "0", "100%", "150%", "3"}, []string{"99999999999999999999%"}))
	s.Roles = rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"ingress-nginx", "storage", "gpu"}), 0, 2, rapid.ID[string]).Draw(t, "roles")
	if rapid.Bool().Draw(t, "kubelet") {
		s.Kubelet = capmoxrender.Kubelet{SystemReservedMemory: q(rapid.SampledFrom([]string{"256Mi", "1Gi"}).Draw(t, "sysMem"))}
		ev := pick(t, "eviction", [][2]string{{"5%", "10%"}, {"500Mi", "1Gi"}}, [][2]string{{"5%", "1Gi"}, {"12%", "10%"}})
		s.Kubelet.EvictionHardMemory, s.Kubelet.EvictionSoftMemory = q(ev[0]), q(ev[1])
	}
	if rapid.Bool().Draw(t, "mirrors") {
		s.Talos.RegistryMirrors = map[string]capmoxrender.RegistryMirror{"ghcr.io": {Endpoints: []string{"https://mirror.local/v2"}}}
	}
	px := &s.Proxmox
	px.TemplateTags = []string{"cozystack", "talos"}
	px.DNSServers = []string{"10.0.0.53"}
	px.Pool = pick(t, "pool", []string{"tenant-drawn", "tenants/drawn"}, []string{"tenant drawn", "pool,x"})
	px.Full = rapid.Bool().Draw(t, "full")
	vlan := pick(t, "vlan", []int{0, 1, 100, 4094}, []int{4095})
	mtu := pick(t, "mtu", []int{0, 1, 1280, 1500, 9000}, []int{1279, 65521})
	px.Network = capmoxrender.NodeNetwork{Bridge: pick(t, "bridge", []string{"vmbr0", "vmbr1"}, []string{"vmbr0,tag=5"})}
	if vlan > 0 {
		px.Network.VLAN = &vlan
	}
	if mtu > 0 {
		px.Network.MTU = &mtu
	}
	px.AllowedNodes = pick(t, "poolNodes", [][]string{nil, {"pve1"}, {"pve1", "pve2"}}, [][]string{{"pve_4"}})
	if rapid.IntRange(0, 2).Draw(t, "gpu") == 1 {
		// drawnMappings' a100: GPU workers of one or two devices.
		s.GPUs = slices.Repeat([]capmoxrender.GPU{{Name: "a100"}}, rapid.IntRange(1, 2).Draw(t, "gpus"))
		s.Talos.SchematicID = nvidiaSchematicID
	}
	if rapid.IntRange(0, 2).Draw(t, "vpc") == 1 {
		px.Network = capmoxrender.NodeNetwork{VPC: "net", Subnet: "private"}
		// A gap, and net10, as often as the names capmox admits.
		names := rapid.SampledFrom([][]int{nil, {1}, {2, 1}, {2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}).Draw(t, "nics")
		for _, i := range names {
			px.AdditionalNetworks = append(px.AdditionalNetworks, capmoxrender.AdditionalNetwork{Name: fmt.Sprintf("net%d", i), VPC: "net", Subnet: rapid.SampledFrom([]string{"private", "data"}).Draw(t, "subnet")})
		}
	}
	return n
}

// nvidiaSchematicID is talostemplate.NVIDIASchematic's ID, which a pool
// of NVIDIA GPUs installs.
const nvidiaSchematicID = "990731763242a6b3cf735e49d0f550ce4068b4d0e7f4dfbb49a31799b698877e"

// drawnMappings are the PCI mappings drawn GPU pools name: a100 with four
// devices on pve1 and two on pve2.
var drawnMappings = func() []capmoxrender.PCIMapping {
	ms, err := capmoxrender.ParsePCIMappings([]byte(`[{"id":"a100","map":[
	"node=pve1,path=0000:01:00.0,id=10de:20b5","node=pve1,path=0000:02:00.0,id=10de:20b5",
	"node=pve1,path=0000:41:00.0,id=10de:20b5","node=pve1,path=0000:42:00.0,id=10de:20b5",
	"node=pve2,path=0000:01:00.0,id=10de:20b5","node=pve2,path=0000:02:00.0,id=10de:20b5"]}]`))
	if err != nil {
		panic(err)
	}
	return ms
}()

// drawn: the render of each drawn input is created with the owners live,
// with a ProxmoxMachine of the pool's template (as Cluster API makes it)
// and the InClusterIPPools capmox makes from the cluster; whatever the
// render admits must be admitted. At least some inputs must render, or
// the generator tests nothing.
func (o *owners) drawn(t *testing.T) {
	gen := drawnGen()
	var lookup *capmoxrender.Objects
	for _, s := range loadScenarios(t) {
		if s.Name == "nodes-vpc" {
			lookup = s.Lookup
		}
	}
	rendered, gpus := 0, 0
	for i := range drawnInputs {
		in := gen.Example(i)
		ctx := context.Background()
		opts := capmoxrender.Options{Capmox: o.gen, Networks: lookup, PCIMappings: drawnMappings}
		cluster, err := capmoxrender.RenderCluster(ctx, in.Cluster, opts)
		if err != nil {
			continue
		}
		pool, err := capmoxrender.RenderNodes(ctx, in.Pool, opts)
		if err != nil {
			continue
		}
		rendered++
		if len(in.Pool.Spec.GPUs) > 0 {
			gpus++
		}
		ns := fmt.Sprintf("drawn-%d", i)
		all := append(cluster, pool...)
		relocate(all, ns)
		if err := o.createDrawn(ns, all); err != nil {
			raw, _ := yaml.Marshal(in)
			t.Errorf("input %d renders, and an owner refuses it: %v\n%s", i, err, raw)
		}
	}
	if rendered < drawnInputs/4 || gpus == 0 {
		t.Fatalf("only %d of %d drawn inputs rendered, %d of them GPU pools: the generator tests too little", rendered, drawnInputs, gpus)
	}
	t.Logf("%d of %d drawn inputs rendered (%d GPU pools), and their owners admitted them", rendered, drawnInputs, gpus)
}

// createDrawn creates objs in ns, a ProxmoxMachine of each machine
// template and the pools of each ProxmoxCluster, and joins the refusals.
func (o *owners) createDrawn(ns string, objs []*unstructured.Unstructured) error {
	ctx := context.Background()
	if err := o.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	var errs []error
	for _, u := range objs {
		if err := o.c.Create(ctx, u.DeepCopy()); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err))
		}
		switch u.GetKind() {
		case capmox.KindProxmoxMachineTemplate:
			errs = append(errs, o.c.Create(ctx, machineOf(u)))
		case capmox.KindProxmoxCluster:
			errs = append(errs, poolsOf(o, u)...)
		}
	}
	return errors.Join(errs...)
}

// machineOf is the ProxmoxMachine Cluster API makes of a template: its
// metadata's labels and annotations and its spec.
func machineOf(tmpl *unstructured.Unstructured) *unstructured.Unstructured {
	spec, _, _ := unstructured.NestedMap(tmpl.Object, "spec", "template", "spec")
	m := &unstructured.Unstructured{Object: map[string]any{"apiVersion": tmpl.GetAPIVersion(), "kind": capmox.KindProxmoxMachine, "spec": spec}}
	m.SetNamespace(tmpl.GetNamespace())
	m.SetName(strings.TrimSuffix(tmpl.GetName(), "-") + "-m0")
	ann, _, _ := unstructured.NestedStringMap(tmpl.Object, "spec", "template", "metadata", "annotations")
	m.SetAnnotations(ann)
	return m
}

// poolsOf creates the InClusterIPPools capmox makes of a ProxmoxCluster.
func poolsOf(o *owners, pc *unstructured.Unstructured) []error {
	var errs []error
	for _, family := range []string{"ipv4Config", "ipv6Config"} {
		cfg, ok, _ := unstructured.NestedMap(pc.Object, "spec", family)
		if !ok {
			continue
		}
		pool := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ipam.cluster.x-k8s.io/v1alpha2", "kind": capmox.KindInClusterIPPool,
			"metadata": map[string]any{"namespace": pc.GetNamespace(), "name": pc.GetName() + "-" + strings.ToLower(family)},
			"spec":     map[string]any{"addresses": cfg["addresses"], "prefix": cfg["prefix"], "gateway": cfg["gateway"]},
		}}
		if err := o.c.Create(context.Background(), pool); err != nil {
			errs = append(errs, fmt.Errorf("the pool capmox makes of %s: %w", family, err))
		}
	}
	return errs
}
