package pvefake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestClusterResourcesOrder: guests are listed in Perl's string order of
// their VMIDs, as pve-manager's resources method sorts the keys of the
// VM list, so capmox's bestSubset template choice (which depends on the
// order) meets the same list it meets on PVE.
func TestClusterResourcesOrder(t *testing.T) {
	srv, root := start(t)
	for _, id := range []int{9000, 101, 10000, 100, 1000} {
		must(t, srv.AddVM(pvefake.VMSpec{VMID: id}))
	}
	for _, path := range []string{"/cluster/resources?type=vm", "/cluster/resources"} {
		var list proxmox.ClusterResources
		must(t, root.Get(ctx, path, &list))
		var got []uint64
		for _, r := range list {
			if r.Type == "qemu" {
				got = append(got, r.VMID)
			}
		}
		if diff := cmp.Diff([]uint64{100, 1000, 10000, 101, 9000}, got); diff != "" {
			t.Errorf("%s: guests in string order of their VMIDs: -want +got:\n%s", path, diff)
		}
	}
}

// TestContainerIndex: GET /nodes/{node}/lxc answers every user, as
// pve-container's vmlist does (user => 'all', filtered by VM.Audit); the
// server keeps no containers, so the list is empty, and go-proxmox's
// Containers (capmox's reservable-memory walk) decodes it.
func TestContainerIndex(t *testing.T) {
	srv, root := start(t, pvefake.WithNodes("pve", "pve2"))
	nobody := grantee(t, srv, "nobody@pve", nil)
	for name, c := range map[string]*proxmox.Client{"root": root, "a user without privileges": nobody} {
		cts, err := c.NodeRef("pve2").Containers(ctx)
		if err != nil || len(cts) != 0 {
			t.Errorf("%s: containers of a node without any: %v, %v", name, cts, err)
		}
	}
	var list []map[string]any
	must(t, root.Get(ctx, "/nodes/pve/lxc", &list))
	if list == nil {
		t.Error("the answer is an empty JSON array, not null")
	}
	wantMessage(t, "an unknown node", root.Get(ctx, "/nodes/nope/lxc", &list), "no such cluster node 'nope'")
	if got := srv.Unserved(); len(got) != 0 {
		t.Errorf("the container index is served: %v", got)
	}
}

// nodeStatusV06 declares the fields of GET /nodes/{node}/status with the Go
// types go-proxmox v0.6.0 and v0.2.1 decode them into (types.go: Node,
// Memory, CPUInfo, RootFS, Ksm): a string where they want a number fails
// their decoding, and with it capmox's node lookup.
type nodeStatusV06 struct {
	Kversion   string
	LoadAvg    []string
	CPU        float64
	PVEVersion string
	Idle       int
	Uptime     uint64
	Wait       float64
	RootFS     struct{ Avail, Total, Free, Used uint64 }
	Swap       struct{ Used, Free, Total uint64 }
	Memory     struct{ Used, Free, Total uint64 }
	Ksm        struct{ Shared int64 }
	CPUInfo    struct {
		UserHz  int `json:"user_hz"`
		Cores   int
		Sockets int
		CPUs    int
		HVM     string
		Model   string
	}
}

// TestNodeMemory: SetNodeMemory sets what capmox's scheduler reads as a
// node's memory (R6 memory.total), and the node status decodes into the
// types go-proxmox v0.6 and v0.2.1 give it. The reservable memory capmox
// computes (total minus maxmem of the node's guests that are not templates
// and of its containers) follows.
func TestNodeMemory(t *testing.T) {
	srv, root := start(t, pvefake.WithNodes("pve", "pve2"))
	must(t, srv.SetNodeMemory("pve", 8<<30))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Node: "pve", Config: map[string]string{"memory": "2048"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Node: "pve", Template: true, Config: map[string]string{"memory": "4096"}}))
	var raw json.RawMessage
	must(t, root.Get(ctx, "/nodes/pve/status", &raw))
	var st nodeStatusV06
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("the node status must decode into go-proxmox v0.6's types: %v\n%s", err, raw)
	}
	if st.Memory.Total != 8<<30 || st.Memory.Used+st.Memory.Free != st.Memory.Total || len(st.LoadAvg) != 3 {
		t.Errorf("memory.total is the set size, used and free add up to it, three load averages: %+v", st)
	}
	node, err := root.Node(ctx, "pve")
	must(t, err)
	vms, err := node.VirtualMachines(ctx)
	must(t, err)
	cts, err := node.Containers(ctx)
	must(t, err)
	reservable := node.Memory.Total
	for _, vm := range vms {
		if !bool(vm.Template) {
			reservable -= vm.MaxMem
		}
	}
	for _, ct := range cts {
		reservable -= ct.MaxMem
	}
	if reservable != 6<<30 {
		t.Errorf("8 GiB less the 2 GiB guest (the template does not count) leaves 6 GiB, got %d", reservable)
	}
	other, err := root.Node(ctx, "pve2")
	must(t, err)
	if other.Memory.Total != 64<<30 {
		t.Errorf("another node keeps its 64 GiB: %d", other.Memory.Total)
	}
	var list proxmox.ClusterResources
	must(t, root.Get(ctx, "/cluster/resources?type=node", &list))
	for _, r := range list {
		if r.Node == "pve" && r.MaxMem != 8<<30 {
			t.Errorf("the node's maxmem in /cluster/resources: %d", r.MaxMem)
		}
	}
	if err := srv.SetNodeMemory("nope", 1); err == nil {
		t.Error("an unknown node is refused")
	}
	if err := srv.SetNodeMemory("pve", 0); err == nil {
		t.Error("no memory at all is refused")
	}
}

// TestSMBIOSUUIDs: every guest created through the API gets smbios1
// uuid=<a new version 4 UUID> (create_vm's generate_smbios1_uuid) and
// every clone a new one in place of its source's (clone_vm), each its own:
// capmox takes the machine's providerID from it. A clone keeps the other
// smbios1 fields and prints them as print_property_string does, sorted.
func TestSMBIOSUUIDs(t *testing.T) {
	srv, root := start(t)
	node := root.NodeRef("pve")
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Template: true, Disks: map[string]string{"scsi0": "local-lvm:1"},
		Config: map[string]string{"smbios1": "uuid=00000000-0000-4000-8000-000000000000,serial=abc,manufacturer=ACME"}}))
	for _, id := range []int{100, 101} {
		must(t, wait(node.NewVirtualMachine(ctx, id, opt("scsi0", "local-lvm:1"))))
	}
	for _, id := range []int{200, 201} {
		_, task, err := node.VirtualMachineRef(9000).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: id})
		must(t, wait(task, err))
	}
	uuidRe := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	capmoxRe := regexp.MustCompile(`(^|,)uuid=([0-9a-fA-F-]+)`) // capmox's extractUUID
	seen := map[string]int{}
	for _, id := range []int{100, 101, 200, 201} {
		conf, _, _ := srv.VMConfig(id)
		m := capmoxRe.FindStringSubmatch(conf["smbios1"])
		if m == nil || !uuidRe.MatchString(m[2]) {
			t.Errorf("VM %d: smbios1 %q holds no new version 4 UUID", id, conf["smbios1"])
			continue
		}
		if other, dup := seen[m[2]]; dup {
			t.Errorf("VMs %d and %d share the SMBIOS UUID %s", other, id, m[2])
		}
		seen[m[2]] = id
		if id >= 200 && conf["smbios1"] != "manufacturer=ACME,serial=abc,uuid="+m[2] {
			t.Errorf("clone %d keeps the other fields, sorted: %q", id, conf["smbios1"])
		}
	}
}

// TestCapmoxMachinePath replays the requests capmox v0.9.0 makes through
// go-proxmox v0.6.0 over a machine's life (scheduling on allowed nodes,
// template by tags, clone, config, resize, IP tag, bootstrap ISO, start,
// unmount, delete), with POST and PUT bodies in JSON and the upload in
// multipart as that go-proxmox sends them. Each is served, and none is
// left unserved.
func TestCapmoxMachinePath(t *testing.T) {
	var booted []pvefake.BootingVM
	srv, root := start(t, pvefake.WithCluster("c"), pvefake.WithNodes("pve", "pve2"),
		pvefake.WithBootHook(func(_ context.Context, vm pvefake.BootingVM) error { booted = append(booted, vm); return nil }))
	must(t, wait(root.NodeRef("pve").NewVirtualMachine(ctx, 9000, opt("name", "talos"), opt("scsi0", "local-lvm:2"),
		opt("net0", "virtio,bridge=vmbr0"), opt("tags", "talos;v1"), opt("template", 1))))
	get := func(path string) json.RawMessage {
		t.Helper()
		var out json.RawMessage
		must(t, root.Get(ctx, path, &out))
		return out
	}
	post := func(method, path string, body map[string]any) string {
		t.Helper()
		status, env := rawJSON(t, srv, method, path, body)
		if status != "200 OK" {
			t.Fatalf("%s %s %v: %s %v", method, path, body, status, env)
		}
		upid, _ := env["data"].(string)
		if strings.HasPrefix(upid, "UPID:") {
			if exit, log := taskEnd(t, root, upid); exit != "OK" {
				t.Fatalf("%s %s: task %s\n%s", method, path, exit, log)
			}
		}
		return upid
	}
	get("/version")
	get("/cluster/status")
	get("/cluster/nextid?vmid=101")
	for _, n := range []string{"pve", "pve2"} { // the scheduler, per allowed node
		get("/nodes/" + n + "/status")
		get("/nodes/" + n + "/qemu")
		get("/nodes/" + n + "/lxc")
	}
	get("/cluster/resources?type=vm")
	get("/nodes/pve/qemu/9000/status/current")
	get("/nodes/pve/qemu/9000/config")
	post("POST", "/nodes/pve/qemu/9000/clone", map[string]any{"newid": 101, "name": "w0", "full": 1, "target": "pve"})
	get("/nodes/pve/qemu/101/status/current")
	var conf struct{ Data map[string]any }
	must(t, json.Unmarshal(get("/nodes/pve/qemu/101/config"), &conf.Data))
	post("POST", "/nodes/pve/qemu/101/config", map[string]any{"cores": 2, "memory": 4096, "net0": "virtio,bridge=vmbr0"})
	post("PUT", "/nodes/pve/qemu/101/resize", map[string]any{"disk": "scsi0", "size": "20G"})
	post("POST", "/nodes/pve/qemu/101/config", map[string]any{"tags": "talos;v1;ip_net0_10.0.0.5"})
	get("/nodes/pve/storage")
	iso := isoBytes()
	body, ctype := multipartBody(t, [][2]string{{"content", "iso"}}, "filename", "user-data-101.iso", iso)
	if status, _, _, err := postUpload(t, srv, rootAuth(srv), "/nodes/pve/storage/local/upload", ctype, body); err != nil || status != "200 OK" {
		t.Fatalf("upload: %s %v", status, err)
	}
	post("POST", "/nodes/pve/qemu/101/config", map[string]any{"tags": "go-proxmox+cloud-init;ip_net0_10.0.0.5;talos;v1"})
	post("POST", "/nodes/pve/qemu/101/config", map[string]any{"ide0": "local:iso/user-data-101.iso,media=cdrom", "boot": conf.Data["boot"].(string) + ";ide0"})
	post("POST", "/nodes/pve/qemu/101/status/start", nil)
	if len(booted) != 1 {
		t.Fatalf("the machine boots: %d", len(booted))
	}
	if _, data, ok := booted[0].CDROM("ide0"); !ok || !bytes.Equal(data, iso) {
		t.Error("its boot sees the bootstrap ISO")
	}
	get("/nodes/pve/qemu/101/status/current")
	post("POST", "/nodes/pve/qemu/101/config", map[string]any{"ide0": "none,media=cdrom"})
	get("/nodes/pve/storage/local/content/local:iso/user-data-101.iso")
	post("DELETE", "/nodes/pve/storage/local/content/local:iso/user-data-101.iso", nil)
	post("POST", "/nodes/pve/qemu/101/config", map[string]any{"tags": "ip_net0_10.0.0.5;talos;v1"})
	post("POST", "/nodes/pve/qemu/101/status/stop", nil)
	post("DELETE", "/nodes/pve/qemu/101", nil)
	get("/cluster/nextid?vmid=101")
	if got := srv.Unserved(); len(got) != 0 {
		t.Errorf("requests not served: %v", got)
	}
	if got := srv.BootErrors(); len(got) != 0 {
		t.Errorf("boot failures: %v", got)
	}
}
