package pvefake_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// startVM starts a guest and returns the start's failure, if any.
func startVM(c *proxmox.Client, node string, vmid int) error {
	return wait(c.NodeRef(node).VirtualMachineRef(vmid).Start(ctx))
}

func stopVM(c *proxmox.Client, node string, vmid int) error {
	return wait(c.NodeRef(node).VirtualMachineRef(vmid).Stop(ctx))
}

// held returns the paths of the devices a guest holds.
func held(srv *pvefake.Server, vmid int) string {
	var out []string
	for _, d := range srv.VMPCIDevices(vmid) {
		out = append(out, d.Key+"="+d.Path)
	}
	return strings.Join(out, " ")
}

// TestPCIStart: a start takes the guest's devices as qemu-server's
// vm_start does: a mapping's device on the guest's node, the first free
// one of several; a device another running guest holds fails the start
// (a qmstart task that fails with qemu-server's message) and a stop frees
// it.
func TestPCIStart(t *testing.T) {
	srv, root := start(t, pvefake.WithNodes("pve", "pve2"))
	seedGPU(t, srv)
	must(t, srv.AddPCIMapping(pvefake.PCIMappingSpec{ID: "nic", Map: []string{"node=pve,path=0000:03:00.0,id=8086:1521"}}))
	for id := 100; id <= 102; id++ {
		must(t, srv.AddVM(pvefake.VMSpec{VMID: id, Config: map[string]string{"hostpci0": "mapping=gpu,pcie=1", "machine": "q35"}}))
	}
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 103, Config: map[string]string{"hostpci0": "mapping=nic"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 104, Config: map[string]string{"hostpci3": "mapping=nic"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 105, Node: "pve2", Config: map[string]string{"hostpci0": "mapping=nic"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 106, Config: map[string]string{"hostpci0": "mapping=nope"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 107, Config: map[string]string{"hostpci0": "03:00"}}))

	steps := []struct {
		reason string
		do     func() error
		want   string
		held   map[int]string
	}{
		{"the first guest takes the first device", func() error { return startVM(root, "pve", 100) }, "",
			map[int]string{100: "hostpci0=0000:01:00.0"}},
		{"the second the free one", func() error { return startVM(root, "pve", 101) }, "",
			map[int]string{100: "hostpci0=0000:01:00.0", 101: "hostpci0=0000:02:00.0"}},
		{"a third finds none", func() error { return startVM(root, "pve", 102) }, "task failed: could not find a free device for 'hostpci0'",
			map[int]string{102: ""}},
		{"a stop frees the device", func() error { return stopVM(root, "pve", 100) }, "", map[int]string{100: ""}},
		{"which the third takes", func() error { return startVM(root, "pve", 102) }, "", map[int]string{102: "hostpci0=0000:01:00.0"}},
		{"a mapping of one device", func() error { return startVM(root, "pve", 103) }, "", map[int]string{103: "hostpci0=0000:03:00.0"}},
		{"is held by one guest", func() error { return startVM(root, "pve", 104) }, "task failed: PCI device '0000:03:00.0' already in use by VMID '103'",
			map[int]string{104: ""}},
		{"a host device overlapping it as well (the whole device 03:00)", func() error { return startVM(root, "pve", 107) },
			"task failed: PCI device '0000:03:00.0' already in use by VMID '103'", nil},
		{"no item for the node", func() error { return startVM(root, "pve2", 105) }, "task failed: PCI device mapping not found for 'nic'", nil},
		{"no such mapping", func() error { return startVM(root, "pve", 106) }, "task failed: PCI device mapping not found for 'nope'", nil},
		{"a shutdown frees too", func() error { return wait(root.NodeRef("pve").VirtualMachineRef(103).Shutdown(ctx)) }, "", map[int]string{103: ""}},
		{"the other guest gets it", func() error { return startVM(root, "pve", 104) }, "", map[int]string{104: "hostpci3=0000:03:00.0"}},
	}
	for _, s := range steps {
		wantMessage(t, s.reason, s.do(), s.want)
		for id, want := range s.held {
			if got := held(srv, id); got != want {
				t.Errorf("%s: VM %d holds %q, want %q", s.reason, id, got, want)
			}
		}
	}
	if running, _, _ := srv.VMRunning(102); !running {
		t.Errorf("VM 102 runs")
	}
	if running, _, _ := srv.VMRunning(106); running {
		t.Errorf("a failed start leaves the guest stopped")
	}
	want := []pvefake.PCIDevice{{Key: "hostpci0", Mapping: "gpu", Node: "pve", Path: "0000:01:00.0"}}
	if diff := cmp.Diff(want, srv.VMPCIDevices(102)); diff != "" {
		t.Errorf("VMPCIDevices(102): -want +got:\n%s", diff)
	}
}

// TestPCIStartChecks: parse_hostpci's and choose_hostpci_devices' other
// refusals, config_to_command's refusal of a PCI Express device without a
// q35 machine (next to a q35 one that starts), reservations being per node, a guest's devices freed when its
// node is lost, and AddVM refusing a running guest whose device is taken.
func TestPCIStartChecks(t *testing.T) {
	srv, root := start(t, pvefake.WithNodes("pve", "pve2"))
	seedGPU(t, srv)
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Running: true, Config: map[string]string{"hostpci0": "0000:01:00.0"}}))
	for id, conf := range map[int]map[string]string{
		101: {"hostpci0": "0000:02:00.0", "hostpci1": "mapping=gpu"},
		102: {"hostpci0": "0000:05:00.0", "hostpci1": "0000:05:00.0"},
		103: {"hostpci0": "host=0000:05:00.0,mapping=gpu"},
		104: {"hostpci0": "pcie=1"},
		105: {"hostpci0": "0000:01:00.0;0000:01:00.1,x-vga=1"},
		106: {"hostpci0": "mapping=gpu,pcie=1"},
		107: {"hostpci0": "mapping=gpu,pcie=1", "machine": "type=pc-q35-9.2+pve1,viommu=intel"},
	} {
		must(t, srv.AddVM(pvefake.VMSpec{VMID: id, Config: conf}))
	}
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 200, Node: "pve2", Config: map[string]string{"hostpci0": "0000:01:00.0"}}))
	for _, tc := range []struct {
		vmid int
		want string
	}{
		{101, "task failed: could not find a free device for 'hostpci1'"}, // 01:00.0 is VM 100's, 02:00.0 its own hostpci0
		{102, "task failed: device '0000:05:00.0' assigned more than once"},
		{103, "task failed: Cannot set both 'host' and 'mapping'."},
		{104, "task failed: Either 'host' or 'mapping' must be set."},
		{105, "task failed: PCI device '0000:01:00.0' already in use by VMID '100'"},
		{106, "task failed: q35 machine model is not enabled"}, // pcie=1 on the default i440fx
		{107, ""}, // the control: pcie=1 on a q35 machine
	} {
		wantMessage(t, "VM "+strconv.Itoa(tc.vmid), startVM(root, "pve", tc.vmid), tc.want)
	}
	if got, want := held(srv, 106)+"|"+held(srv, 107), "|hostpci0=0000:02:00.0"; got != want {
		t.Errorf("VMs 106 and 107 hold %q, want %q: a start that fails holds nothing", got, want)
	}
	wantMessage(t, "the same path on another node is another device", startVM(root, "pve2", 200), "")
	if got := held(srv, 200); got != "hostpci0=0000:01:00.0" {
		t.Errorf("VM 200 holds %q", got)
	}
	err := srv.AddVM(pvefake.VMSpec{VMID: 300, Running: true, Config: map[string]string{"hostpci0": "01:00"}})
	wantMessage(t, "a seeded running guest takes its devices", err, "cannot add VM 300: PCI device '0000:01:00.0' already in use by VMID '100'")
	if _, _, ok := srv.VMConfig(300); ok {
		t.Errorf("the refused guest was added")
	}

	for _, id := range []int{110, 111} {
		must(t, srv.AddVM(pvefake.VMSpec{VMID: id, Config: map[string]string{"hostpci0": "mapping=gpu,mdev=nvidia-35"}}))
		wantMessage(t, "mediated devices reserve nothing", startVM(root, "pve", id), "")
	}
	want := []pvefake.PCIDevice{{Key: "hostpci0", Mapping: "gpu", Node: "pve", Path: "0000:01:00.0", Mdev: "nvidia-35"}}
	if diff := cmp.Diff(want, srv.VMPCIDevices(111)); diff != "" {
		t.Errorf("a mediated device on the first device: -want +got:\n%s", diff)
	}

	must(t, srv.SetNodeOnline("pve", false))
	if got := held(srv, 100); got != "" {
		t.Errorf("a guest on a lost node holds %q", got)
	}
	must(t, srv.SetNodeOnline("pve", true))
	wantMessage(t, "the lost node's devices are free again", startVM(root, "pve", 105), "")
	if got := held(srv, 105); got != "hostpci0=0000:01:00.0;0000:01:00.1" {
		t.Errorf("VM 105 holds %q", got)
	}
}

// TestPCIHALiveMigration: on PVE 9 a negative resource affinity rule
// live-migrates a running service; with a mapped device that is not
// live-migration-capable the migration fails (QemuMigrate refuses it) and
// the guest stays with its device, logged once; with a capable mapping
// that has an item on the target the guest moves and holds the target's
// device.
func TestPCIHALiveMigration(t *testing.T) {
	items := []string{"node=pve1,path=0000:01:00.0,id=10de:2204", "node=pve2,path=0000:01:00.0,id=10de:2204",
		"node=pve3,path=0000:01:00.0,id=10de:2204"}
	for _, live := range []bool{false, true} {
		srv := haServer(t, pveacl.PVE9)
		must(t, srv.AddPCIMapping(pvefake.PCIMappingSpec{ID: "vgpu", Map: items, LiveMigrationCapable: live}))
		must(t, srv.AddVM(pvefake.VMSpec{VMID: 110, Node: "pve1", Running: true, Config: map[string]string{"hostpci0": "mapping=vgpu"}}))
		must(t, srv.AddVM(pvefake.VMSpec{VMID: 111, Node: "pve1", Running: true}))
		spread(t, srv, []string{"vm:110", "vm:111"}, "vm:110,vm:111")
		resource(t, srv, 110)
		r := resource(t, srv, 110)
		log := strings.Join(srv.HALog(), "\n")
		devs := srv.VMPCIDevices(110)
		if !live {
			if r["node"] != "pve1" || len(devs) != 1 || devs[0].Node != "pve1" {
				t.Errorf("a guest whose mapping cannot live-migrate stays: %v %+v", r, devs)
			}
			if n := strings.Count(log, "service 'vm:110' - migration failed (exit code 1)"); n != 1 {
				t.Errorf("the failure is logged once, not %d times:\n%s", n, log)
			}
			continue
		}
		if r["node"] == "pve1" || len(devs) != 1 || devs[0].Node != r["node"] || r["status"] != "running" {
			t.Errorf("a live-migration-capable device moves with its guest: %v %+v", r, devs)
		}
	}
}
