package capmoxrender_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// gpuMappings are a cluster's PCI mappings: a100 with two devices on pve1
// and one on pve2, l40s on pve3, and an Intel device on pve1.
func gpuMappings(t *testing.T) []capmoxrender.PCIMapping {
	t.Helper()
	ms, err := capmoxrender.ParsePCIMappings([]byte(`[
	{"id":"a100","map":["node=pve1,path=0000:01:00.0,id=10de:20b5","node=pve1,path=0000:02:00.0,id=10de:20b5","node=pve2,path=0000:01:00.0,id=10de:20b5"]},
	{"id":"l40s","map":["node=pve3,path=0000:41:00.0,id=10de:26b5"]},
	{"id":"arc","map":["node=pve1,path=0000:05:00.0,id=8086:56a0"]}]`))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// nvidiaSchematicID is talostemplate.NVIDIASchematic's ID.
const nvidiaSchematicID = "990731763242a6b3cf735e49d0f550ce4068b4d0e7f4dfbb49a31799b698877e"

// gpuPool is validNodes with maxReplicas 3, the NVIDIA schematic and one
// device of a100 per worker.
func gpuPool() capmoxrender.KubernetesNodes {
	n := validNodes()
	three := int32(3)
	n.Spec.MaxReplicas = &three
	n.Spec.GPUs = []capmoxrender.GPU{{Name: "a100"}}
	n.Spec.Talos.SchematicID = nvidiaSchematicID
	return n
}

// gpuOutcome is what a GPU pool's render decides.
type gpuOutcome struct {
	AllowedNodes []string
	MatchTags    []string
	GPUType      string
	GPUCount     string
	MaxSurge     int64
	// Modules are the kernel modules the workers' Talos config loads.
	Modules []string
}

func outcomeOf(t *testing.T, objs []*unstructured.Unstructured) gpuOutcome {
	t.Helper()
	pmt, md := byKind(objs, "ProxmoxMachineTemplate"), byKind(objs, "MachineDeployment")
	var o gpuOutcome
	o.AllowedNodes, _, _ = unstructured.NestedStringSlice(pmt.Object, "spec", "template", "spec", "allowedNodes")
	o.MatchTags, _, _ = unstructured.NestedStringSlice(pmt.Object, "spec", "template", "spec", "templateSelector", "matchTags")
	o.GPUType, o.GPUCount = md.GetAnnotations()[capmoxrender.CapacityGPUType], md.GetAnnotations()[capmoxrender.CapacityGPUCount]
	o.MaxSurge, _, _ = unstructured.NestedInt64(md.Object, "spec", "strategy", "rollingUpdate", "maxSurge")
	patches, _, _ := unstructured.NestedSlice(byKind(objs, "TalosConfigTemplate").Object, "spec", "template", "spec", "configPatches")
	for _, p := range patches {
		if p := p.(map[string]any); p["path"] == "/machine/kernel" {
			for _, m := range p["value"].(map[string]any)["modules"].([]any) {
				o.Modules = append(o.Modules, m.(map[string]any)["name"].(string))
			}
		}
	}
	return o
}

func TestNodesGPUs(t *testing.T) {
	type mut = func(*capmoxrender.KubernetesNodes, *capmoxrender.Options)
	i32 := func(v int32) *int32 { return &v }
	clusterNodes := func(nodes ...any) *capmoxrender.Objects {
		o := &capmoxrender.Objects{}
		o.Add(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps.cozystack.io/v1alpha1", "kind": "Kubernetes",
			"metadata": map[string]any{"name": "k8s-e2e", "namespace": "tenant-e2e"}, "spec": map[string]any{"proxmox": map[string]any{"allowedNodes": nodes}}}})
		return o
	}
	tags := []string{"cozystack", "talos", "gpu-1x-a100"}
	nvidiaModules := []string{"nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset"}
	cases := map[string]struct {
		reason string
		mutate mut
		want   string // the refusal; "" for an admitted pool
		field  string
		got    gpuOutcome
		warn   string
	}{
		"Accepted": {reason: "the mapping's nodes, its tag, the capacity annotations; no device spare, so no surge", mutate: func(*capmoxrender.KubernetesNodes, *capmoxrender.Options) {},
			got: gpuOutcome{AllowedNodes: []string{"pve1", "pve2"}, MatchTags: tags, GPUType: "nvidia.com/gpu", GPUCount: "1", Modules: nvidiaModules}},
		"Spare": {reason: "the spare devices make the surge", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.MaxReplicas = i32(2) },
			got: gpuOutcome{AllowedNodes: []string{"pve1", "pve2"}, MatchTags: tags, GPUType: "nvidia.com/gpu", GPUCount: "1", MaxSurge: 1, Modules: nvidiaModules}},
		"TooMany": {reason: "three devices hold three workers", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.MaxReplicas = i32(4) },
			field: "maxReplicas", want: "maxReplicas 4: PCI mapping a100 holds 3 device(s) on pve1, pve2, enough for 3 worker(s) of 1 device(s) each: the other workers would find no free device and fail to start; lower maxReplicas to 3, or add devices to the mapping"},
		"TooManyFixed": {reason: "a fixed pool is named by replicas", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.MaxReplicas, n.Spec.Replicas = nil, i32(4)
		}, field: "replicas", want: "replicas 4: PCI mapping a100 holds 3 device(s)"},
		"TwoPerWorker": {reason: "a name listed twice is two devices: only pve1 holds a worker's two", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.GPUs, n.Spec.MaxReplicas = []capmoxrender.GPU{{Name: "a100"}, {Name: "a100"}}, i32(1)
		}, got: gpuOutcome{AllowedNodes: []string{"pve1"}, MatchTags: []string{"cozystack", "talos", "gpu-2x-a100"}, GPUType: "nvidia.com/gpu", GPUCount: "2", Modules: nvidiaModules},
			warn: "gpus: pve2 hold(s) fewer than a worker's 2 device(s) of PCI mapping a100 and are left out of the pool's nodes (pve1)"},
		"TwoPerWorkerTooMany": {reason: "pve1's two devices hold one worker of two", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.GPUs, n.Spec.MaxReplicas = []capmoxrender.GPU{{Name: "a100"}, {Name: "a100"}}, i32(2)
		}, field: "maxReplicas", want: "maxReplicas 2: PCI mapping a100 holds 2 device(s) on pve1, enough for 1 worker(s) of 2 device(s) each"},
		"EmptyName": {reason: "a GPU names its mapping", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.GPUs = []capmoxrender.GPU{{}} },
			field: "gpus[0].name", want: "gpus[0].name is empty: name the Proxmox VE PCI resource mapping"},
		"KubevirtName": {reason: "a kubevirt device name is no mapping id", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.GPUs = []capmoxrender.GPU{{Name: "nvidia.com/GA102GL_A10"}}
		}, field: "gpus[0].name", want: `gpus[0].name is "nvidia.com/GA102GL_A10", which is not a Proxmox VE PCI mapping id`},
		"TwoMappings": {reason: "one mapping per worker", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.GPUs = []capmoxrender.GPU{{Name: "a100"}, {Name: "l40s"}}
		}, field: "gpus[1].name", want: `gpus[1].name is "l40s" and gpus[0].name "a100": a worker's GPUs come from one PCI mapping`},
		"Seventeen": {reason: "hostpci0 to hostpci15", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.GPUs = slices.Repeat([]capmoxrender.GPU{{Name: "a100"}}, 17)
		}, field: "gpus", want: "gpus lists 17 devices, more than a Proxmox VE VM takes (hostpci0 to hostpci15)"},
		"NotAMapping": {reason: "the mapping must exist", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.GPUs = []capmoxrender.GPU{{Name: "h100"}}
		},
			field: "gpus[0].name", want: `gpus[0].name is "h100", which is not among the cluster's PCI mappings (a100, arc, l40s)`},
		"PoolNodes": {reason: "the pool's allowedNodes bound the mapping's nodes", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes, n.Spec.MaxReplicas = []string{"pve2", "pve3"}, i32(1)
		}, got: gpuOutcome{AllowedNodes: []string{"pve2"}, MatchTags: tags, GPUType: "nvidia.com/gpu", GPUCount: "1", Modules: nvidiaModules},
			warn: "gpus: pve3 hold(s) fewer than a worker's 1 device(s) of PCI mapping a100 and are left out of the pool's nodes (pve2)"},
		"PoolNodesWithout": {reason: "no node the pool may use has a device", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes = []string{"pve3"}
		}, field: "gpus", want: "gpus: no node holds a worker's 1 device(s) of PCI mapping a100: PCI mapping a100 has devices on pve1 (2), pve2 (1), and the pool may use pve3 (proxmox.allowedNodes); add devices of a node the pool may use to the mapping, or widen proxmox.allowedNodes"},
		"ClusterNodes": {reason: "without its own, the cluster's allowedNodes bound them", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			o.Clusters, n.Spec.MaxReplicas = clusterNodes("pve2", "pve3"), i32(1)
		}, got: gpuOutcome{AllowedNodes: []string{"pve2"}, MatchTags: tags, GPUType: "nvidia.com/gpu", GPUCount: "1", Modules: nvidiaModules}},
		"ClusterNodesWithout": {reason: "the cluster's nodes hold none", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) { o.Clusters = clusterNodes("pve3") },
			field: "gpus", want: "and the pool may use pve3 (the cluster's proxmox.allowedNodes)"},
		"TenantAccepted": {reason: "the tenant lists the mapping", mutate: func(_ *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			o.PoolTenants = map[string]capmoxrender.PoolTenant{"tenant-e2e": {Name: "e2e", PCIMappings: []string{"l40s", "a100"}}}
		}, got: gpuOutcome{AllowedNodes: []string{"pve1", "pve2"}, MatchTags: tags, GPUType: "nvidia.com/gpu", GPUCount: "1", Modules: nvidiaModules}},
		"TenantLacks": {reason: "its capmox token holds no Mapping.Use on another mapping", mutate: func(_ *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			o.PoolTenants = map[string]capmoxrender.PoolTenant{"tenant-e2e": {Name: "e2e", PCIMappings: []string{"l40s"}}}
		}, field: "gpus[0].name", want: `gpus[0].name is "a100", which tenant "e2e" (proxmox.pool "tenant-e2e") does not list in its pciMappings (l40s): its capmox token holds no Mapping.Use on /mapping/pci/a100, so Proxmox VE refuses the clone; add a100 to the tenant's pciMappings and apply the plan, or name one of its mappings`},
		"NoTenant": {reason: "a pool no tenant owns", mutate: func(_ *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			o.PoolTenants = map[string]capmoxrender.PoolTenant{"other": {Name: "other", PCIMappings: []string{"a100"}}}
		}, field: "gpus[0].name", want: `gpus[0].name is "a100", but proxmox.pool "tenant-e2e" is no tenant's pool in the tenant specification`},
		"GPUTagGiven": {reason: "the pool may list its own GPU tag, as template print's snippet does", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.TemplateTags = []string{"cozystack", "gpu-1x-a100", "talos"}
		}, got: gpuOutcome{AllowedNodes: []string{"pve1", "pve2"}, MatchTags: []string{"cozystack", "gpu-1x-a100", "talos"}, GPUType: "nvidia.com/gpu", GPUCount: "1", Modules: nvidiaModules}},
		"OtherGPUTag": {reason: "a GPU tag of other devices", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.TemplateTags = []string{"cozystack", "gpu-2x-a100"}
		}, field: "proxmox.templateTags[1]", want: `proxmox.templateTags[1] is "gpu-2x-a100", a GPU template's tag, which names other GPUs than the pool's gpus (1 device(s) of PCI mapping a100, tag gpu-1x-a100)`},
		"GPUTagWithoutGPUs": {reason: "a pool without gpus would get the template's devices", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.GPUs, n.Spec.Proxmox.TemplateTags = nil, []string{"gpu-1x-a100", "talos"}
		}, field: "proxmox.templateTags[0]", want: "which names other GPUs than the pool's gpus (none)"},
		"DefaultSchematic": {reason: "NVIDIA devices need NVIDIA's modules, which the chart's schematic lacks", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Talos.SchematicID = ""
		}, field: "talos.schematicID", want: "talos.schematicID is the chart's default schematic (ce4c9805, only siderolabs/qemu-guest-agent), but PCI mapping a100 holds NVIDIA devices"},
		"OtherVendor": {reason: "a device without a known device-plugin resource: no gpu annotations, and a warning", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.GPUs, n.Spec.MaxReplicas = []capmoxrender.GPU{{Name: "arc"}}, i32(1)
		}, got: gpuOutcome{AllowedNodes: []string{"pve1"}, MatchTags: []string{"cozystack", "talos", "gpu-1x-arc"}},
			warn: "gpus: the devices of PCI mapping arc are of PCI vendor(s) 8086, whose device-plugin resource is not known here"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := gpuPool()
			var warnings []string
			o := capmoxrender.Options{PCIMappings: gpuMappings(t), Warn: func(s string) { warnings = append(warnings, s) }}
			tc.mutate(&n, &o)
			objs, err := capmoxrender.RenderNodes(context.Background(), n, o)
			if tc.want != "" {
				var re *capmoxrender.RefusalError
				if !errors.As(err, &re) || re.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s: got %v; want a refusal of %s containing %q", tc.reason, err, tc.field, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.got, outcomeOf(t, objs)); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
			if tc.warn != "" && !slices.ContainsFunc(warnings, func(w string) bool { return strings.HasPrefix(w, tc.warn) }) {
				t.Errorf("%s: warnings %q lack %q", tc.reason, warnings, tc.warn)
			}
		})
	}
}

// TestNodesGPUsStrict: a gpus entry is read strictly: a key it does not
// have is refused by its path, next to the control that parses.
func TestNodesGPUsStrict(t *testing.T) {
	doc := func(gpus string) []byte {
		return []byte("apiVersion: apps.cozystack.io/v1alpha1\nkind: KubernetesNodes\nmetadata: {name: a-b, namespace: tenant-a}\nspec: {cluster: a, gpus: " + gpus + "}\n")
	}
	n, err := capmoxrender.ParseKubernetesNodes(doc("[{name: a100}, {name: a100}]"))
	if err != nil || !cmp.Equal(n.Spec.GPUs, []capmoxrender.GPU{{Name: "a100"}, {Name: "a100"}}) {
		t.Fatalf("the control: %v, %v", n.Spec.GPUs, err)
	}
	for gpus, want := range map[string]string{
		"[{name: a100}, {name: a100, foo: 1}]": "unknown field spec.gpus[1].foo: KubernetesNodes has no such field on the proxmox substrate; remove it or fix its spelling",
		"[{Name: a100}]":                       `unknown field spec.gpus[0].Name: KubernetesNodes has no such field on the proxmox substrate; remove it or fix its spelling (did you mean "name"?)`,
		"[a100]":                               "NodesSpec.gpus of type capmoxrender.GPU",
	} {
		_, err := capmoxrender.ParseKubernetesNodes(doc(gpus))
		if !errors.Is(err, capmoxrender.ErrInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("gpus %s: %v; want %q", gpus, err, want)
		}
	}
}
