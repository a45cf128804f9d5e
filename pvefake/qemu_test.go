package pvefake_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

func opt(name string, value any) proxmox.VirtualMachineOption {
	return proxmox.VirtualMachineOption{Name: name, Value: value}
}

func TestCreateWithImport(t *testing.T) {
	srv, root := start(t)
	_, err := srv.AddVolume(pvefake.VolumeSpec{Storage: "local", Content: "import", Name: "import/talos.raw", Size: 1536 << 20, Format: "raw"})
	must(t, err)
	must(t, srv.AddPool("templates", "", nil, nil))
	node := root.NodeRef("pve")
	err = wait(node.NewVirtualMachine(ctx, 9000, opt("scsi0", "local-lvm:0,import-from=local:import/talos.raw,discard=on"),
		opt("net0", "virtio,bridge=vmbr0"), opt("tags", "talos;v1-11,k8s"), opt("pool", "templates"), opt("name", "talos")))
	must(t, err)
	conf, _, ok := srv.VMConfig(9000)
	if !ok {
		t.Fatal("the guest must exist")
	}
	if got := conf["scsi0"]; got != "local-lvm:vm-9000-disk-0,discard=on,size=1536M" {
		t.Errorf("the imported disk takes the source's size: scsi0 = %q", got)
	}
	if got := conf["tags"]; got != "k8s;talos;v1-11" {
		t.Errorf("tags are stored sorted and ';'-separated: %q", got)
	}
	if !strings.HasPrefix(conf["net0"], "virtio=BC:24:11:") || !strings.HasPrefix(conf["smbios1"], "uuid=") || conf["vmgenid"] == "" {
		t.Errorf("a new guest gets a MAC, an SMBIOS UUID and a vmgenid: %v", conf)
	}
	if p := poolsOf(srv)["templates"].VMs; !cmp.Equal(p, []int{9000}) {
		t.Errorf("pool=templates puts the guest in the pool, members %v", p)
	}
	err = wait(node.NewVirtualMachine(ctx, 9001, opt("scsi0", "local-lvm:0,import-from=local:import/missing.raw")))
	wantMessage(t, "a missing import source fails the worker", err, "task failed: unable to create VM 9001 - unable to import 'local:import/missing.raw'")
	if _, _, ok := srv.VMConfig(9001); ok {
		t.Error("a failed create leaves no guest")
	}
	err = wait(node.NewVirtualMachine(ctx, 9000))
	wantMessage(t, "VMIDs are unique", err, "unable to create VM 9000 - VM 9000 already exists on node 'pve'")
}

func TestCreatePermissions(t *testing.T) {
	cases := map[string]struct {
		reason string
		grants map[string][]string
		opts   []proxmox.VirtualMachineOption
		err    string
	}{
		"NoAllocate": {reason: "VM.Allocate on the VM or the pool is required",
			opts: []proxmox.VirtualMachineOption{opt("pool", "p")}, err: "Permission check failed"},
		"PoolAllocate": {reason: "VM.Allocate on the pool is enough for a guest created in it",
			grants: map[string][]string{"/pool/p": {"PVEVMAdmin"}}, opts: []proxmox.VirtualMachineOption{opt("pool", "p"), opt("memory", "2048")}},
		"NoPool": {reason: "without pool=, VM.Allocate on the pool does not help",
			grants: map[string][]string{"/pool/p": {"PVEVMAdmin"}}, err: "Permission check failed"},
		"Storage": {reason: "a new disk needs Datastore.AllocateSpace on its storage",
			grants: map[string][]string{"/pool/p": {"PVEVMAdmin"}}, opts: []proxmox.VirtualMachineOption{opt("pool", "p"), opt("scsi0", "local-lvm:4")},
			err: "Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)"},
		"VLAN": {reason: "a tagged NIC needs SDN.Use on the VLAN",
			grants: map[string][]string{"/pool/p": {"PVEVMAdmin"}}, opts: []proxmox.VirtualMachineOption{opt("pool", "p"), opt("net0", "virtio,bridge=vmbr0,tag=100")},
			err: "Permission check failed (/sdn/zones/localnetwork/vmbr0/100, SDN.Use)"},
		"VLANGranted": {reason: "SDN.Use on the VLAN allows it",
			grants: map[string][]string{"/pool/p": {"PVEVMAdmin"}, "/sdn/zones/localnetwork/vmbr0/100": {"PVESDNUser"}},
			opts:   []proxmox.VirtualMachineOption{opt("pool", "p"), opt("net0", "virtio,bridge=vmbr0,tag=100")}},
		"RootOnly": {reason: "some options are for root@pam only, tokens included",
			grants: map[string][]string{"/": {"Administrator"}}, opts: []proxmox.VirtualMachineOption{opt("args", "-no-reboot")},
			err: "only root can set 'args' config"},
		"MissingPool": {reason: "an unknown pool is a permission failure naming it",
			grants: map[string][]string{"/": {"Administrator"}}, opts: []proxmox.VirtualMachineOption{opt("pool", "nope")},
			err: "Permission check failed (pool 'nope' does not exist)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, _ := start(t)
			must(t, srv.AddPool("p", "", nil, nil))
			c := grantee(t, srv, "u@pve", tc.grants)
			err := wait(c.NodeRef("pve").NewVirtualMachine(ctx, 100, tc.opts...))
			wantMessage(t, tc.reason, err, tc.err)
			if _, _, made := srv.VMConfig(100); made != (tc.err == "") {
				t.Errorf("%s: guest exists = %v", tc.reason, made)
			}
		})
	}
}

func TestCloneAndTemplate(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "tank", Type: "zfspool", Content: []string{"images"}}))
	must(t, srv.AddPool("t1", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Name: "tmpl", Disks: map[string]string{"scsi0": "tank:8"},
		Config: map[string]string{"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0", "ide2": "local-lvm:cloudinit,media=cdrom"}}))
	node := root.NodeRef("pve")
	tmpl := node.VirtualMachineRef(9000)
	must(t, wait(tmpl.ConvertToTemplate(ctx)))
	steps := []struct {
		reason string
		opts   proxmox.VirtualMachineCloneOptions
		err    string
		disk   string
	}{
		{"a template clones linked by default", proxmox.VirtualMachineCloneOptions{NewID: 101, Pool: "t1"}, "", "tank:base-9000-disk-0/vm-101-disk-0,size=8G"},
		{"full=1 copies", proxmox.VirtualMachineCloneOptions{NewID: 102, Full: true, Name: "w2"}, "", "tank:vm-102-disk-0,size=8G"},
		{"full clones may change storage", proxmox.VirtualMachineCloneOptions{NewID: 103, Full: true, Storage: "local-lvm"}, "", "local-lvm:vm-103-disk-0,size=8G"},
		{"linked clones keep the storage", proxmox.VirtualMachineCloneOptions{NewID: 104, Storage: "local-lvm"}, "parameter 'storage' not allowed for linked clones", ""},
		{"the new VMID must be free", proxmox.VirtualMachineCloneOptions{NewID: 101}, "unable to create VM 101: config file already exists", ""},
	}
	for _, s := range steps {
		_, task, err := tmpl.Clone(ctx, &s.opts)
		wantMessage(t, s.reason, wait(task, err), s.err)
		if s.disk != "" {
			if conf, _, _ := srv.VMConfig(s.opts.NewID); conf["scsi0"] != s.disk {
				t.Errorf("%s: scsi0 = %q, want %q", s.reason, conf["scsi0"], s.disk)
			}
		}
	}
	uuids := map[string]bool{}
	for _, id := range []int{9000, 101, 102, 103} {
		conf, _, _ := srv.VMConfig(id)
		uuids[conf["smbios1"]] = true
		if id != 9000 && (conf["template"] != "" || conf["net0"] == "virtio=BC:24:11:00:00:01,bridge=vmbr0") {
			t.Errorf("clone %d is not a template and gets a new MAC: %v", id, conf)
		}
	}
	if len(uuids) != 4 {
		t.Errorf("every clone gets its own SMBIOS UUID (providerID): %v", uuids)
	}
	if c, _, _ := srv.VMConfig(101); c["name"] != "Copy-of-VM-tmpl" || !cmp.Equal(poolsOf(srv)["t1"].VMs, []int{101}) {
		t.Errorf("the default name and the pool parameter: %v, pool %v", c["name"], poolsOf(srv)["t1"].VMs)
	}
	var upid proxmox.UPID
	err := root.Post(ctx, "/nodes/pve/qemu/102/clone", map[string]any{"newid": 105, "full": 0}, &upid)
	wantMessage(t, "a plain VM has no base volume to link to", err, "Linked clone feature is not supported for 'tank:vm-102-disk-0' (scsi0)")
	err = wait(tmpl.Delete(ctx, nil))
	wantMessage(t, "a template with linked clones on ZFS stays", err, "base volume 'base-9000-disk-0' is still in use by linked clones")
	if _, _, ok := srv.VMConfig(9000); !ok {
		t.Error("the template survives the failed destroy")
	}
	must(t, wait(node.VirtualMachineRef(101).Delete(ctx, nil)))
	must(t, wait(tmpl.Delete(ctx, nil)))
	for _, v := range srv.Volumes() {
		if v.Owner == 9000 || v.Owner == 101 {
			t.Errorf("destroyed guests leave no volumes, found %+v", v)
		}
	}
}

func TestLinkedClonesOnThinPools(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Template: true, Disks: map[string]string{"scsi0": "local-lvm:2"}}))
	tmpl := root.NodeRef("pve").VirtualMachineRef(9000)
	_, task, err := tmpl.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101})
	must(t, wait(task, err))
	if conf, _, _ := srv.VMConfig(101); conf["scsi0"] != "local-lvm:vm-101-disk-0,size=2G" {
		t.Errorf("an LVM-thin linked clone is a thin snapshot with a plain name: %q", conf["scsi0"])
	}
	must(t, wait(tmpl.Delete(ctx, nil)))
	if _, _, ok := srv.VMConfig(101); !ok {
		t.Error("LVM-thin lets the template go while its clone lives")
	}
}

func TestFailNextTask(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Template: true, Disks: map[string]string{"scsi0": "local-lvm:4"}}))
	srv.FailNextTask("qmclone", "clone failed: storage 'local-lvm' is offline")
	_, task, err := root.NodeRef("pve").VirtualMachineRef(9000).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101})
	err = wait(task, err)
	var tf *proxmox.TaskFailedError
	if !errors.As(err, &tf) || tf.ExitStatus != "clone failed: storage 'local-lvm' is offline" {
		t.Fatalf("go-proxmox must report the failed task with its exit status, got %v", err)
	}
	if _, _, ok := srv.VMConfig(101); ok {
		t.Error("a failed clone leaves no guest")
	}
	log, err := task.Log(ctx, 0, 50)
	must(t, err)
	if last := log[len(log)-1]; last != "TASK ERROR: clone failed: storage 'local-lvm' is offline" {
		t.Errorf("the log ends with the error line, got %q", last)
	}
	_, task, err = root.NodeRef("pve").VirtualMachineRef(9000).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101})
	wantMessage(t, "the failure is consumed by one task", wait(task, err), "")
}

func TestResizeAndConfig(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddPool("p", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Pool: "p", Disks: map[string]string{"scsi0": "local-lvm:4"}, Config: map[string]string{"memory": "2048"}}))
	vm := root.NodeRef("pve").VirtualMachineRef(100)
	steps := []struct {
		reason string
		do     func() error
		err    string
	}{
		{"grow by 1G", func() error { return wait(vm.ResizeDisk(ctx, "scsi0", "+1G")) }, ""},
		{"shrinking fails in the worker", func() error { return wait(vm.ResizeDisk(ctx, "scsi0", "1G")) }, "task failed: shrinking disks is not supported"},
		{"a missing disk fails in the worker", func() error { return wait(vm.ResizeDisk(ctx, "scsi1", "+1G")) }, "task failed: disk 'scsi1' does not exist"},
		{"tags by AddTag (async config)", func() error { return wait(vm.AddTag(ctx, "zz")) }, ""},
		{"invalid tags are refused", func() error { return vm.ConfigSync(ctx, opt("tags", "bad tag!")) }, "tags: invalid format - invalid characters in tag"},
		{"sync config", func() error { return vm.ConfigSync(ctx, opt("cores", 4)) }, ""},
		{"unknown options are refused", func() error { return vm.ConfigSync(ctx, opt("colour", "red")) }, "colour: property is not defined in schema"},
	}
	for _, s := range steps {
		wantMessage(t, s.reason, s.do(), s.err)
	}
	conf, _, _ := srv.VMConfig(100)
	want := map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=5G", "tags": "zz", "cores": "4", "memory": "2048"}
	for k, v := range want {
		if conf[k] != v {
			t.Errorf("%s = %q, want %q", k, conf[k], v)
		}
	}
	c := grantee(t, srv, "csi@pve", map[string][]string{"/pool/p": {"PVEVMUser"}})
	err := c.NodeRef("pve").VirtualMachineRef(100).ConfigSync(ctx, opt("memory", "4096"))
	wantMessage(t, "a token without VM.Config.Memory gets the privilege named", err, "Permission check failed (/vms/100, VM.Config.Memory)")
	full, err := c.NodeRef("pve").VirtualMachine(ctx, 100)
	must(t, err)
	if full.VirtualMachineConfig.Cores == nil || *full.VirtualMachineConfig.Cores != 4 || full.Template {
		t.Errorf("go-proxmox reads the config back: %+v", full.VirtualMachineConfig)
	}
}

func TestClusterResourcesAndNextID(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddPool("a", "", nil, []string{"local-lvm"}))
	must(t, srv.AddPool("b", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Pool: "a", Tags: []string{"x"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 101, Pool: "b"}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 102}))
	c := grantee(t, srv, "u@pve", map[string][]string{"/pool/a": {"PVEVMUser"}})
	var list proxmox.ClusterResources
	must(t, c.Get(ctx, "/cluster/resources?type=vm", &list))
	if len(list) != 1 || list[0].VMID != 100 || list[0].Tags != "x" || list[0].Pool != "" {
		t.Errorf("VM.Audit (from the pool) shows one guest, without its pool lacking Pool.Audit: %+v", list)
	}
	var stores proxmox.ClusterResources
	must(t, c.Get(ctx, "/cluster/resources?type=storage", &stores))
	if len(stores) != 0 {
		t.Errorf("PVEVMUser has no Datastore.Audit, so no storage is listed: %+v", stores)
	}
	cl, err := root.Cluster(ctx)
	must(t, err)
	id, err := cl.NextID(ctx)
	if err != nil || id != 103 {
		t.Errorf("nextid is the lowest free VMID from 100: %d, %v", id, err)
	}
	free, err := cl.CheckID(ctx, 100)
	if err != nil || free {
		t.Errorf("CheckID(100) on a taken VMID: %v, %v", free, err)
	}
	if err := c.Get(ctx, "/cluster/status", nil); !proxmox.IsForbidden(err) {
		t.Errorf("cluster status needs Sys.Audit on /: %v", err)
	}
}

func TestFixedSizeDisks(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "files", Type: "dir", Content: []string{"images"}}))
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "tank", Type: "zfspool", Content: []string{"images"}}))
	cases := []struct{ value, want string }{
		{"files:1,efitype=4m,pre-enrolled-keys=1", "files:100/vm-100-disk-0.qcow2,efitype=4m,pre-enrolled-keys=1,size=528K"},
		{"files:1,format=raw", "files:100/vm-100-disk-0.raw,size=128K"},
		{"local-lvm:1,efitype=4m", "local-lvm:vm-100-disk-0,efitype=4m,size=4M"},
		{"tank:1,efitype=4m", "tank:vm-100-disk-0,efitype=4m,size=1M"},
	}
	for _, tc := range cases {
		err := wait(root.NodeRef("pve").NewVirtualMachine(ctx, 100, opt("efidisk0", tc.value), opt("tpmstate0", "files:1,version=v2.0")))
		must(t, err)
		conf, _, _ := srv.VMConfig(100)
		if conf["efidisk0"] != tc.want {
			t.Errorf("efidisk0=%s: the disk holds the OVMF vars file, rounded as the storage allocates: got %q, want %q", tc.value, conf["efidisk0"], tc.want)
		}
		if want := "files:100/vm-100-disk-1.qcow2,size=4M,version=v2.0"; tc.value[:5] == "files" && conf["tpmstate0"] != want {
			t.Errorf("tpmstate0 is 4 MiB whatever the request says: got %q, want %q", conf["tpmstate0"], want)
		}
		must(t, wait(root.NodeRef("pve").VirtualMachineRef(100).Delete(ctx, nil)))
	}
}

func TestTagsAsPVEStoresThem(t *testing.T) {
	srv, root := start(t)
	vm := root.NodeRef("pve")
	must(t, wait(vm.NewVirtualMachine(ctx, 100, opt("tags", "Talos;k8s,TALOS;b"))))
	conf, _, _ := srv.VMConfig(100)
	if conf["tags"] != "b;k8s;talos" {
		t.Errorf("get_unique_tags with the default tag-style lower-cases, sorts and de-duplicates: %q", conf["tags"])
	}
	must(t, wait(vm.VirtualMachineRef(100).Config(ctx, opt("tags", "Zeta;alpha;ALPHA"))))
	conf, _, _ = srv.VMConfig(100)
	if conf["tags"] != "alpha;zeta" {
		t.Errorf("an update stores them the same way: %q", conf["tags"])
	}
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 101, Tags: []string{"B", "a", "b"}}))
	if conf, _, _ := srv.VMConfig(101); conf["tags"] != "a;b" {
		t.Errorf("seeded tags too: %q", conf["tags"])
	}
}

func TestTagPermissionBeforePool(t *testing.T) {
	cases := map[string]struct {
		reason string
		grants map[string][]string
		tags   bool
		err    string
	}{
		"PoolOnly": {reason: "the tags are checked on /vms/<vmid> before the guest joins its pool, so rights through the pool do not count",
			tags: true, err: "task failed: unable to create VM 100 - 403 Permission check failed (/vms/100, VM.Config.Options)"},
		"PoolOnlyNoTags": {reason: "the same create without tags passes"},
		"OnTheVM": {reason: "VM.Config.Options on /vms/<vmid> itself allows the tags",
			grants: map[string][]string{"/vms/100": {"PVEVMAdmin"}}, tags: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, _ := start(t)
			must(t, srv.AddPool("p", "", nil, nil))
			grants := map[string][]string{"/pool/p": {"PVEVMAdmin"}, "/storage/local-lvm": {"PVEDatastoreUser"}}
			maps.Copy(grants, tc.grants)
			c := grantee(t, srv, "u@pve", grants)
			opts := []proxmox.VirtualMachineOption{opt("pool", "p"), opt("scsi0", "local-lvm:1")}
			if tc.tags {
				opts = append(opts, opt("tags", "tenant-a"))
			}
			err := wait(c.NodeRef("pve").NewVirtualMachine(ctx, 100, opts...))
			wantMessage(t, tc.reason, err, tc.err)
			_, _, made := srv.VMConfig(100)
			if made != (tc.err == "") {
				t.Errorf("%s: guest exists = %v", tc.reason, made)
			}
			if vols := srv.Volumes(); made != (len(vols) == 1) {
				t.Errorf("%s: a refused create frees the disk it made: %+v", tc.reason, vols)
			}
			if !made {
				return
			}
			err = wait(c.NodeRef("pve").VirtualMachineRef(100).Config(ctx, opt("tags", "tenant-b")))
			wantMessage(t, "once a member, the pool's rights reach the guest's tags", err, "")
		})
	}
}

// TestCloneKeepsTagsUnchecked: clone_vm copies the source's tags without
// assert_tag_permissions, so a token whose rights come only from the pool
// clones a tagged template into it (where a tagged create is refused).
func TestCloneKeepsTagsUnchecked(t *testing.T) {
	srv, _ := start(t)
	must(t, srv.AddPool("p", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Template: true, Tags: []string{"talos"}, Disks: map[string]string{"scsi0": "local-lvm:1"}}))
	c := grantee(t, srv, "u@pve", map[string][]string{"/pool/p": {"PVEVMAdmin"}, "/vms/9000": {"PVETemplateUser"},
		"/storage/local-lvm": {"PVEDatastoreUser"}})
	_, task, err := c.NodeRef("pve").VirtualMachineRef(9000).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101, Pool: "p"})
	must(t, wait(task, err))
	if conf, _, ok := srv.VMConfig(101); !ok || conf["tags"] != "talos" {
		t.Errorf("the clone carries the template's tags: %v", conf)
	}
}
