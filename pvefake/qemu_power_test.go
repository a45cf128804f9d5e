package pvefake_test

import (
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestResizeChecksStorage: a resize needs VM.Config.Disk on the guest and,
// inside the worker, Datastore.AllocateSpace on the disk's storage, as
// qemu-server's resize_vm checks; a linked clone's disk lives on the
// template's storage, so that is where the privilege is needed.
func TestResizeChecksStorage(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddPool("p", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Disks: map[string]string{"scsi0": "local-lvm:4"}}))
	must(t, wait(root.NodeRef("pve").VirtualMachineRef(9000).ConvertToTemplate(ctx)))
	_, task, err := root.NodeRef("pve").VirtualMachineRef(9000).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101, Pool: "p"})
	must(t, wait(task, err))
	c := grantee(t, srv, "capmox@pve", map[string][]string{"/pool/p": {"PVEVMAdmin"}})
	vm := c.NodeRef("pve").VirtualMachineRef(101)
	wantMessage(t, "without Datastore.AllocateSpace on local-lvm the worker fails", wait(vm.ResizeDisk(ctx, "scsi0", "10G")),
		"task failed: 403 Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)")
	if conf, _, _ := srv.VMConfig(101); conf["scsi0"] != "local-lvm:vm-101-disk-0,size=4G" {
		t.Errorf("a refused resize changes nothing: scsi0 = %q", conf["scsi0"])
	}
	must(t, srv.SetACL("/storage/local-lvm", pveacl.KindUser, "capmox@pve", false, "PVEDatastoreUser"))
	must(t, srv.SetACL("/storage/local-lvm", pveacl.KindToken, "capmox@pve!tk", false, "PVEDatastoreUser"))
	wantMessage(t, "with it the disk grows", wait(vm.ResizeDisk(ctx, "scsi0", "10G")), "")
	if conf, _, _ := srv.VMConfig(101); conf["scsi0"] != "local-lvm:vm-101-disk-0,size=10G" {
		t.Errorf("scsi0 = %q, want size=10G", conf["scsi0"])
	}
}

// TestResizeDigestAndNoop: a stale digest fails inside the worker (the
// request answers a UPID), and a resize to the current size ends OK
// without a log line or a change, as resize_vm returns early.
func TestResizeDigestAndNoop(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Disks: map[string]string{"scsi0": "local-lvm:4"}}))
	var upid proxmox.UPID
	err := root.Put(ctx, "/nodes/pve/qemu/100/resize", map[string]string{"disk": "scsi0", "size": "8G", "digest": "0123456789abcdef"}, &upid)
	if err != nil {
		t.Fatalf("a stale digest is judged in the worker, so the request answers a UPID: %v", err)
	}
	wantMessage(t, "the worker fails", proxmox.NewTask(upid, root).Wait(ctx, 1e6, 5e9), "task failed: checksum mismatch (file change by other user?)")
	vm := root.NodeRef("pve").VirtualMachineRef(100)
	task, err := vm.ResizeDisk(ctx, "scsi0", "4G")
	must(t, wait(task, err))
	log, err := task.Log(ctx, 0, 50)
	must(t, err)
	if len(log) != 1 || log[0] != "TASK OK" {
		t.Errorf("an unchanged size logs nothing: %v", log)
	}
}

// TestPowerActions: status/start, stop and shutdown as qemu-server's
// vm_start, vm_stop and vm_shutdown.
func TestPowerActions(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddPool("p", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Pool: "p", Disks: map[string]string{"scsi0": "local-lvm:4"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Config: map[string]string{"template": "1"}}))
	vm := root.NodeRef("pve").VirtualMachineRef(100)
	status := func() string {
		full, err := root.NodeRef("pve").VirtualMachine(ctx, 100)
		must(t, err)
		return full.Status
	}
	steps := []struct {
		reason string
		do     func() (*proxmox.Task, error)
		err    string
		status string
	}{
		{"start runs the guest", func() (*proxmox.Task, error) { return vm.Start(ctx) }, "", "running"},
		{"a second start fails in the worker", func() (*proxmox.Task, error) { return vm.Start(ctx) }, "task failed: VM 100 already running", "running"},
		{"shutdown stops it", func() (*proxmox.Task, error) { return vm.Shutdown(ctx) }, "", "stopped"},
		{"stopping a stopped guest is OK", func() (*proxmox.Task, error) { return vm.Stop(ctx) }, "", "stopped"},
		{"start, then stop", func() (*proxmox.Task, error) { must(t, wait(vm.Start(ctx))); return vm.Stop(ctx) }, "", "stopped"},
		{"a template does not start", func() (*proxmox.Task, error) { return root.NodeRef("pve").VirtualMachineRef(9000).Start(ctx) },
			"task failed: you can't start a vm if it's a template", "stopped"},
		{"a missing guest fails in the worker", func() (*proxmox.Task, error) { return root.NodeRef("pve").VirtualMachineRef(555).Stop(ctx) },
			"task failed: unable to find configuration file for VM 555 on node 'pve'", "stopped"},
	}
	for _, s := range steps {
		wantMessage(t, s.reason, wait(s.do()), s.err)
		if got := status(); got != s.status {
			t.Errorf("%s: status %q, want %q", s.reason, got, s.status)
		}
	}
	user := grantee(t, srv, "u@pve", map[string][]string{"/pool/p": {"PVEVMUser"}})
	uvm := user.NodeRef("pve").VirtualMachineRef(100)
	wantMessage(t, "PVEVMUser holds VM.PowerMgmt", wait(uvm.Start(ctx)), "")
	auditor := grantee(t, srv, "a@pve", map[string][]string{"/pool/p": {"PVEAuditor"}})
	_, err := auditor.NodeRef("pve").VirtualMachineRef(100).Stop(ctx)
	wantMessage(t, "VM.PowerMgmt is required", err, "Permission check failed (/vms/100, VM.PowerMgmt)")
	var upid proxmox.UPID
	err = user.Post(ctx, "/nodes/pve/qemu/100/status/stop", map[string]any{"skiplock": 1}, &upid)
	wantMessage(t, "skiplock is root@pam's", err, "skiplock: Only root may use this option.")
}

// TestOptionValues: option values are validated as qemu-server's schema
// declares them, with PVE's 400 texts; an unnamed guest reports "VM <id>".
func TestOptionValues(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100}))
	vm := root.NodeRef("pve").VirtualMachineRef(100)
	cases := []struct {
		opt  proxmox.VirtualMachineOption
		want string
	}{
		{opt("name", "bad_name"), "name: invalid format - value does not look like a valid DNS name"},
		{opt("memory", "lots"), "memory: invalid format - format error\nmemory.current: type check ('integer') failed - got 'lots'"},
		{opt("memory", "8"), "memory: invalid format - format error\nmemory.current: value must have a minimum value of 16"},
		{opt("cores", 0), "cores: value must have a minimum value of 1"},
		{opt("sockets", "two"), "sockets: type check ('integer') failed - got 'two'"},
		{opt("scsihw", "nvme"), "scsihw: value 'nvme' does not have a value in the enumeration"},
		{opt("name", "worker-1.example"), ""},
		{opt("memory", "current=2048"), ""},
	}
	for _, c := range cases {
		err := vm.ConfigSync(ctx, c.opt)
		wantMessage(t, c.opt.Name+"="+toString(c.opt.Value), err, c.want)
	}
	err := wait(root.NodeRef("pve").NewVirtualMachine(ctx, 101, opt("name", "bad_name")))
	wantMessage(t, "a create is validated too", err, "name: invalid format - value does not look like a valid DNS name")
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 102}))
	full, err := root.NodeRef("pve").VirtualMachine(ctx, 102)
	must(t, err)
	if full.Name != "VM 102" {
		t.Errorf("an unnamed guest reports %q, want \"VM 102\"", full.Name)
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return "number"
}
