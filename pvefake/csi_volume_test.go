package pvefake_test

import (
	"net/url"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestCSIVolumeCalls takes a volume through the calls the Proxmox CSI
// controller makes, with the privileges pveacl gives the tenant's CSI
// token (CozyCSIStorage on the storage, CozyCSI on the pool): pvesm
// alloc's POST .../content creates vm-9999-<pvc> owned by VMID 9999, a
// config update attaches it to a VM of the pool as scsi1, resize grows
// it, unlink takes it out of the configuration without making it an
// unused disk of the VM (it owns none of it), and DELETE frees it. A
// storage outside the grant is PVE's 403; a second alloc of the same name
// is lvcreate's failure; a name of another owner is the plugin's refusal.
func TestCSIVolumeCalls(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "tenant-disks", Type: "lvmthin", VGName: "pve", ThinPool: "tenant"}))
	must(t, srv.AddRole("CozyCSI", "VM.Audit", "VM.Config.Disk"))
	must(t, srv.AddRole("CozyCSIStorage", "Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.Audit"))
	must(t, srv.AddPool("tenant", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 101, Pool: "tenant", Running: true, Disks: map[string]string{"scsi0": "local-lvm:8"}}))
	csi := grantee(t, srv, "csi@pve", map[string][]string{"/pool/tenant": {"CozyCSI"}, "/storage/tenant-disks": {"CozyCSIStorage"}})
	_ = root

	alloc := func(c *proxmox.Client, storage, name string) (string, error) {
		var volid string
		err := c.Post(ctx, "/nodes/pve/storage/"+storage+"/content",
			map[string]any{"vmid": 9999, "node": "pve", "storage": storage, "filename": name, "size": "1048576"}, &volid)
		return volid, err
	}
	volid, err := alloc(csi, "tenant-disks", "vm-9999-pvc-1")
	must(t, err)
	if volid != "tenant-disks:vm-9999-pvc-1" {
		t.Fatalf("alloc returns the volid: %q", volid)
	}
	if _, err := alloc(csi, "local-lvm", "vm-9999-pvc-2"); !proxmox.IsForbidden(err) {
		t.Errorf("a storage outside the grant is forbidden: %v", err)
	}
	status, body := raw(t, srv, "POST", "/nodes/pve/storage/tenant-disks/content", "PVEAPIToken="+srv.RootTokenID+"="+srv.RootSecret,
		strings.NewReader(url.Values{"vmid": {"9999"}, "filename": {"vm-9999-pvc-1"}, "size": {"1G"}}.Encode()))
	if !strings.Contains(status, `lvcreate 'pve/vm-9999-pvc-1' error:   Logical Volume "vm-9999-pvc-1" already exists in volume group "pve"`) {
		t.Errorf("a second alloc is lvcreate's failure: %s %s", status, body)
	}
	status, _ = raw(t, srv, "POST", "/nodes/pve/storage/tenant-disks/content", "PVEAPIToken="+srv.RootTokenID+"="+srv.RootSecret,
		strings.NewReader(url.Values{"vmid": {"9999"}, "filename": {"vm-101-pvc-3"}, "size": {"1G"}}.Encode()))
	if !strings.Contains(status, "illegal name 'vm-101-pvc-3' - should be 'vm-9999-*'") {
		t.Errorf("a name of another owner is refused: %s", status)
	}
	vols := srv.Volumes()
	var size uint64
	for _, v := range vols {
		if v.VolID == volid {
			size = v.Size
		}
	}
	if size != 1<<30 {
		t.Errorf("the volume has 1048576 KiB: %d bytes", size)
	}

	task, err := csi.NodeRef("pve").VirtualMachineRef(101).Config(ctx, proxmox.VirtualMachineOption{Name: "scsi1", Value: volid + ",backup=0,iothread=1,wwn=0x5056432d49443031"})
	must(t, wait(task, err))
	conf, _, _ := srv.VMConfig(101)
	if !strings.HasPrefix(conf["scsi1"], volid+",") {
		t.Fatalf("the VM's configuration gains the disk: %q", conf["scsi1"])
	}
	var upid string
	must(t, csi.Put(ctx, "/nodes/pve/qemu/101/resize", map[string]string{"disk": "scsi1", "size": "2048M"}, &upid))
	if st, log := taskEnd(t, root, upid); st != "OK" {
		t.Fatalf("resize: %s\n%s", st, log)
	}
	conf, _, _ = srv.VMConfig(101)
	if !strings.Contains(conf["scsi1"], "size=2G") {
		t.Errorf("the disk grows: %q", conf["scsi1"])
	}
	must(t, csi.Put(ctx, "/nodes/pve/qemu/101/unlink", map[string]string{"idlist": "scsi1"}, nil))
	conf, _, _ = srv.VMConfig(101)
	if _, ok := conf["scsi1"]; ok || strings.Contains(strings.Join(mapValues(conf), " "), "pvc-1") {
		t.Errorf("unlink takes the disk out, and no unusedN keeps it: %v", conf)
	}
	must(t, csi.Delete(ctx, "/nodes/pve/storage/tenant-disks/content/"+volid, &upid))
	if st, log := taskEnd(t, root, upid); st != "OK" {
		t.Fatalf("free: %s\n%s", st, log)
	}
	for _, v := range srv.Volumes() {
		if v.VolID == volid {
			t.Errorf("the volume is freed: %+v", v)
		}
	}
	if u := srv.Unserved(); len(u) > 0 {
		t.Errorf("every call is served: %v", u)
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
