package pvefake_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// rawJSON posts body as JSON, as go-proxmox v0.6 and v0.2.1 send POST and
// PUT parameters (proxmox.go Req: no body and no Content-Type for nil),
// and returns the status line and the decoded body.
func rawJSON(t *testing.T, srv *pvefake.Server, method, path string, body map[string]any) (string, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		must(t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, srv.URL+path, r)
	must(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", rootAuth(srv))
	resp, err := srv.HTTPClient().Do(req)
	must(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	must(t, err)
	var env map[string]any
	if len(got) > 0 {
		if err := json.Unmarshal(got, &env); err != nil {
			t.Fatalf("%s %s: body %q is not JSON: %v", method, path, got, err)
		}
	}
	return resp.Status, env
}

// TestBootParameter: boot is checked as qemu-server's pve-qm-boot format
// before anything else runs: the deprecated default key legacy must match
// [acdn]{1,4}, order lists boot devices (verify_bootdev), other keys and
// duplicates are refused with parse_property_string's texts, and each
// error is named under the parameter's path (boot.legacy, boot.order), as
// check_prop hands it to parse_property_string. capmox's CloudInit sends
// "<the guest's boot>;ide0": that is valid only when the guest's boot has
// the order= form; ";ide0" (no boot) and "cdn;ide0" (a legacy one) are the
// 400 below.
func TestBootParameter(t *testing.T) {
	const badLegacy = "invalid format - format error\nboot.legacy: value does not match the regex pattern"
	cases := map[string]struct {
		boot string
		err  string // the errors entry for boot; "" accepted
	}{
		"Order":          {boot: "order=scsi0;net0"},
		"OrderSpaces":    {boot: "order=scsi0 net0"},
		"Legacy":         {boot: "cdn"},
		"LegacyKey":      {boot: "legacy=c"},
		"Both":           {boot: "cdn,order=scsi0"},
		"NoBootYet":      {boot: ";ide0", err: badLegacy},
		"LegacyPlusCD":   {boot: "cdn;ide0", err: badLegacy},
		"TooLong":        {boot: "acdnc", err: badLegacy},
		"EFIDisk":        {boot: "order=scsi0;efidisk0", err: "invalid format - format error\nboot.order: invalid format - invalid boot device 'efidisk0'"},
		"NoSuchNIC":      {boot: "order=net32", err: "invalid format - format error\nboot.order: invalid format - invalid boot device 'net32'"},
		"UnknownKey":     {boot: "color=red", err: "invalid format - invalid key in comma-separated list property: color"},
		"TwoDefaults":    {boot: "cdn,c", err: "invalid format - duplicate key in comma-separated list property: legacy"},
		"TwoOrders":      {boot: "order=scsi0,order=net0", err: "invalid format - duplicate key in comma-separated list property: order"},
		"EmptyValue":     {boot: "order=", err: "invalid format - missing key in comma-separated list property"},
		"LegacyAndKey":   {boot: "legacy=c,cdn", err: "invalid format - duplicate key in comma-separated list property: legacy"},
		"BlankPartsSkip": {boot: ",order=scsi0,,"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, _ := start(t)
			must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Disks: map[string]string{"scsi0": "local-lvm:1"},
				Config: map[string]string{"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}}))
			status, env := rawJSON(t, srv, "POST", "/nodes/pve/qemu/100/config", map[string]any{"boot": tc.boot})
			if tc.err == "" {
				if status != "200 OK" {
					t.Fatalf("boot %q is valid: %s %v", tc.boot, status, env)
				}
				return
			}
			want := map[string]any{"boot": tc.err}
			if status != "400 Parameter verification failed." || !cmp.Equal(want, env["errors"]) {
				t.Errorf("boot %q: %s, errors %q; want 400 with %q", tc.boot, status, env["errors"], tc.err)
			}
		})
	}
}

// TestNewGuestBoot: a guest created through the API gets the boot order
// create_vm computes when the request names none (get_default_bootdevices:
// the first disk, the first CD-ROM, the first network device), a clone
// keeps its source's, and AddVM seeds it the same way unless told
// otherwise.
func TestNewGuestBoot(t *testing.T) {
	srv, root := start(t)
	node := root.NodeRef("pve")
	must(t, wait(node.NewVirtualMachine(ctx, 100, opt("virtio1", "local-lvm:1"), opt("scsi2", "local-lvm:1"),
		opt("ide2", "none,media=cdrom"), opt("net1", "virtio,bridge=vmbr0"), opt("net3", "e1000,bridge=vmbr0"))))
	must(t, wait(node.NewVirtualMachine(ctx, 101, opt("boot", "order=net0"), opt("net0", "virtio,bridge=vmbr0"))))
	must(t, wait(node.NewVirtualMachine(ctx, 102, opt("memory", 512))))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 200, Disks: map[string]string{"scsi0": "local-lvm:1"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 201, Disks: map[string]string{"scsi0": "local-lvm:1"}, Config: map[string]string{"boot": ""}}))
	_, task, err := node.VirtualMachineRef(100).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 300, Full: proxmox.IntOrBool(true)})
	must(t, wait(task, err))
	want := map[int]string{100: "order=scsi2;ide2;net1", 101: "order=net0", 102: " ", 200: "order=scsi0", 201: "<none>", 300: "order=scsi2;ide2;net1"}
	got := map[int]string{}
	for id := range want {
		conf, _, ok := srv.VMConfig(id)
		if !ok {
			t.Fatalf("VM %d is missing", id)
		}
		b, set := conf["boot"]
		if !set {
			b = "<none>"
		}
		got[id] = b
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("boot of new guests (IDE before SCSI before VirtIO; no device: the blank value PVE reads back): -want +got:\n%s", diff)
	}
}

// cloneForCloudInit seeds what capmox meets: a template made through the
// API (so with create_vm's boot order), a clone 101 of it in pool p, and
// the ISO capmox uploads for it on local.
func cloneForCloudInit(t *testing.T, templateBoot map[string]string) *pvefake.Server {
	t.Helper()
	srv, root := start(t)
	must(t, srv.AddPool("p", "", nil, nil))
	conf := map[string]string{"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}
	for k, v := range templateBoot {
		conf[k] = v
	}
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Template: true, Disks: map[string]string{"scsi0": "local-lvm:2"}, Config: conf}))
	_, task, err := root.NodeRef("pve").VirtualMachineRef(9000).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101, Pool: "p"})
	must(t, wait(task, err))
	_, err = srv.AddVolume(pvefake.VolumeSpec{Storage: "local", Content: "iso", Name: "iso/user-data-101.iso", Size: 57354})
	must(t, err)
	return srv
}

// TestConfigDrivePermissions: POST .../config checks each drive as
// update_vm_api does: the ISO volume's storage access before the worker
// (check_volume_access: Datastore.AllocateSpace or Datastore.Audit), then
// inside it $check_drive_perms on the drive replaced and the new one:
// VM.Config.CDROM for a CD-ROM (an ISO or none,media=cdrom),
// VM.Config.Disk for a disk. The ISO's size joins the drive, as
// create_disks prints it; a missing ISO fails the worker.
func TestConfigDrivePermissions(t *testing.T) {
	mount := []proxmox.VirtualMachineOption{opt("ide0", "local:iso/user-data-101.iso,media=cdrom"), opt("boot", "order=scsi0;net0;ide0")}
	cases := map[string]struct {
		reason string
		roles  []string // on /pool/p
		store  string   // where PVEDatastoreUser is granted
		opts   []proxmox.VirtualMachineOption
		before []proxmox.VirtualMachineOption // run as root first
		err    string
		ide0   string
	}{
		"Mount": {reason: "capmox's CloudInit request with its privileges", roles: []string{"PVEVMAdmin"}, store: "local", opts: mount,
			ide0: "local:iso/user-data-101.iso,media=cdrom,size=57354"},
		"NoCDROM": {reason: "VM.Config.Disk (for boot) is not VM.Config.CDROM", roles: []string{"DiskOnly"}, store: "local", opts: mount,
			err: "task failed: 403 Permission check failed (/vms/101, VM.Config.CDROM)"},
		"NoISOAccess": {reason: "the ISO's storage is checked before the worker", roles: []string{"PVEVMAdmin"}, opts: mount,
			err: "Permission check failed (/storage/local, Datastore.AllocateSpace|Datastore.Audit)"},
		"Unmount": {reason: "none,media=cdrom replacing the ISO is a CD-ROM change", roles: []string{"PVEVMAdmin"},
			before: mount, opts: []proxmox.VirtualMachineOption{opt("ide0", "none,media=cdrom")}, ide0: "none,media=cdrom"},
		"UnmountNoCDROM": {reason: "so is removing the ISO", roles: []string{"DiskOnly"},
			before: mount, opts: []proxmox.VirtualMachineOption{opt("ide0", "none,media=cdrom")},
			err: "task failed: 403 Permission check failed (/vms/101, VM.Config.CDROM)", ide0: "local:iso/user-data-101.iso,media=cdrom,size=57354"},
		"MissingISO": {reason: "create_disks activates the volume", roles: []string{"PVEVMAdmin"}, store: "local",
			opts: []proxmox.VirtualMachineOption{opt("ide0", "local:iso/gone.iso,media=cdrom")},
			err:  "task failed: volume 'local:iso/gone.iso' does not exist"},
		"DiskAsDisk": {reason: "a disk needs VM.Config.Disk, not VM.Config.CDROM", roles: []string{"CDROMOnly"}, store: "local-lvm",
			opts: []proxmox.VirtualMachineOption{opt("scsi1", "local-lvm:1")},
			err:  "task failed: 403 Permission check failed (/vms/101, VM.Config.Disk)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := cloneForCloudInit(t, nil)
			root := client(srv, srv.RootTokenID, srv.RootSecret)
			must(t, srv.AddRole("DiskOnly", "VM.Audit", "VM.Config.Disk"))
			must(t, srv.AddRole("CDROMOnly", "VM.Audit", "VM.Config.CDROM"))
			grants := map[string][]string{"/pool/p": tc.roles}
			if tc.store != "" {
				grants["/storage/"+tc.store] = []string{"PVEDatastoreUser"}
			}
			c := grantee(t, srv, "capmox@pve", grants)
			if tc.before != nil {
				must(t, wait(root.NodeRef("pve").VirtualMachineRef(101).Config(ctx, tc.before...)))
			}
			wantMessage(t, tc.reason, wait(c.NodeRef("pve").VirtualMachineRef(101).Config(ctx, tc.opts...)), tc.err)
			if conf, _, _ := srv.VMConfig(101); tc.ide0 != "" && conf["ide0"] != tc.ide0 {
				t.Errorf("%s: ide0 = %q, want %q", tc.reason, conf["ide0"], tc.ide0)
			}
		})
	}
}

// TestBootOrderUpdates: the worker keeps the boot order as update_vm_api
// does: a new order must name devices the guest has or gets in the same
// request ("invalid bootorder: device '...' does not exist'", the stray
// quote included), is written as print_bootorder writes it and drops
// bootdisk; a CD-ROM added to a guest whose boot has an order joins it; a
// deleted device leaves it. The task log starts with the request, as
// "update VM <id>: -key value ...".
func TestBootOrderUpdates(t *testing.T) {
	steps := []struct {
		reason   string
		opts     []proxmox.VirtualMachineOption
		err      string
		boot     string
		bootdisk bool
	}{
		{"a device the guest lacks", []proxmox.VirtualMachineOption{opt("boot", "order=scsi0;ide3")},
			"task failed: invalid bootorder: device 'ide3' does not exist'", "order=scsi0;net0", false},
		{"the deprecated bootdisk", []proxmox.VirtualMachineOption{opt("bootdisk", "scsi0")}, "", "order=scsi0;net0", true},
		{"space-separated devices are printed with semicolons, bootdisk goes", []proxmox.VirtualMachineOption{opt("boot", "order=net0 scsi0")},
			"", "order=net0;scsi0", false},
		{"a new CD-ROM joins the order", []proxmox.VirtualMachineOption{opt("ide2", "none,media=cdrom")}, "", "order=net0;scsi0;ide2", false},
		{"a device and the order naming it, in one request", []proxmox.VirtualMachineOption{opt("ide0", "local:iso/user-data-101.iso,media=cdrom"),
			opt("boot", "order=scsi0;net0;ide2;ide0")}, "", "order=scsi0;net0;ide2;ide0", false},
		{"a deleted device leaves the order", []proxmox.VirtualMachineOption{opt("delete", "ide2,net0")}, "", "order=scsi0;ide0", false},
		{"a legacy value is kept as it is", []proxmox.VirtualMachineOption{opt("boot", "dc")}, "", "dc", false},
		{"with a legacy boot a new CD-ROM is bootable anyway", []proxmox.VirtualMachineOption{opt("ide3", "none,media=cdrom")}, "", "dc", false},
	}
	srv := cloneForCloudInit(t, nil)
	root := client(srv, srv.RootTokenID, srv.RootSecret)
	vm := root.NodeRef("pve").VirtualMachineRef(101)
	for _, s := range steps {
		wantMessage(t, s.reason, wait(vm.Config(ctx, s.opts...)), s.err)
		conf, _, _ := srv.VMConfig(101)
		if conf["boot"] != s.boot {
			t.Errorf("%s: boot = %q, want %q", s.reason, conf["boot"], s.boot)
		}
		if _, ok := conf["bootdisk"]; ok != s.bootdisk {
			t.Errorf("%s: bootdisk set %v, want %v", s.reason, ok, s.bootdisk)
		}
	}
	tasks := srv.Tasks()
	last := tasks[len(tasks)-1]
	if last.Type != "qmconfig" || len(last.Log) == 0 || last.Log[0] != "update VM 101: -ide3 none,media=cdrom" {
		t.Errorf("the worker logs the request first: %+v", last)
	}
}

// TestCapmoxCloudInitBoot is capmox's CloudInit request (go-proxmox v0.6.0
// and v0.2.1 virtual_machine.go CloudInit: ide0 and "<the guest's
// boot>;ide0", sent as JSON). On a clone of a template made through PVE's
// API the guest's boot is an order and the request passes; on a template
// whose configuration has no boot (written before PVE 6.3, or by hand) or a
// legacy one, PVE refuses it with 400 and so does the server: the ISO is
// never attached and the machine never boots its bootstrap data.
func TestCapmoxCloudInitBoot(t *testing.T) {
	cases := map[string]struct {
		template map[string]string
		status   string
		boot     string
	}{
		"OrderFromCreate": {template: nil, status: "200 OK", boot: "order=scsi0;net0;ide0"},
		"NoBoot":          {template: map[string]string{"boot": ""}, status: "400 Parameter verification failed."},
		"Legacy":          {template: map[string]string{"boot": "cdn"}, status: "400 Parameter verification failed."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := cloneForCloudInit(t, tc.template)
			conf, _, _ := srv.VMConfig(101)
			body := map[string]any{"ide0": "local:iso/user-data-101.iso,media=cdrom", "boot": conf["boot"] + ";ide0"}
			status, env := rawJSON(t, srv, "POST", "/nodes/pve/qemu/101/config", body)
			if status != tc.status {
				t.Fatalf("boot %q: %s %v, want %s", body["boot"], status, env, tc.status)
			}
			if tc.boot == "" {
				want := map[string]any{"boot": "invalid format - format error\nboot.legacy: value does not match the regex pattern"}
				if diff := cmp.Diff(want, env["errors"]); diff != "" {
					t.Errorf("the 400's errors: -want +got:\n%s", diff)
				}
				return
			}
			after, _, _ := srv.VMConfig(101)
			if after["boot"] != tc.boot || after["ide0"] != "local:iso/user-data-101.iso,media=cdrom,size=57354" {
				t.Errorf("boot %q, ide0 %q", after["boot"], after["ide0"])
			}
		})
	}
}
