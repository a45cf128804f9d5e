package lab_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// The GPUs of TestGPUPools: PCI mapping gpuMapping with two NVIDIA A100s on
// each of pve2 and pve3 (none on pve1), and the GPU template built for one
// device of it, on the shared storage, so a clone may target either node.
const (
	gpuMapping  = "a100"
	gpuTemplate = 9400
)

var (
	gpuNodes   = []string{"pve2", "pve3"}
	gpuDevices = []string{
		"node=pve2,path=0000:01:00.0,id=10de:20b5,iommugroup=12",
		"node=pve2,path=0000:41:00.0,id=10de:20b5,iommugroup=40",
		"node=pve3,path=0000:01:00.0,id=10de:20b5,iommugroup=12",
		"node=pve3,path=0000:41:00.0,id=10de:20b5,iommugroup=40",
	}
)

// TestGPUPools: GPU pools end to end, one lab per capmox generation with
// three tenants of the same cluster and pool (testdata's, with gpus:
// [{name: a100}] and the NVIDIA schematic), against the mapping a100 of
// gpuDevices and the GPU template talostemplate.Create builds for it.
//
//   - tenant-demo, granted the mapping (pciMappings), renders with the
//     mappings PVE lists and its tenant: both workers run, each on a node
//     of the mapping with hostpci0: mapping=a100 and a device of its own,
//     and the MachineDeployment carries the autoscaler's gpu-type and
//     gpu-count; no request is denied.
//   - tenant-other, not granted the mapping, renders without the tenant
//     specification (RenderWithoutTenants): with it, the render would
//     refuse the pool first (gpus[0].name, not in the tenant's
//     pciMappings), and this tenant stands for a render that did not
//     have it. Proxmox VE's own check refuses each clone of the GPU
//     template (check_mapping_access: Mapping.Use on /mapping/pci/a100),
//     so no VM is made, no device held and no worker runs.
//   - tenant-big, granted, asks for 5 workers of the 4 devices: Apply
//     refuses by replicas, naming the mapping, before anything is made.
func TestGPUPools(t *testing.T) { eachCapmox(t, gpuPools) }

func gpuPools(t *testing.T, gen capi.Capmox) {
	// A lab of its own: it adds a PCI mapping and a storage to the fake
	// (the shared storage TestCapmoxPoolShapes adds too), and holds every
	// device of the mapping and every request denied to its tenants.
	l := startLab(t, gen)
	tmpl := addGPUs(t, l)
	held := gpuPoolRuns(t, l, tmpl)
	gpuPoolWithoutGrant(t, l, tmpl, held)
	gpuPoolTooBig(t, l, tmpl)
	if u := l.PVE.Unserved(); len(u) > 0 {
		t.Errorf("unserved %v", u)
	}
}

// addGPUs adds the mapping and the shared storage to the fake and builds
// the GPU template, whose configuration it checks.
func addGPUs(t *testing.T, l *lab.Lab) talostemplate.Spec {
	t.Helper()
	must(t, l.PVE.AddPCIMapping(pvefake.PCIMappingSpec{ID: gpuMapping, Description: "NVIDIA A100", Map: gpuDevices}))
	must(t, l.PVE.AddStorage(pvefake.StorageSpec{ID: sharedStorage, Type: "rbd", Content: []string{"images"}, Shared: true}))
	tmpl := createGPUTemplate(t, l)
	gpuTag := capmox.GPUTag(gpuMapping, 1)
	conf, _, ok := l.PVE.VMConfig(gpuTemplate)
	if !ok || !strings.Contains(conf["machine"], talostemplate.GPUMachine) || !strings.Contains(conf["hostpci0"], "mapping="+gpuMapping) ||
		!slices.Contains(strings.Split(conf["tags"], ";"), gpuTag) {
		t.Fatalf("GPU template %d: want a q35 machine, hostpci0 mapping=%s and tag %s: %v", gpuTemplate, gpuMapping, gpuTag, conf)
	}
	return tmpl
}

// gpuPoolRuns applies tenant-demo, granted the mapping, and asserts its
// workers; it returns the devices they hold, by VM.
func gpuPoolRuns(t *testing.T, l *lab.Lab, tmpl talostemplate.Spec) map[int]string {
	t.Helper()
	a, err := l.Apply(context.Background(), gpuTenant(readTenant(t), tmpl, true))
	must(t, err)
	eventually(t, 4*time.Minute, "the GPU pool's workers run", func() (bool, string) {
		running, state := machines(t, l.Client, "tenant-demo")
		return running == 2, fmt.Sprintf("%s\ndenied %v\n%s", state, l.PVE.Denied(), l.Managers.Capmox.Tail(20))
	})
	checkWorkers(t, l, a, demoScope)
	held := checkGPUWorkers(t, l)
	checkGPUCapacity(t, l, "tenant-demo")
	return held
}

// gpuPoolWithoutGrant applies tenant-other, not granted the mapping and
// rendered without the tenant specification, and asserts PVE's refusal
// of its clones: no VM, no device held but tenant-demo's, no worker.
func gpuPoolWithoutGrant(t *testing.T, l *lab.Lab, tmpl talostemplate.Spec, held map[int]string) {
	t.Helper()
	ctx := context.Background()
	other := gpuTenant(otherTenant(t, "tenant-other", "10.0.100.40-10.0.100.49"), tmpl, false)
	other.RenderWithoutTenants = true
	b, err := l.Apply(ctx, other)
	must(t, err)
	clone := regexp.MustCompile(fmt.Sprintf(`/nodes/[^/]+/qemu/%d/clone$`, gpuTemplate))
	eventually(t, 3*time.Minute, "PVE refuses tenant-other's clones of the GPU template", func() (bool, string) {
		denied := l.PVE.Denied()
		return len(denied) >= 2, fmt.Sprintf("denied %v\n%s", denied, l.Managers.Capmox.Tail(20))
	})
	for _, d := range l.PVE.Denied() {
		if d.Method != "POST" || !clone.MatchString(d.Path) {
			t.Errorf("denied %s %s: only tenant-other's clones of the GPU template may be", d.Method, d.Path)
		}
	}
	// What the fake answered those clones: the same request again, with
	// tenant-other's capmox token.
	err = tokenClientIn(t, l, "tenant-other", b.TokenID).Post(ctx, fmt.Sprintf("/nodes/%s/qemu/%d/clone", pvelab.Nodes[0], gpuTemplate),
		map[string]any{"newid": 4242, "pool": "tenant-other", "target": gpuNodes[0]}, nil)
	if want := fmt.Sprintf("Permission check failed (/mapping/pci/%s, Mapping.Use)", gpuMapping); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("tenant-other's clone of the GPU template: %v, want %q", err, want)
	}
	if vms := vmConfigs(l, "tenant-other"); len(vms) > 0 {
		t.Errorf("tenant-other's pool holds VMs without Mapping.Use: %v", vms)
	}
	if running, state := machines(t, l.Client, "tenant-other"); running > 0 {
		t.Errorf("a worker of tenant-other runs without Mapping.Use:\n%s", state)
	}
	if now := heldDevices(l); !mapsEqual(now, held) {
		t.Errorf("devices held %v, want tenant-demo's alone %v", now, held)
	}
}

// gpuPoolTooBig applies tenant-big, granted, whose pool asks for 5
// workers of the mapping's 4 devices: Apply refuses by replicas and
// nothing is made for it.
func gpuPoolTooBig(t *testing.T, l *lab.Lab, tmpl talostemplate.Spec) {
	t.Helper()
	ctx := context.Background()
	before := vmIDs(l)
	big := gpuTenant(otherTenant(t, "tenant-big", "10.0.100.50-10.0.100.59"), tmpl, true)
	big.Pools[0].Spec.Replicas = ptrTo(int32(5))
	_, err := l.Apply(ctx, big)
	var refusal *capmoxrender.RefusalError
	want := fmt.Sprintf("replicas 5: PCI mapping %s holds 4 device(s) on %s", gpuMapping, strings.Join(gpuNodes, ", "))
	if !errors.As(err, &refusal) || refusal.Field != "replicas" || !strings.Contains(err.Error(), want) {
		t.Errorf("Apply of 5 workers of 4 devices: %v, want a refusal by replicas: %q", err, want)
	}
	if after := vmIDs(l); !slices.Equal(after, before) {
		t.Errorf("VMs %v after the refusal, %v before", after, before)
	}
	mds := &unstructured.UnstructuredList{}
	mds.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	mds.SetKind("MachineDeploymentList")
	must(t, l.Client.List(ctx, mds, client.InNamespace("tenant-big")))
	var pools []map[string]any
	must(t, l.PVE.Client().Get(ctx, "/pools", &pools))
	if len(mds.Items) > 0 || slices.ContainsFunc(pools, func(p map[string]any) bool { return p["poolid"] == "tenant-big" }) {
		t.Errorf("the refused tenant-big got %d MachineDeployments, Proxmox pools %v", len(mds.Items), pools)
	}
}

// createGPUTemplate builds gpuTemplate as an operator does with template
// create --nvidia --pci-mapping a100: the lab's Talos release with the
// NVIDIA schematic, hostpci0 of the mapping on a q35 machine, on the
// shared storage.
func createGPUTemplate(t *testing.T, l *lab.Lab) talostemplate.Spec {
	t.Helper()
	schematic, err := talostemplate.NVIDIASchematic().ID()
	must(t, err)
	spec, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: strconv.Itoa(gpuTemplate), Storage: sharedStorage,
		TalosVersion: labTalosVersion, SchematicID: schematic, PCIMappings: []string{gpuMapping}})
	must(t, err)
	res, err := talostemplate.Create(context.Background(), l.PVE.Client(), spec,
		talostemplate.CreateOptions{Node: pvelab.Nodes[0], PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("cannot create the GPU template: %v", err)
	}
	return res.Spec
}

// gpuTenant gives tn's pool one GPU of the mapping per worker, the GPU
// template's schematic and tags, and has the platform's admin grant the
// tenant the template and its storage, and the mapping when granted.
func gpuTenant(tn lab.Tenant, tmpl talostemplate.Spec, granted bool) lab.Tenant {
	p := &tn.Pools[0]
	p.Spec.GPUs = []capmoxrender.GPU{{Name: gpuMapping}}
	p.Spec.Talos.SchematicID = tmpl.SchematicID
	p.Spec.Proxmox.TemplateTags = tmpl.Tags
	tn.Plan = func(pt *tenantplan.Tenant) {
		pt.Templates = append(pt.Templates, gpuTemplate)
		pt.LinkedCloneStorages = append(pt.LinkedCloneStorages, sharedStorage)
		if granted {
			pt.PCIMappings = []string{gpuMapping}
		}
	}
	return tn
}

// checkGPUWorkers asserts each worker VM of tenant-demo on a node of the
// mapping, with hostpci0 of it, holding a device of its own; it returns
// the devices held, by VM.
func checkGPUWorkers(t *testing.T, l *lab.Lab) map[int]string {
	t.Helper()
	held := map[int]string{}
	owner := map[string]int{}
	for _, pm := range proxmoxMachinesList(t, l) {
		conf, node, ok := l.PVE.VMConfig(pm.vmid)
		if !ok {
			t.Errorf("%s: VM %d is not on the fake", pm.name, pm.vmid)
			continue
		}
		devs := l.PVE.VMPCIDevices(pm.vmid)
		switch {
		case !slices.Contains(gpuNodes, node):
			t.Errorf("%s: VM %d is on %s, which holds no device of %s (%v)", pm.name, pm.vmid, node, gpuMapping, gpuNodes)
		case !strings.Contains(conf["hostpci0"], "mapping="+gpuMapping) || !strings.Contains(conf["machine"], talostemplate.GPUMachine):
			t.Errorf("%s: VM %d has hostpci0 %q on machine %q, want mapping=%s on q35", pm.name, pm.vmid, conf["hostpci0"], conf["machine"], gpuMapping)
		case len(devs) != 1 || devs[0].Mapping != gpuMapping || devs[0].Node != node:
			t.Errorf("%s: VM %d on %s holds %+v, want one device of %s there", pm.name, pm.vmid, node, devs, gpuMapping)
		default:
			dev := node + " " + devs[0].Path
			if o, taken := owner[dev]; taken {
				t.Errorf("VMs %d and %d hold the same device %s", o, pm.vmid, dev)
			}
			owner[dev], held[pm.vmid] = pm.vmid, dev
		}
	}
	if len(held) != 2 {
		t.Errorf("%d workers hold a device, want 2: %v", len(held), held)
	}
	return held
}

// checkGPUCapacity asserts the autoscaler's GPU annotations on the
// MachineDeployment of ns.
func checkGPUCapacity(t *testing.T, l *lab.Lab, ns string) {
	t.Helper()
	mds := &unstructured.UnstructuredList{}
	mds.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	mds.SetKind("MachineDeploymentList")
	must(t, l.Client.List(context.Background(), mds, client.InNamespace(ns)))
	if len(mds.Items) != 1 {
		t.Fatalf("%d MachineDeployments in %s, want 1", len(mds.Items), ns)
	}
	ann := mds.Items[0].GetAnnotations()
	if ann[capmoxrender.CapacityGPUType] != "nvidia.com/gpu" || ann[capmoxrender.CapacityGPUCount] != "1" {
		t.Errorf("MachineDeployment %s: gpu-type %q, gpu-count %q, want nvidia.com/gpu and 1", mds.Items[0].GetName(),
			ann[capmoxrender.CapacityGPUType], ann[capmoxrender.CapacityGPUCount])
	}
}

// heldDevices are the PCI devices the fake's VMs hold, by VM.
func heldDevices(l *lab.Lab) map[int]string {
	out := map[int]string{}
	for _, id := range vmIDs(l) {
		for _, d := range l.PVE.VMPCIDevices(id) {
			out[id] = d.Node + " " + d.Path
		}
	}
	return out
}

// vmIDs are the ids of the fake's VMs but the templates (labVMs), sorted.
func vmIDs(l *lab.Lab) []int {
	var out []int
	for _, g := range labVMs(l) {
		out = append(out, g.vmid)
	}
	slices.Sort(out)
	return out
}

// tokenClientIn is a client of the fake with the capmox token id, as
// capmox reads it from its credentials Secret in ns.
func tokenClientIn(t *testing.T, l *lab.Lab, ns, id string) *proxmox.Client {
	t.Helper()
	var secrets corev1.SecretList
	must(t, l.Client.List(context.Background(), &secrets, client.InNamespace(ns)))
	for _, s := range secrets.Items {
		if string(s.Data["token"]) == id {
			return l.PVE.TokenClient(id, string(s.Data["secret"]))
		}
	}
	t.Fatalf("no Secret of %s holds the capmox token %s", ns, id)
	return nil
}
