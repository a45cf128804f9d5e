package liveacl_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// Two tenants with their own capmox tokens and one GPU mapping each; both
// may clone the plain template 9000 and the GPU template 9001, whose
// hostpci0 is alpha's mapping.
const gpuTenants = `tenants:
  - name: alpha
    storage: alpha-disks
    tokens: {capmox: capmox}
    templates: [9000, 9001]
    networks:
      - bridge: vmbr0
        untagged: true
    pciMappings: [gpu-a]
  - name: beta
    storage: beta-disks
    tokens: {capmox: capmox}
    templates: [9000, 9001]
    networks:
      - bridge: vmbr0
        untagged: true
    pciMappings: [gpu-b]
`

// TestTenantPCIMappings applies tenants with PCI mappings to the Proxmox
// API fake and proves through the API that alpha's capmox token sets
// hostpci0: mapping=gpu-a on its clone, clones the GPU template and
// starts the clone with its device, while beta's mapping on alpha's VM
// and beta's clone of alpha's GPU template get qemu-server's 403 on the
// mapping; the audit is clean after apply, and the same grant to beta by
// hand is a ForeignMappingReach.
func TestTenantPCIMappings(t *testing.T) {
	srv := cluster(t)
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "tmpl", Type: "lvmthin", Content: []string{"images"}}))
	must(t, srv.AddPCIMapping(pvefake.PCIMappingSpec{ID: "gpu-a", Map: []string{"node=pve,path=0000:01:00.0,id=10de:2204"}}))
	must(t, srv.AddPCIMapping(pvefake.PCIMappingSpec{ID: "gpu-b", Map: []string{"node=pve,path=0000:02:00.0,id=10de:2204"}}))
	for id, conf := range map[int]map[string]string{
		9000: {"net0": "virtio,bridge=vmbr0"},
		9001: {"net0": "virtio,bridge=vmbr0", "hostpci0": "mapping=gpu-a,pcie=1"},
	} {
		must(t, srv.AddVM(pvefake.VMSpec{VMID: id, Template: true, Tags: []string{"talos"}, Disks: map[string]string{"scsi0": "tmpl:4"}, Config: conf}))
	}
	spec := mustTenants(t, gpuTenants)
	sink := dirSink(t)
	_, err := liveacl.Apply(ctx, srv.Client(), spec, liveacl.WithSecretSink(sink))
	must(t, err)
	capA := srv.TokenClient("alpha@pve!capmox", storedSecret(t, sink, "alpha@pve!capmox"))
	capB := srv.TokenClient("beta@pve!capmox", storedSecret(t, sink, "beta@pve!capmox"))
	full := func(newid int, pool, storage string) map[string]any {
		return map[string]any{"newid": newid, "pool": pool, "full": 1, "storage": storage}
	}
	config := func(vmid int, key, value string) error {
		return capA.Put(ctx, "/nodes/pve/qemu/"+itoa(vmid)+"/config", map[string]any{key: value}, nil)
	}
	checkAPI(t, []apiCheck{
		{"alpha's capmox token clones the plain template", clone(capA, 9000, full(101, "alpha", "alpha-disks")), ""},
		{"it gives its clone its mapping", config(101, "hostpci0", "mapping=gpu-a,pcie=1"), ""},
		{"and the q35 machine a PCI Express device needs", config(101, "machine", "q35"), ""},
		{"not beta's", config(101, "hostpci1", "mapping=gpu-b"), "403 Permission check failed (/mapping/pci/gpu-b, Mapping.Use)"},
		{"it clones the GPU template with the device", clone(capA, 9001, full(102, "alpha", "alpha-disks")), ""},
		{"beta's token may clone the template, but not with alpha's device", clone(capB, 9001, full(201, "beta", "beta-disks")), "403 Permission check failed (/mapping/pci/gpu-a, Mapping.Use)"},
		{"beta's token clones the plain template", clone(capB, 9000, full(202, "beta", "beta-disks")), ""},
		{"and sets its own mapping", capB.Put(ctx, "/nodes/pve/qemu/202/config", map[string]any{"hostpci0": "mapping=gpu-b"}, nil), ""},
		{"not alpha's", capB.Put(ctx, "/nodes/pve/qemu/202/config", map[string]any{"hostpci1": "mapping=gpu-a"}, nil), "403 Permission check failed (/mapping/pci/gpu-a, Mapping.Use)"},
		{"alpha's token starts its clone, which takes gpu-a", taskDone(capA.NodeRef("pve").VirtualMachineRef(101).Start(ctx)), ""},
	})
	if conf, _, _ := srv.VMConfig(102); conf["hostpci0"] != "mapping=gpu-a,pcie=1" {
		t.Errorf("the GPU template's clone holds its device: hostpci0 = %q", conf["hostpci0"])
	}
	if devs := srv.VMPCIDevices(101); len(devs) != 1 || devs[0].Mapping != "gpu-a" || devs[0].Path != "0000:01:00.0" {
		t.Errorf("the started clone holds gpu-a's device: %+v", devs)
	}

	rep := auditLive(t, srv, spec)
	if len(rep.Findings) != 0 {
		t.Fatalf("after apply the audit is clean: %+v", rep.Findings)
	}
	must(t, srv.Client().Put(ctx, "/access/acl", map[string]any{"path": "/mapping/pci/gpu-a", "users": "beta@pve", "tokens": "beta@pve!capmox", "roles": "PVEMappingUser"}, nil))
	checkAPI(t, []apiCheck{
		{"the grant by hand lets beta's token clone alpha's GPU template", clone(capB, 9001, full(203, "beta", "beta-disks")), ""},
	})
	rep = auditLive(t, srv, spec)
	var got []string
	for _, f := range rep.Findings {
		got = append(got, string(f.Code)+" "+f.Subject+" "+f.Path)
	}
	slices.Sort(got)
	want := []string{"ForeignMappingReach beta@pve /mapping/pci/gpu-a", "ForeignMappingReach beta@pve!capmox /mapping/pci/gpu-a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Mapping.Use on alpha's mapping, granted to beta by hand (-want +got):\n%s\n%+v", diff, rep.Findings)
	}
}
