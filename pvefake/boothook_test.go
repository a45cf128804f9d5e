package pvefake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// bootRecorder is a boot hook that keeps what it saw and fails as told.
type bootRecorder struct {
	mu   sync.Mutex
	seen []pvefake.BootingVM
	iso  map[int][]byte
	fail error
	// during runs inside the hook, the server unlocked.
	during func(vm pvefake.BootingVM)
}

func (b *bootRecorder) hook(_ context.Context, vm pvefake.BootingVM) error {
	if b.during != nil {
		b.during(vm)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen = append(b.seen, vm)
	if _, data, ok := vm.CDROM("ide0"); ok {
		b.iso[vm.VMID] = data
	}
	return b.fail
}

// uploadISO uploads data as capmox does and waits for the worker.
func uploadISO(t *testing.T, srv *pvefake.Server, root *proxmox.Client, name string, data []byte) {
	t.Helper()
	body, ctype := multipartBody(t, [][2]string{{"content", "iso"}}, "filename", name, data)
	_, resp, _, err := postUpload(t, srv, rootAuth(srv), "/nodes/pve/storage/local/upload", ctype, body)
	must(t, err)
	var env struct{ Data string }
	must(t, json.Unmarshal([]byte(resp), &env))
	if exit, log := taskEnd(t, root, env.Data); exit != "OK" {
		t.Fatalf("upload: %s\n%s", exit, log)
	}
}

// TestBootHook: capmox's path to a booting machine on the server: the
// bootstrap ISO uploaded, attached as ide0 with the boot order, the guest
// started. The boot hook then sees the guest's ID, node, start task,
// configuration (its SMBIOS UUID, its NIC's MAC) and the ISO's bytes.
func TestBootHook(t *testing.T) {
	rec := &bootRecorder{iso: map[int][]byte{}}
	srv, root := start(t, pvefake.WithBootHook(rec.hook))
	must(t, wait(root.NodeRef("pve").NewVirtualMachine(ctx, 101, opt("name", "w0"), opt("scsi0", "local-lvm:2"), opt("net0", "virtio,bridge=vmbr0"))))
	conf, _, _ := srv.VMConfig(101)
	iso := isoBytes()
	uploadISO(t, srv, root, "user-data-101.iso", iso)
	vm := root.NodeRef("pve").VirtualMachineRef(101)
	must(t, wait(vm.Config(ctx, opt("ide0", "local:iso/user-data-101.iso,media=cdrom"), opt("boot", conf["boot"]+";ide0"))))
	task, err := vm.Start(ctx)
	must(t, wait(task, err))
	if len(rec.seen) != 1 {
		t.Fatalf("the hook runs once per start: %d", len(rec.seen))
	}
	got := rec.seen[0]
	if got.VMID != 101 || got.Node != "pve" || got.UPID != string(task.UPID) || got.Config["name"] != "w0" {
		t.Errorf("the hook sees the guest and its start task: %+v", got)
	}
	if uuid := got.SMBIOSUUID(); uuid == "" || !strings.Contains(conf["smbios1"], uuid) {
		t.Errorf("the guest's SMBIOS UUID: %q of %q", uuid, conf["smbios1"])
	}
	if !strings.HasPrefix(got.Config["net0"], "virtio=BC:24:11:") {
		t.Errorf("the NIC has its MAC, as the guest sees it: %q", got.Config["net0"])
	}
	if volid, _, _ := got.CDROM("ide0"); volid != "local:iso/user-data-101.iso" || !bytes.Equal(rec.iso[101], iso) {
		t.Errorf("the hook reads the bootstrap ISO in ide0: %q, %d bytes", volid, len(rec.iso[101]))
	}
	if _, _, ok := got.CDROM("scsi0"); ok {
		t.Error("a disk is no CD-ROM")
	}
	if errs := srv.BootErrors(); len(errs) != 0 {
		t.Errorf("no boot failed: %v", errs)
	}
}

// TestBootHookFailure: a hook's error is the guest's failure to boot: the
// start task still ends OK and the guest runs, as on PVE, and the error is
// kept for BootErrors with the guest and its start task. The hook runs
// with the server unlocked, so it can call the API.
func TestBootHookFailure(t *testing.T) {
	rec := &bootRecorder{iso: map[int][]byte{}, fail: errors.New("no machine config on the ISO")}
	srv, root := start(t, pvefake.WithBootHook(rec.hook))
	var status string
	rec.during = func(vm pvefake.BootingVM) {
		got, err := root.NodeRef(vm.Node).VirtualMachine(ctx, vm.VMID)
		if err == nil {
			status = got.Status
		}
	}
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Disks: map[string]string{"scsi0": "local-lvm:1"}}))
	task, err := root.NodeRef("pve").VirtualMachineRef(100).Start(ctx)
	must(t, wait(task, err))
	if status != "running" {
		t.Errorf("inside the hook the API answers and the guest runs: %q", status)
	}
	errs := srv.BootErrors()
	if len(errs) != 1 || errs[0].VMID != 100 || errs[0].Node != "pve" || errs[0].UPID != string(task.UPID) || errs[0].Err.Error() != "no machine config on the ISO" {
		t.Errorf("the failure is recorded: %+v", errs)
	}
	if st := task.ExitStatus; st != "OK" {
		t.Errorf("the start task ends OK: %q", st)
	}
}

// TestStartChecksVolumes: a start activates the guest's volumes first, as
// vm_start_nolock does: an ISO a file storage does not hold fails the
// qmstart task ("volume '...' does not exist"), the guest stays stopped and
// the hook is not called; a CD-ROM holding no ISO or a seeded ISO starts.
func TestStartChecksVolumes(t *testing.T) {
	rec := &bootRecorder{iso: map[int][]byte{}}
	srv, root := start(t, pvefake.WithBootHook(rec.hook))
	_, err := srv.AddVolume(pvefake.VolumeSpec{Storage: "local", Content: "iso", Name: "iso/seeded.iso", Size: 4096})
	must(t, err)
	cases := []struct {
		vmid int
		ide0 string
		err  string
	}{
		{100, "local:iso/gone.iso,media=cdrom", "task failed: volume 'local:iso/gone.iso' does not exist"},
		{101, "none,media=cdrom", ""},
		{102, "local:iso/seeded.iso,media=cdrom", ""},
	}
	for _, tc := range cases {
		must(t, srv.AddVM(pvefake.VMSpec{VMID: tc.vmid, Disks: map[string]string{"scsi0": "local-lvm:1"}, Config: map[string]string{"ide0": tc.ide0}}))
		vm := root.NodeRef("pve").VirtualMachineRef(tc.vmid)
		wantMessage(t, tc.ide0, wait(vm.Start(ctx)), tc.err)
		got, err := root.NodeRef("pve").VirtualMachine(ctx, tc.vmid)
		must(t, err)
		if (got.Status == "running") != (tc.err == "") {
			t.Errorf("%s: status %q", tc.ide0, got.Status)
		}
	}
	if len(rec.seen) != 2 {
		t.Fatalf("the hook runs for the two guests that started: %d", len(rec.seen))
	}
	for _, vm := range rec.seen {
		if vm.VMID == 102 {
			if volid, data, ok := vm.CDROM("ide0"); volid != "local:iso/seeded.iso" || ok || data != nil {
				t.Errorf("a seeded ISO has no bytes: %q %v %d", volid, ok, len(data))
			}
		}
	}
}
