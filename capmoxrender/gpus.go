package capmoxrender

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// GPU is an entry of KubernetesNodes.spec.gpus: one device, per worker, of
// the Proxmox VE PCI resource mapping Name. A name listed twice is two
// devices of the mapping on each worker. The devices come from the Talos
// template, which carries them (hostpciN: mapping=<name>) and the GPU tag
// (capmox.GPUTag) the pool selects it by.
type GPU struct {
	Name string `json:"name"`
}

// PoolTenant is what the render checks of the tenant that owns a Proxmox
// pool (a tenant of pveacl/tenantplan's specification).
type PoolTenant struct {
	// Name is the tenant's name.
	Name string
	// PCIMappings are the tenant's pciMappings: the PCI resource mappings
	// on which its capmox token holds Mapping.Use.
	PCIMappings []string
}

// Capacity annotations of a pool's GPUs (scale from zero): the extended
// resource the device plugin advertises, and how many each worker has.
const (
	CapacityGPUType  = "capacity.cluster-autoscaler.kubernetes.io/gpu-type"
	CapacityGPUCount = "capacity.cluster-autoscaler.kubernetes.io/gpu-count"
)

// gpuResources are the extended resources the vendors' Kubernetes device
// plugins advertise, by PCI vendor id: the cluster autoscaler's
// clusterapi provider gives a node built from the gpu-type annotation
// that resource (gpu-count of it), so a Pod requesting it scales the pool
// from zero.
var gpuResources = map[string]string{
	"10de": "nvidia.com/gpu", // NVIDIA's k8s-device-plugin
	"1002": "amd.com/gpu",    // AMD's k8s-device-plugin
}

// gpuPlan is a pool's GPUs: the mapping, the devices per worker, and the
// extended resource the autoscaler counts ("" when the vendor's is not
// known).
type gpuPlan struct {
	mapping  string
	count    int
	resource string
	// surge is the MachineDeployment's maxSurge: the workers the
	// mapping's spare devices hold.
	surge int32
	// nvidia is true when every device is NVIDIA's (PCI vendor 10de):
	// the workers load NVIDIA's kernel modules.
	nvidia bool
}

// NVIDIAKernelModules are the kernel modules a worker with NVIDIA GPUs
// loads (machine.kernel.modules), and NVIDIASysctls its sysctls, as
// Talos's guide to NVIDIA's proprietary drivers gives them; the Talos
// image carries the modules through the nonfree-kmod-nvidia extension.
var (
	NVIDIAKernelModules = []string{"nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset"}
	NVIDIASysctls       = map[string]string{"net.core.bpf_jit_harden": "1"}
)

// planGPUNames checks the gpus entries, in the chart's order: each names a
// PCI mapping, all the same one, at most capmox.MaxGPUs of them.
func planGPUNames(p *nodesPlan, s NodesSpec, _ Options) error {
	for i, g := range s.GPUs {
		f := fmt.Sprintf("gpus[%d].name", i)
		switch {
		case g.Name == "":
			return refuse(f, "%s is empty: name the Proxmox VE PCI resource mapping (pvesh get /cluster/mapping/pci) whose device each worker gets", f)
		case !capmox.ValidMappingID(g.Name):
			return refuse(f, "%s is %q, which is not a Proxmox VE PCI mapping id (a letter, then one or more letters, digits, - or _): on the proxmox substrate a GPU is a device of a PCI resource mapping", f, g.Name)
		case g.Name != s.GPUs[0].Name:
			return refuse(f, "%s is %q and gpus[0].name %q: a worker's GPUs come from one PCI mapping (its template carries them, and the autoscaler's gpu-type names one kind); list one mapping once per device", f, g.Name, s.GPUs[0].Name)
		}
	}
	if len(s.GPUs) > capmox.MaxGPUs {
		return refuse("gpus", "gpus lists %d devices, more than a Proxmox VE VM takes (hostpci0 to hostpci%d)", len(s.GPUs), capmox.MaxGPUs-1)
	}
	if len(s.GPUs) > 0 {
		p.gpus = &gpuPlan{mapping: s.GPUs[0].Name, count: len(s.GPUs)}
	}
	return nil
}

// planGPUs places a pool with gpus on its mapping's devices: the tenant
// must list the mapping, the mapping must exist, the pool's nodes become
// the mapping's nodes that hold a worker's devices (within the pool's or
// the cluster's allowedNodes), those nodes must hold every worker, and
// the GPU tag joins the template tags. A pool without gpus may not select
// a GPU template.
func planGPUs(ctx context.Context, o Options, p *nodesPlan, s NodesSpec) error {
	if i, bad := capmox.MismatchedGPUTag(p.tags, gpuMapping(p), gpuCount(p)); bad {
		return refuse(fmt.Sprintf("proxmox.templateTags[%d]", i), "proxmox.templateTags[%d] is %q, a GPU template's tag, which names other GPUs than the pool's gpus (%s): the workers would get the template's devices; leave the GPU tag out (the render adds the one of gpus) or fix gpus",
			i, p.tags[i], gpuWords(p))
	}
	if p.gpus == nil {
		return nil
	}
	g := p.gpus
	if err := checkTenantMapping(o, p); err != nil {
		return err
	}
	if o.PCIMappings == nil {
		return refuse("gpus", "gpus needs the Proxmox VE cluster's PCI mappings to place the workers on their devices: pass --pci-mappings FILE (Options.PCIMappings) with the answer of pvesh get /cluster/mapping/pci --output-format json")
	}
	i := slices.IndexFunc(o.PCIMappings, func(m PCIMapping) bool { return m.ID == g.mapping })
	if i < 0 {
		return refuse("gpus[0].name", "gpus[0].name is %q, which is not among the cluster's PCI mappings (%s): create the mapping in Proxmox VE (Datacenter, Resource Mappings) and read the mappings again, or correct the name", g.mapping, pciMappingIDs(o.PCIMappings))
	}
	m := o.PCIMappings[i]
	within, from, err := gpuNodeBounds(ctx, o, *p)
	if err != nil {
		return err
	}
	if err := placeGPUs(o, p, s, m, within, from); err != nil {
		return err
	}
	g.resource = gpuResource(o, m)
	g.nvidia = !slices.ContainsFunc(m.Devices, func(d PCIMappedDevice) bool { return d.Vendor() != "10de" })
	if g.nvidia && p.talos.SchematicID == DefaultTalosSchematicID {
		return refuse("talos.schematicID", "talos.schematicID is the chart's default schematic (%s, only siderolabs/qemu-guest-agent), but PCI mapping %s holds NVIDIA devices, whose kernel modules the workers load: the image has none, so the GPUs stay unusable; build the pool's template with pxsubstrate template create --nvidia and set talos.schematicID to its schematic",
			DefaultTalosSchematicID[:8], m.ID)
	}
	if !slices.Contains(p.tags, capmox.GPUTag(g.mapping, g.count)) {
		p.tags = append(p.tags, capmox.GPUTag(g.mapping, g.count))
	}
	return nil
}

func gpuMapping(p *nodesPlan) string {
	if p.gpus == nil {
		return ""
	}
	return p.gpus.mapping
}

func gpuCount(p *nodesPlan) int {
	if p.gpus == nil {
		return 0
	}
	return p.gpus.count
}

// gpuWords says what the pool's gpus are, for a message.
func gpuWords(p *nodesPlan) string {
	if p.gpus == nil {
		return "none"
	}
	return fmt.Sprintf("%d device(s) of PCI mapping %s, tag %s", p.gpus.count, p.gpus.mapping, capmox.GPUTag(p.gpus.mapping, p.gpus.count))
}

// checkTenantMapping refuses a mapping the pool's tenant does not list
// in its pciMappings, when the tenants are known: its capmox token holds
// no Mapping.Use on it, and PVE refuses the clone.
func checkTenantMapping(o Options, p *nodesPlan) error {
	if o.PoolTenants == nil {
		return nil
	}
	m := p.gpus.mapping
	t, ok := o.PoolTenants[p.pool]
	if !ok {
		return refuse("gpus[0].name", "gpus[0].name is %q, but proxmox.pool %q is no tenant's pool in the tenant specification, so no tenant's pciMappings give a capmox token Mapping.Use on /mapping/pci/%s and Proxmox VE refuses the clone: correct proxmox.pool, or add the pool's tenant with pciMappings: [%s]", m, p.pool, m, m)
	}
	if !slices.Contains(t.PCIMappings, m) {
		listed := "none"
		if len(t.PCIMappings) > 0 {
			listed = strings.Join(t.PCIMappings, ", ")
		}
		return refuse("gpus[0].name", "gpus[0].name is %q, which tenant %q (proxmox.pool %q) does not list in its pciMappings (%s): its capmox token holds no Mapping.Use on /mapping/pci/%s, so Proxmox VE refuses the clone; add %s to the tenant's pciMappings and apply the plan, or name one of its mappings", m, t.Name, p.pool, listed, m, m)
	}
	return nil
}

// gpuNodeBounds are the nodes the pool may use at all: its own
// allowedNodes, else its cluster's (through Options.Clusters), else any
// (nil), and which field bounded them.
func gpuNodeBounds(ctx context.Context, o Options, p nodesPlan) ([]string, string, error) {
	if len(p.allowedNodes) > 0 {
		return p.allowedNodes, "proxmox.allowedNodes", nil
	}
	if o.Clusters == nil {
		o.warnf("gpus: the cluster's allowedNodes are unknown (pass the Kubernetes object %s/%s with --lookup), so the pool's GPU nodes were not checked against them", p.ns, p.cluster)
		return nil, "", nil
	}
	nodes, _, err := o.Clusters.AllowedNodes(ctx, p.ns, p.cluster)
	if err != nil {
		return nil, "", fmt.Errorf("cannot look up Kubernetes %s/%s: %w: %w", p.ns, p.cluster, ErrLookup, err)
	}
	return nodes, "the cluster's proxmox.allowedNodes", nil
}

// placeGPUs narrows the pool to the nodes of mapping m that hold a
// worker's devices, within the bounds, and checks that they hold every
// worker: on each node, capacity is its devices over the devices a
// worker takes, rounded down. The MachineDeployment's maxSurge becomes
// the workers the spare devices hold, so a rolling update never starts a
// worker that finds no free device.
func placeGPUs(o Options, p *nodesPlan, s NodesSpec, m PCIMapping, within []string, from string) error {
	g := p.gpus
	perNode := m.NodeDevices()
	var nodes, left []string
	workers := 0
	for _, n := range slices.Sorted(maps.Keys(perNode)) {
		switch {
		case within != nil && !slices.Contains(within, n):
		case perNode[n] < g.count:
			left = append(left, n)
		default:
			nodes = append(nodes, n)
			workers += perNode[n] / g.count
		}
	}
	for _, n := range within {
		if perNode[n] == 0 {
			left = append(left, n)
		}
	}
	if len(nodes) == 0 {
		why := fmt.Sprintf("PCI mapping %s has devices on %s", m.ID, nodeDevices(perNode))
		if within != nil {
			why += ", and the pool may use " + strings.Join(within, ", ") + " (" + from + ")"
		}
		return refuse("gpus", "gpus: no node holds a worker's %d device(s) of PCI mapping %s: %s; add devices of a node the pool may use to the mapping, or widen %s",
			g.count, m.ID, why, or(from, "the mapping"))
	}
	field := "maxReplicas"
	if s.Replicas != nil {
		field = "replicas"
	}
	if int(p.maxReplicas) > workers {
		return refuse(field, "%s %d: PCI mapping %s holds %d device(s) on %s, enough for %d worker(s) of %d device(s) each: the other workers would find no free device and fail to start; lower %s to %d, or add devices to the mapping",
			field, p.maxReplicas, m.ID, deviceTotal(perNode, nodes), strings.Join(nodes, ", "), workers, g.count, field, workers)
	}
	if len(left) > 0 {
		o.warnf("gpus: %s hold(s) fewer than a worker's %d device(s) of PCI mapping %s and are left out of the pool's nodes (%s)",
			strings.Join(left, ", "), g.count, m.ID, strings.Join(nodes, ", "))
	}
	g.surge = min(p.maxReplicas, int32(workers)-p.maxReplicas)
	p.allowedNodes = nodes
	return nil
}

// gpuResource is the extended resource the mapping's devices are
// advertised as, "" (with a warning) when their vendor's is not known or
// the devices are of several vendors.
func gpuResource(o Options, m PCIMapping) string {
	vendors := map[string]bool{}
	for _, d := range m.Devices {
		vendors[d.Vendor()] = true
	}
	if len(vendors) == 1 {
		for v := range vendors {
			if r, ok := gpuResources[v]; ok {
				return r
			}
		}
	}
	o.warnf("gpus: the devices of PCI mapping %s are of PCI vendor(s) %s, whose device-plugin resource is not known here (10de: nvidia.com/gpu, 1002: amd.com/gpu), so the pool carries no %s and the autoscaler cannot scale it from zero for Pods that request them",
		m.ID, strings.Join(slices.Sorted(maps.Keys(vendors)), ", "), CapacityGPUType)
	return ""
}

// gpuCapacity adds the GPU capacity annotations of a pool whose devices'
// resource is known.
func gpuCapacity(p nodesPlan, out map[string]string) {
	if p.gpus == nil || p.gpus.resource == "" {
		return
	}
	out[CapacityGPUType] = p.gpus.resource
	out[CapacityGPUCount] = strconv.Itoa(p.gpus.count)
}

func nodeDevices(perNode map[string]int) string {
	parts := make([]string, 0, len(perNode))
	for _, n := range slices.Sorted(maps.Keys(perNode)) {
		parts = append(parts, fmt.Sprintf("%s (%d)", n, perNode[n]))
	}
	return strings.Join(parts, ", ")
}

func deviceTotal(perNode map[string]int, nodes []string) int {
	n := 0
	for _, node := range nodes {
		n += perNode[node]
	}
	return n
}
