package pveapitest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveapi/pveapitest"
)

// rawJSON posts body as JSON, as go-proxmox v0.6 and v0.2.1 send POST and
// PUT parameters (proxmox.go Req), and returns the status line and the
// decoded body.
func rawJSON(t *testing.T, srv *pveapitest.Server, method, path string, body any) (string, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	must(t, err)
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(b))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
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
			must(t, srv.AddVM(pveapitest.VMSpec{VMID: 100, Disks: map[string]string{"scsi0": "local-lvm:1"},
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
	must(t, srv.AddVM(pveapitest.VMSpec{VMID: 200, Disks: map[string]string{"scsi0": "local-lvm:1"}}))
	must(t, srv.AddVM(pveapitest.VMSpec{VMID: 201, Disks: map[string]string{"scsi0": "local-lvm:1"}, Config: map[string]string{"boot": ""}}))
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
