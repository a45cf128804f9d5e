package pvefake_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestStorageConfigMethods: /storage as pve-storage's Config.pm serves it,
// each refusal next to a call that is admitted: Datastore.Allocate on
// /storage to create and delete, on /storage/<id> to read; the create's
// schema, then the type's check_config (plain 500s), then the lock's
// duplicate check.
func TestStorageConfigMethods(t *testing.T) {
	dir := func(extra map[string]any) map[string]any {
		b := map[string]any{"storage": "isos", "type": "dir", "path": "/srv/isos"}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	user := map[string][]string{"/": {"PVEDatastoreUser"}}
	cases := map[string]endpointCase{
		"CreateRoot":     {reason: "root creates a dir storage", method: "POST", path: "/storage", body: dir(nil)},
		"CreateAdmitted": {reason: "Datastore.Allocate on /storage admits a create", grants: map[string][]string{"/storage": {"PVEDatastoreAdmin"}}, method: "POST", path: "/storage", body: dir(nil)},
		"CreateRefused": {reason: "Datastore.AllocateSpace and Audit do not", grants: user, method: "POST", path: "/storage", body: dir(nil),
			want: "Permission check failed (/storage, Datastore.Allocate)"},
		"CreateOnOneStorage": {reason: "Datastore.Allocate on another storage does not either", grants: map[string][]string{"/storage/local": {"PVEDatastoreAdmin"}},
			method: "POST", path: "/storage", body: dir(nil), want: "Permission check failed (/storage, Datastore.Allocate)"},
		"UnknownParameter": {reason: "a parameter outside the schema is refused by name", method: "POST", path: "/storage", body: dir(map[string]any{"pool": "tank"}),
			want: "Parameter verification failed. | pool: property is not defined in schema and the schema does not allow additional properties"},
		"UnknownType": {reason: "type is an enumeration of the plugins", method: "POST", path: "/storage", body: dir(map[string]any{"type": "ext4"}),
			want: "type: value 'ext4' does not have a value in the enumeration 'btrfs, cephfs, cifs, dir, esxi, iscsi, iscsidirect, lvm, lvmthin, nfs, pbs, rbd, zfs, zfspool'"},
		"BadContent": {reason: "content is pve-storage-content-list", method: "POST", path: "/storage", body: dir(map[string]any{"content": "iso,movies"}),
			want: "content: invalid format - invalid content type 'movies'"},
		"RelativePath": {reason: "path is pve-storage-path", method: "POST", path: "/storage", body: dir(map[string]any{"path": "srv/isos"}),
			want: "path: invalid format - value does not look like a valid absolute path"},
		"BadVG": {reason: "vgname is pve-storage-vgname", method: "POST", path: "/storage", body: map[string]any{"storage": "thin", "type": "lvmthin", "vgname": "-vg", "thinpool": "data"},
			want: "vgname: invalid format - lvm name '-vg' contains illegal characters"},
		"OptionOfAnotherType": {reason: "check_value: a dir storage takes no vgname", method: "POST", path: "/storage", body: dir(map[string]any{"vgname": "pve"}),
			want: "unexpected property 'vgname'"},
		"SharedLVMThin": {reason: "LvmThinPlugin's options have no shared", method: "POST", path: "/storage",
			body: map[string]any{"storage": "thin", "type": "lvmthin", "vgname": "pve", "thinpool": "data", "shared": "1"}, want: "unexpected property 'shared'"},
		"MissingPath": {reason: "a dir storage needs its path", method: "POST", path: "/storage", body: map[string]any{"storage": "isos", "type": "dir"},
			want: "missing value for required option 'path'"},
		"MissingThinpool": {reason: "an lvmthin storage needs its thin pool", method: "POST", path: "/storage", body: map[string]any{"storage": "thin", "type": "lvmthin", "vgname": "pve"},
			want: "missing value for required option 'thinpool'"},
		"IllegalDirPath": {reason: "DirPlugin's check_config takes a narrower path", method: "POST", path: "/storage", body: dir(map[string]any{"path": "/srv/my isos"}),
			want: "illegal path for directory storage: /srv/my isos"},
		"NoContentLeft": {reason: "iso is dropped from an lvmthin storage, and none is not its content", method: "POST", path: "/storage",
			body: map[string]any{"storage": "thin", "type": "lvmthin", "vgname": "pve", "thinpool": "data", "content": "iso"},
			want: "storage does not support content type 'none'"},
		"NoneAndMore": {reason: "none goes alone", method: "POST", path: "/storage", body: dir(map[string]any{"content": "none,iso"}),
			want: "unable to combine 'none' with other content types"},
		"Duplicate": {reason: "an existing ID, under storage.cfg's lock", method: "POST", path: "/storage", body: dir(map[string]any{"storage": "local"}),
			want: "create storage failed: storage ID 'local' already defined"},
		"UnmodelledType": {reason: "types the server does not model say so", method: "POST", path: "/storage", body: map[string]any{"storage": "ceph", "type": "rbd"},
			want: "storage type 'rbd' is not implemented by the Proxmox VE API fake"},
		"ReadRoot": {reason: "root reads a configuration", method: "GET", path: "/storage/local"},
		"ReadAdmitted": {reason: "Datastore.Allocate on the storage admits a read", grants: map[string][]string{"/storage/local": {"PVEDatastoreAdmin"}},
			method: "GET", path: "/storage/local"},
		"ReadRefused": {reason: "Datastore.Audit does not", grants: user, method: "GET", path: "/storage/local",
			want: "Permission check failed (/storage/local, Datastore.Allocate)"},
		"ReadMissing": {reason: "storage_config dies on an unknown ID", method: "GET", path: "/storage/nope", want: "storage 'nope' does not exist"},
		"DeleteRoot":  {reason: "root deletes a storage", method: "DELETE", path: "/storage/local"},
		"DeleteAdmitted": {reason: "Datastore.Allocate on /storage admits a delete", grants: map[string][]string{"/storage": {"PVEDatastoreAdmin"}},
			method: "DELETE", path: "/storage/local"},
		"DeleteRefused": {reason: "Datastore.Allocate on the storage alone does not", grants: map[string][]string{"/storage/local": {"PVEDatastoreAdmin"}},
			method: "DELETE", path: "/storage/local", want: "Permission check failed (/storage, Datastore.Allocate)"},
		"DeleteMissing": {reason: "an unknown ID, under the lock", method: "DELETE", path: "/storage/nope",
			want: "delete storage failed: storage 'nope' does not exist"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, c := start(t)
			if tc.grants != nil {
				c = grantee(t, srv, "u@pve", tc.grants)
			}
			err := request(c, tc.method, tc.path, tc.body)
			wantMessage(t, tc.reason, err, tc.want)
			wantDenied(t, srv, tc.reason, tc.want)
		})
	}
}

// storageConfig reads GET /storage/{id} as root.
func storageConfig(t *testing.T, root *proxmox.Client, id string) map[string]any {
	t.Helper()
	var cfg map[string]any
	must(t, root.Get(ctx, "/storage/"+id, &cfg))
	if cfg["digest"] == "" || cfg["digest"] == nil {
		t.Errorf("storage %s has a digest: %v", id, cfg)
	}
	delete(cfg, "digest")
	return cfg
}

// TestStorageConfigContents: what a create writes, as GET /storage/{id}
// reads it back: the type's default content, content types the type does
// not support dropped, nfs shared and mounted under /mnt/pve, a dir path
// made canonical; the seeded storages as PVE's installer writes them.
func TestStorageConfigContents(t *testing.T) {
	_, root := start(t, pvefake.WithNodes("pve", "pve2"))
	for _, body := range []map[string]any{
		{"storage": "isos", "type": "dir", "path": "//srv/./isos/", "content": "iso,vztmpl", "nodes": "pve2", "shared": "0"},
		{"storage": "vg", "type": "lvm", "vgname": "vg0", "content": "images,iso", "shared": "1"},
		{"storage": "thin", "type": "lvmthin", "vgname": "vg0", "thinpool": "tp", "disable": "1"},
		{"storage": "nas", "type": "nfs", "server": "192.0.2.10", "export": "/export/pve", "nodes": ""},
	} {
		var res map[string]any
		must(t, root.Post(ctx, "/storage", body, &res))
		if diff := cmp.Diff(map[string]any{"storage": body["storage"], "type": body["type"]}, res); diff != "" {
			t.Errorf("the create answers the ID and type: -want +got:\n%s", diff)
		}
	}
	want := map[string]map[string]any{
		"local":     {"storage": "local", "type": "dir", "path": "/var/lib/vz", "content": "backup,import,iso,snippets,vztmpl"},
		"local-lvm": {"storage": "local-lvm", "type": "lvmthin", "vgname": "pve", "thinpool": "data", "content": "images,rootdir"},
		"isos":      {"storage": "isos", "type": "dir", "path": "/srv/isos", "content": "iso,vztmpl", "nodes": "pve2"},
		"vg":        {"storage": "vg", "type": "lvm", "vgname": "vg0", "content": "images", "shared": float64(1)},
		"thin":      {"storage": "thin", "type": "lvmthin", "vgname": "vg0", "thinpool": "tp", "content": "images,rootdir", "disable": float64(1)},
		"nas": {"storage": "nas", "type": "nfs", "server": "192.0.2.10", "export": "/export/pve", "path": "/mnt/pve/nas",
			"content": "images", "shared": float64(1)},
	}
	for id, w := range want {
		if diff := cmp.Diff(w, storageConfig(t, root, id)); diff != "" {
			t.Errorf("GET /storage/%s: -want +got:\n%s", id, diff)
		}
	}
	var list []map[string]any
	must(t, root.Get(ctx, "/storage?type=lvmthin", &list))
	var ids []string
	for _, e := range list {
		ids = append(ids, e["storage"].(string))
	}
	if diff := cmp.Diff([]string{"local-lvm", "thin"}, ids); diff != "" {
		t.Errorf("GET /storage?type=lvmthin: -want +got:\n%s", diff)
	}
	nodeStorages := func(node string) []string {
		var out []string
		l, err := root.NodeRef(node).Storages(ctx)
		must(t, err)
		for _, s := range l {
			out = append(out, s.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"isos", "local", "local-lvm", "nas", "vg"}, nodeStorages("pve2")); diff != "" {
		t.Errorf("pve2's storages (thin is disabled): -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"local", "local-lvm", "nas", "vg"}, nodeStorages("pve")); diff != "" {
		t.Errorf("pve's storages (isos is pve2's only): -want +got:\n%s", diff)
	}
}

// TestStorageIndexVisibility: GET /storage lists the storages on which the
// caller has Datastore.Audit or Datastore.AllocateSpace, each with the
// digest of the whole configuration, which a change moves.
func TestStorageIndexVisibility(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "files", Type: "dir", Content: []string{"iso"}}))
	c := grantee(t, srv, "u@pve", map[string][]string{"/storage/files": {"PVEDatastoreUser"}})
	list, err := c.ClusterStorages(ctx)
	must(t, err)
	if len(list) != 1 || list[0].Storage != "files" || list[0].Path != "/mnt/pve/files" || list[0].Content != "iso" {
		t.Fatalf("the user sees files only: %s", dump(list))
	}
	before := list[0].Digest
	all, err := root.ClusterStorages(ctx)
	must(t, err)
	if len(all) != 3 {
		t.Errorf("root sees the three storages: %s", dump(all))
	}
	must(t, root.Post(ctx, "/storage", map[string]any{"storage": "more", "type": "dir", "path": "/srv/more"}, nil))
	if _, err := c.ClusterStorage(ctx, "files"); !proxmox.IsForbidden(err) {
		t.Errorf("reading one configuration needs Datastore.Allocate: %v", err)
	}
	list, err = c.ClusterStorages(ctx)
	must(t, err)
	if len(list) != 1 || list[0].Digest == before {
		t.Errorf("the digest moves with storage.cfg: %s, before %s", dump(list), before)
	}
}

func dump(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestCreatedStorageTakesUploads: a dir storage made through the API with
// content iso is the same record a seeded one is: listed on the node,
// taking capmox's ISO upload into its own path, listing and reading it.
// Without iso (the dir default is images,rootdir) the upload is refused.
func TestCreatedStorageTakesUploads(t *testing.T) {
	srv, root := start(t)
	must(t, root.Post(ctx, "/storage", map[string]any{"storage": "isos", "type": "dir", "path": "/srv/isos", "content": "iso"}, nil))
	must(t, root.Post(ctx, "/storage", map[string]any{"storage": "disks", "type": "dir", "path": "/srv/disks"}, nil))
	var st map[string]any
	must(t, root.Get(ctx, "/nodes/pve/storage/isos/status", &st))
	if st["content"] != "iso" || st["type"] != "dir" || st["total"] != float64(1<<40) {
		t.Errorf("the node shows the new storage with the seed's capacity: %s", dump(st))
	}
	iso := isoBytes()
	body, ctype := multipartBody(t, [][2]string{{"content", "iso"}}, "filename", "user-data-101.iso", iso)
	status, resp, _, err := postUpload(t, srv, rootAuth(srv), "/nodes/pve/storage/isos/upload", ctype, body)
	must(t, err)
	var env struct{ Data string }
	if status != "200 OK" || json.Unmarshal([]byte(resp), &env) != nil {
		t.Fatalf("the upload answers a UPID: %s %s", status, resp)
	}
	if exit, log := taskEnd(t, root, env.Data); exit != "OK" || !strings.Contains(log, "target file: /srv/isos/template/iso/user-data-101.iso") {
		t.Fatalf("the worker writes under the storage's path: %s\n%s", exit, log)
	}
	const volid = "isos:iso/user-data-101.iso"
	if got, ok := srv.VolumeData("", volid); !ok || len(got) != len(iso) {
		t.Fatalf("the server keeps the ISO: %d bytes, %v", len(got), ok)
	}
	content, err := root.NodeRef("pve").StorageRef("isos").GetContent(ctx)
	must(t, err)
	if len(content) != 1 || content[0].Volid != volid || content[0].Size != uint64(len(iso)) {
		t.Errorf("the content list shows the ISO: %s", dump(content))
	}
	var info map[string]any
	must(t, root.Get(ctx, "/nodes/pve/storage/isos/content/"+volid, &info))
	if info["path"] != "/srv/isos/template/iso/user-data-101.iso" {
		t.Errorf("the ISO's path is under the storage's: %v", info)
	}
	body, ctype = multipartBody(t, [][2]string{{"content", "iso"}}, "filename", "a.iso", iso)
	status, _, _, err = postUpload(t, srv, rootAuth(srv), "/nodes/pve/storage/disks/upload", ctype, body)
	must(t, err)
	if status != "500 storage 'disks' does not support 'iso' content" {
		t.Errorf("a dir storage made without content holds images and rootdir only: %s", status)
	}
}

// TestStorageDelete: DELETE /storage/{id} removes the section and, as
// remove_storage_access does, the ACL entries on /storage/<id> and the
// storage's pool memberships. It does not look at guests: one whose disk
// is on the storage does not stop it, and keeps its configuration.
func TestStorageDelete(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "tank", Type: "lvmthin", Content: []string{"images"}}))
	must(t, srv.AddPool("mine", "", nil, []string{"tank"}))
	must(t, srv.SetACL("/storage/tank", pveacl.KindUser, "root@pam", true, "PVEDatastoreUser"))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Disks: map[string]string{"scsi0": "tank:1"}}))
	must(t, root.Delete(ctx, "/storage/tank", nil))
	wantMessage(t, "the configuration is gone", root.Get(ctx, "/storage/tank", &map[string]any{}), "storage 'tank' does not exist")
	cfg := srv.AccessConfig()
	for k := range cfg.ACL {
		if k.Path == "/storage/tank" {
			t.Errorf("the ACL entry on /storage/tank is removed: %+v", k)
		}
	}
	if got := cfg.Pools["mine"].Storages; len(got) != 0 {
		t.Errorf("the pool no longer lists tank: %v", got)
	}
	if conf, _, ok := srv.VMConfig(100); !ok || !strings.HasPrefix(conf["scsi0"], "tank:vm-100-disk-0") {
		t.Errorf("the guest keeps its disk: %v %v", conf["scsi0"], ok)
	}
	list, err := root.ClusterStorages(ctx)
	must(t, err)
	if len(list) != 2 {
		t.Errorf("local and local-lvm are left: %s", dump(list))
	}
}

// TestGoProxmoxClusterStorage: go-proxmox v0.10 reads the answer of a
// create as a UPID, but Config.pm's create answers {storage, type}, so
// NewClusterStorage reports a decode error after the storage was made,
// against PVE as here; DeleteClusterStorage reads PVE's null as no task.
func TestGoProxmoxClusterStorage(t *testing.T) {
	_, root := start(t)
	_, err := root.NewClusterStorage(ctx, proxmox.ClusterStorageOptions{Name: "storage", Value: "isos"},
		proxmox.ClusterStorageOptions{Name: "type", Value: "dir"}, proxmox.ClusterStorageOptions{Name: "path", Value: "/srv/isos"})
	wantMessage(t, "the object does not decode as a UPID", err, "cannot unmarshal object")
	if _, err := root.ClusterStorage(ctx, "isos"); err != nil {
		t.Fatalf("the storage was made all the same: %v", err)
	}
	task, err := root.DeleteClusterStorage(ctx, "isos")
	if err != nil || task != nil {
		t.Errorf("the delete answers null, no task: %v %v", task, err)
	}
	if _, err := root.ClusterStorage(ctx, "isos"); err == nil {
		t.Error("the storage is gone")
	}
}
