package capmoxrender_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// tagGen draws Proxmox tags; a talos-vX tag must name the installed Talos
// release, which TestNodesRefusals covers, and a node tag needs
// proxmox.localTemplates, which TestLocalTemplatesRefusals covers, so
// neither is drawn here.
var tagGen = rapid.StringMatching(`[a-z0-9_][a-z0-9_+.-]{0,12}`).Filter(func(s string) bool {
	_, node := capmox.ParseNodeTag(s)
	return !strings.HasPrefix(s, "talos-v") && !node
})

func ipv4Gen(prefix string) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		return fmt.Sprintf("%s.%d.%d", prefix, rapid.IntRange(0, 255).Draw(t, "c"), rapid.IntRange(1, 254).Draw(t, "d"))
	})
}

func cpuGen() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.Map(rapid.IntRange(1, 128), func(n int) string { return fmt.Sprint(n) }),
		rapid.Map(rapid.IntRange(1, 128000), func(n int) string { return fmt.Sprintf("%dm", n) }),
	)
}

func memoryGen() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.Map(rapid.IntRange(capmoxrender.MinWorkerMemoryMiB, 1<<20), func(n int) string { return fmt.Sprintf("%dMi", n) }),
		rapid.Map(rapid.IntRange(2, 1024), func(n int) string { return fmt.Sprintf("%dG", n) }),
		rapid.Map(rapid.IntRange(1, 1024), func(n int) string { return fmt.Sprintf("%dGi", n) }),
		rapid.Map(rapid.IntRange(capmoxrender.MinWorkerMemoryMiB<<20, 1<<40), func(n int) string { return fmt.Sprint(n) }),
	)
}

// nodesModel is the trivial model: the pool as asked.
type nodesModel struct {
	gen    capmoxrender.Capmox
	nodes  capmoxrender.KubernetesNodes
	lookup *capmoxrender.Objects
	secret string
}

func newNodesModel(t *testing.T) *nodesModel {
	m := &nodesModel{gen: capmoxrender.CapmoxV07, nodes: validNodes(), lookup: networks(t)}
	return m
}

// TestRenderProperties drives random valid inputs through a state machine
// and checks after every step: rendering twice gives the same bytes, every
// capmox and CAPI object passes its real CRD schema, no Secret value of the
// lookup appears in the output, and numCores and memoryMiB are never below
// what was asked.
func TestRenderProperties(t *testing.T) {
	loadSchemas(t)
	rapid.Check(t, func(rt *rapid.T) {
		m := newNodesModel(t)
		k := validCluster()
		rt.Repeat(map[string]func(*rapid.T){
			"generation": func(t *rapid.T) {
				m.gen = rapid.SampledFrom(generations).Draw(t, "gen")
			},
			"size": func(t *rapid.T) {
				m.nodes.Spec.Resources.CPU = q(cpuGen().Draw(t, "cpu"))
				m.nodes.Spec.Resources.Memory = q(memoryGen().Draw(t, "memory"))
			},
			"disk": func(t *rapid.T) {
				m.nodes.Spec.DiskSize = q(diskGen().Draw(t, "disk"))
				m.nodes.Spec.Proxmox.TemplateDiskSize = nil
				if rapid.Bool().Draw(t, "templateKnown") {
					m.nodes.Spec.Proxmox.TemplateDiskSize = q(fmt.Sprintf("%dG", rapid.IntRange(1, 5).Draw(t, "templateG")))
				}
			},
			"instanceType": func(t *rapid.T) {
				m.nodes.Spec.InstanceType = rapid.SampledFrom(keptInstanceTypes()).Draw(t, "instanceType")
				if rapid.Bool().Draw(t, "dropCPU") {
					m.nodes.Spec.Resources.CPU = nil
				}
				if rapid.Bool().Draw(t, "dropMemory") {
					m.nodes.Spec.Resources.Memory = nil
				}
			},
			"tags": func(t *rapid.T) {
				m.nodes.Spec.Proxmox.TemplateTags = rapid.SliceOfNDistinct(tagGen, 1, 6, rapid.ID[string]).Draw(t, "tags")
			},
			"clone": func(t *rapid.T) {
				px := &m.nodes.Spec.Proxmox
				px.Full = rapid.Bool().Draw(t, "full")
				px.Storage, px.Pool = "", rapid.SampledFrom([]string{"tenant-a", "tenant-b"}).Draw(t, "pool")
				if px.Full && rapid.Bool().Draw(t, "storage") {
					px.Storage = "local-zfs"
				}
			},
			"rawNetwork": func(t *rapid.T) {
				nw := capmoxrender.NodeNetwork{Bridge: rapid.StringMatching(`vmbr[0-9]{1,3}`).Draw(t, "bridge")}
				if rapid.Bool().Draw(t, "hasVLAN") {
					v := rapid.IntRange(1, 4094).Draw(t, "vlan")
					nw.VLAN = &v
				}
				if rapid.Bool().Draw(t, "hasMTU") {
					v := rapid.OneOf(rapid.Just(1), rapid.IntRange(1280, 65520)).Draw(t, "mtu")
					nw.MTU = &v
				}
				m.nodes.Spec.Proxmox.Network = nw
				m.nodes.Spec.Proxmox.AdditionalNetworks = nil
			},
			"vpcNetwork": func(t *rapid.T) {
				m.nodes.Spec.Proxmox.Network = capmoxrender.NodeNetwork{VPC: "net", Subnet: "private"}
				m.nodes.Spec.Proxmox.AdditionalNetworks = nil
				// net1 to netK in any order: both capmox generations admit
				// them (v0.8 and later refuse a gap and net10 or beyond).
				for _, i := range rapid.Permutation(rapid.SampledFrom([][]int{nil, {1}, {1, 2}, {1, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}).Draw(t, "extra")).Draw(t, "order") {
					n := capmoxrender.AdditionalNetwork{Name: fmt.Sprintf("net%d", i), VPC: "net", Subnet: "private"}
					m.nodes.Spec.Proxmox.AdditionalNetworks = append(m.nodes.Spec.Proxmox.AdditionalNetworks, n)
				}
			},
			"dns": func(t *rapid.T) {
				dns := rapid.SliceOfNDistinct(ipv4Gen("10.9"), 1, 4, rapid.ID[string]).Draw(t, "dns")
				m.nodes.Spec.Proxmox.DNSServers = dns
				k.Spec.Proxmox.DNSServers = dns
			},
			"pool": func(t *rapid.T) {
				// A pool the IPAM provider admits: every entry inside the
				// first address's subnet 10.0.0.0/prefix, whose gateway
				// 10.0.0.1 is neither its network nor its broadcast address.
				p := rapid.IntRange(8, 30).Draw(t, "prefix")
				host := func(label string) uint32 { return uint32(rapid.IntRange(2, 1<<(32-p)-2).Draw(t, label)) }
				addr := func(v uint32) string { return fmt.Sprintf("10.%d.%d.%d", byte(v>>16), byte(v>>8), byte(v)) }
				bits := rapid.IntRange(p, 32).Draw(t, "bits")
				block := host("block") &^ (1<<(32-bits) - 1)
				first := host("first")
				k.Spec.Proxmox.IPv4Config.Addresses = []string{addr(first)}
				if bits < 32 || block != first {
					k.Spec.Proxmox.IPv4Config.Addresses = append(k.Spec.Proxmox.IPv4Config.Addresses, fmt.Sprintf("%s/%d", addr(block), bits))
				}
				k.Spec.Proxmox.IPv4Config.Prefix = &p
			},
			"secret": func(t *rapid.T) {
				m.secret = rapid.StringMatching(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{12}`).Draw(t, "token")
				m.lookup.Add(&unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "Secret",
					"metadata":   map[string]any{"name": "pve", "namespace": "tenant-e2e"},
					"stringData": map[string]any{"url": "https://pve:8006/api2/json", "token_id": "ccm@pve!ccm", "token_secret": m.secret, "region": "r1"},
				}})
			},
			"": func(t *rapid.T) { m.check(t, k, false) },
		})
		// The cluster render and the schema check (CEL) are the slow parts:
		// once per generated run, on its final state.
		m.check(rt, k, true)
	})
}

// check renders the pool (and, when full, the cluster, and validates both
// against the CRD schemas, which is the slow part) and checks the invariants.
func (m *nodesModel) check(t *rapid.T, k capmoxrender.Kubernetes, full bool) {
	o := capmoxrender.Options{Capmox: m.gen, Guards: m.lookup, Networks: m.lookup}
	ctx := context.Background()
	nodes, err := capmoxrender.RenderNodes(ctx, m.nodes, o)
	if err != nil {
		t.Fatalf("valid pool refused: %v", err)
	}
	all := nodes
	if full {
		cluster, err := capmoxrender.RenderCluster(ctx, k, o)
		if err != nil {
			t.Fatalf("valid cluster refused: %v", err)
		}
		all = append(all, cluster...)
	}
	first := jsonOf(t, all)
	again, _ := capmoxrender.RenderNodes(ctx, m.nodes, o)
	if full {
		againC, _ := capmoxrender.RenderCluster(ctx, k, o)
		again = append(again, againC...)
	}
	second := jsonOf(t, again)
	if !bytes.Equal(first, second) {
		t.Fatalf("two renders of the same input differ")
	}
	if full {
		mustValidateSchema(t, m.gen, all)
	}
	if m.secret != "" && bytes.Contains(first, []byte(m.secret)) {
		t.Fatalf("the token value %q reached a rendered object", m.secret)
	}
	checkSizes(t, nodes[0], m.nodes.Spec)
	checkTemplateNamesAgree(t, nodes)
}

// checkTemplateNamesAgree: the MachineDeployment's configRef, the
// host-entries Job (its name and TCT_NAME) and its Role's resourceNames
// name the one rendered TalosConfigTemplate.
func checkTemplateNamesAgree(t *rapid.T, objs []*unstructured.Unstructured) {
	names := map[string]string{}
	for _, o := range objs {
		switch o.GetKind() {
		case "TalosConfigTemplate":
			names["template"] = o.GetName()
		case "MachineDeployment":
			names["configRef"], _, _ = unstructured.NestedString(o.Object, "spec", "template", "spec", "bootstrap", "configRef", "name")
		case "Job":
			names["job"] = o.GetName()
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, e := range cs[0].(map[string]any)["env"].([]any) {
				if e.(map[string]any)["name"] == "TCT_NAME" {
					names["TCT_NAME"], _ = e.(map[string]any)["value"].(string)
				}
			}
		case "Role":
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			for _, r := range rules {
				if rm := r.(map[string]any); rm["resources"].([]any)[0] == "talosconfigtemplates" {
					names["resourceNames"], _ = rm["resourceNames"].([]any)[0].(string)
				}
			}
		}
	}
	if len(names) != 5 {
		t.Fatalf("want the template, the configRef, the Job, its TCT_NAME and the Role's resourceNames, got %v", names)
	}
	for k, v := range names {
		if v != names["template"] {
			t.Fatalf("the TalosConfigTemplate name must agree everywhere: %s is %q in %v", k, v, names)
		}
	}
}

// diskGen draws disk sizes of at least 5 GiB, binary and decimal.
func diskGen() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.Map(rapid.IntRange(5, 4096), func(n int) string { return fmt.Sprintf("%dGi", n) }),
		rapid.Map(rapid.IntRange(6, 4096), func(n int) string { return fmt.Sprintf("%dG", n) }),
		rapid.Map(rapid.IntRange(5<<10, 4<<20), func(n int) string { return fmt.Sprintf("%dMi", n) }),
	)
}

// keptInstanceTypes are the sizes a Proxmox VM honours (no hugepages).
func keptInstanceTypes() []string {
	var out []string
	for _, n := range capmoxrender.InstanceTypeNames() {
		// Kept: no hugepages, and at least the memory a Talos worker needs.
		t, _ := capmoxrender.LookupInstanceType(n)
		if mem := resource.MustParse(t.Memory); t.Hugepages == "" && mem.Value() >= capmoxrender.MinWorkerMemoryMiB<<20 {
			out = append(out, n)
		}
	}
	return out
}

// checkSizes: numCores, memoryMiB and the boot volume are never below what
// the pool asked, through resources or, per field, its instanceType.
func checkSizes(t *rapid.T, pmt *unstructured.Unstructured, s capmoxrender.NodesSpec) {
	spec := pmt.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	cores, _, _ := unstructured.NestedInt64(spec, "numCores")
	mem, _, _ := unstructured.NestedInt64(spec, "memoryMiB")
	it, _ := capmoxrender.LookupInstanceType(s.InstanceType)
	cpu, memory := resource.MustParse(fmt.Sprint(it.CPU)), resource.MustParse(or(it.Memory, "0"))
	if s.Resources.CPU != nil {
		cpu = resource.MustParse(string(*s.Resources.CPU))
	}
	if s.Resources.Memory != nil {
		memory = resource.MustParse(string(*s.Resources.Memory))
	}
	if new(big.Rat).SetInt64(cores).Cmp(exact(cpu)) < 0 {
		t.Fatalf("numCores %d is below the %s asked", cores, cpu.String())
	}
	if new(big.Rat).SetInt64(mem<<20).Cmp(exact(memory)) < 0 {
		t.Fatalf("memoryMiB %d is below the %s asked", mem, memory.String())
	}
	size, found, _ := unstructured.NestedInt64(spec, "disks", "bootVolume", "sizeGb")
	if s.DiskSize == nil {
		if found {
			t.Fatalf("no diskSize asked, but sizeGb %d rendered", size)
		}
		return
	}
	if disk := resource.MustParse(string(*s.DiskSize)); new(big.Rat).SetInt64(size<<30).Cmp(exact(disk)) < 0 {
		t.Fatalf("sizeGb %d is below the %s asked", size, disk.String())
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// jsonOf is the objects' JSON: deterministic (sorted keys) and cheaper than YAML.
func jsonOf(t *rapid.T, objs []*unstructured.Unstructured) []byte {
	var b bytes.Buffer
	for _, o := range objs {
		j, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatalf("cannot encode %s: %v", o.GetName(), err)
		}
		b.Write(j)
	}
	return b.Bytes()
}
