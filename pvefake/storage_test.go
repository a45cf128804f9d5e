package pvefake_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// files serves fixed bodies by path.
func files(t *testing.T, bodies map[string][]byte) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestDownloadURL(t *testing.T) {
	image := bytes.Repeat([]byte("talos"), 2000)
	sum := sha256.Sum256(image)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(image)
	must(t, zw.Close())
	web := files(t, map[string][]byte{"/talos.raw": image, "/talos.iso.gz": gz.Bytes()})
	type want struct {
		err  string
		vol  string
		size uint64
	}
	cases := map[string]struct {
		reason string
		grants map[string][]string
		body   map[string]any
		want   want
	}{
		"Import": {reason: "an import volume with a verified checksum", grants: admin,
			body: map[string]any{"url": web.URL + "/talos.raw", "content": "import", "filename": "talos.raw",
				"checksum": hex.EncodeToString(sum[:]), "checksum-algorithm": "sha256"},
			want: want{vol: "local:import/talos.raw", size: uint64(len(image))}},
		"Mismatch": {reason: "a wrong checksum fails the worker", grants: admin,
			body: map[string]any{"url": web.URL + "/talos.raw", "content": "import", "filename": "talos.raw", "checksum": "00", "checksum-algorithm": "sha256"},
			want: want{err: "task failed: checksum mismatch: got '" + hex.EncodeToString(sum[:]) + "' != expect '00'"}},
		"ImportCompression": {reason: "decompression is for ISOs only", grants: admin,
			body: map[string]any{"url": web.URL + "/talos.raw", "content": "import", "filename": "talos.raw", "compression": "gz"},
			want: want{err: "task failed: decompression not supported for import"}},
		"ISOCompressed": {reason: "an ISO is stored decompressed", grants: admin,
			body: map[string]any{"url": web.URL + "/talos.iso.gz", "content": "iso", "filename": "talos.iso", "compression": "gz"},
			want: want{vol: "local:iso/talos.iso", size: uint64(len(image))}},
		"Extension": {reason: "an import needs a known extension", grants: admin,
			body: map[string]any{"url": web.URL + "/talos.raw", "content": "import", "filename": "talos.exe"},
			want: want{err: "filename: invalid filename or wrong extension"}},
		"NotFound": {reason: "a failed transfer fails the worker", grants: admin,
			body: map[string]any{"url": web.URL + "/missing.raw", "content": "import", "filename": "missing.raw"},
			want: want{err: "task failed: download failed: 404 Not Found"}},
		"NoTemplateRight": {reason: "Datastore.AllocateTemplate on the storage comes first",
			grants: map[string][]string{"/": {"PVEAuditor"}},
			body:   map[string]any{"url": web.URL + "/talos.raw", "content": "import", "filename": "talos.raw"},
			want:   want{err: "Permission check failed (/storage/local, Datastore.AllocateTemplate)"}},
		"NoNetworkRight": {reason: "then Sys.Audit+Sys.Modify on / or Sys.AccessNetwork on the node",
			grants: map[string][]string{"/storage/local": {"PVEDatastoreAdmin"}},
			body:   map[string]any{"url": web.URL + "/talos.raw", "content": "import", "filename": "talos.raw"},
			want:   want{err: "Permission check failed"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, _ := start(t)
			c := grantee(t, srv, "u@pve", tc.grants)
			var upid proxmox.UPID
			err := c.Post(ctx, "/nodes/pve/storage/local/download-url", tc.body, &upid)
			if err == nil {
				err = wait(proxmox.NewTask(upid, c), nil)
			}
			wantMessage(t, tc.reason, err, tc.want.err)
			if tc.want.vol == "" {
				return
			}
			var got []pvefake.VolumeInfo
			for _, v := range srv.Volumes() {
				if v.VolID == tc.want.vol {
					got = append(got, v)
				}
			}
			if len(got) != 1 || got[0].Size != tc.want.size {
				t.Errorf("%s: volume %s: %+v, want size %d", tc.reason, tc.want.vol, got, tc.want.size)
			}
		})
	}
}

var admin = map[string][]string{"/": {"Administrator"}}

func TestDownloadRefusesOverwrite(t *testing.T) {
	srv, root := start(t)
	web := files(t, map[string][]byte{"/a.iso": []byte("iso")})
	_, err := srv.AddVolume(pvefake.VolumeSpec{Storage: "local", Content: "iso", Name: "iso/a.iso", Size: 3})
	must(t, err)
	task, err := root.NodeRef("pve").StorageRef("local").DownloadURL(ctx, "iso", "a.iso", web.URL+"/a.iso")
	wantMessage(t, "an existing file is never overwritten", wait(task, err), "refusing to override existing file 'local:iso/a.iso'")
}

func TestStorageContentVisibility(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddPool("mine", "", nil, []string{"local-lvm"}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Pool: "mine", Disks: map[string]string{"scsi0": "local-lvm:1"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 200, Disks: map[string]string{"scsi0": "local-lvm:1"}}))
	c := grantee(t, srv, "u@pve", map[string][]string{"/pool/mine": {"PVEVMAdmin", "PVEDatastoreUser"}})
	content, err := c.NodeRef("pve").StorageRef("local-lvm").GetContent(ctx)
	must(t, err)
	var vols []string
	for _, v := range content {
		vols = append(vols, v.Volid)
	}
	if diff := cmp.Diff([]string{"local-lvm:vm-100-disk-0"}, vols); diff != "" {
		t.Errorf("another tenant's disk is not listed: -want +got:\n%s", diff)
	}
	all, err := root.NodeRef("pve").StorageRef("local-lvm").GetContent(ctx)
	if err != nil || len(all) != 2 {
		t.Errorf("root lists both disks: %d, %v", len(all), err)
	}
	if _, err := c.NodeRef("pve").StorageRef("local").GetContent(ctx); !proxmox.IsForbidden(err) {
		t.Errorf("a storage outside the pool is forbidden: %v", err)
	}
}

// taskEnd waits for the task a DELETE returned and gives its exit status
// and log.
func taskEnd(t *testing.T, root *proxmox.Client, upid string) (string, string) {
	t.Helper()
	task := proxmox.NewTask(proxmox.UPID(upid), root)
	if err := task.Wait(ctx, time.Millisecond, 5*time.Second); err != nil && task.ExitStatus == "" {
		t.Fatalf("task %s: %v", upid, err)
	}
	var lines []map[string]any
	must(t, root.Get(ctx, "/nodes/pve/tasks/"+upid+"/log?limit=0", &lines))
	var log []string
	for _, l := range lines {
		log = append(log, l["t"].(string))
	}
	return task.ExitStatus, strings.Join(log, "\n")
}

func TestMissingVolumes(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "files", Type: "dir", Content: []string{"images"}}))
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "tank", Type: "zfspool", Content: []string{"images"}}))
	node := root.NodeRef("pve")
	must(t, wait(node.NewVirtualMachine(ctx, 100, opt("scsi0", "local-lvm:1"), opt("scsi1", "tank:1"), opt("scsi2", "files:1"))))
	del := func(volid string) (string, string) {
		var upid string
		must(t, root.Delete(ctx, "/nodes/pve/storage/"+strings.SplitN(volid, ":", 2)[0]+"/content/"+volid, &upid))
		return taskEnd(t, root, upid)
	}
	for _, v := range []string{"local-lvm:vm-100-disk-0", "tank:vm-100-disk-0", "files:100/vm-100-disk-0.qcow2"} {
		if status, log := del(v); status != "OK" {
			t.Fatalf("deleting %s: %s\n%s", v, status, log)
		}
	}
	cases := []struct{ volid, status, line string }{
		{"local-lvm:vm-100-disk-0", "OK", "Removed volume 'local-lvm:vm-100-disk-0'"},
		{"files:100/vm-100-disk-0.qcow2", "OK", "disk image '/mnt/pve/files/images/100/vm-100-disk-0.qcow2' does not exist"},
		{"tank:vm-100-disk-0", "volume 'tank:vm-100-disk-0' does not exist", "TASK ERROR: volume 'tank:vm-100-disk-0' does not exist"},
	}
	for _, tc := range cases {
		status, log := del(tc.volid)
		if status != tc.status || !strings.Contains(log, tc.line) {
			t.Errorf("deleting the missing %s again: LVM-thin skips it, a file storage warns and goes on, other tools fail: status %q, log\n%s", tc.volid, status, log)
		}
	}
	task, err := node.VirtualMachineRef(100).Delete(ctx, nil)
	must(t, wait(task, err))
	status, log := taskEnd(t, root, string(task.UPID))
	for _, want := range []string{"WARN: Could not remove disk 'tank:vm-100-disk-0', check manually: volume 'tank:vm-100-disk-0' does not exist",
		"disk image '/mnt/pve/files/images/100/vm-100-disk-0.qcow2' does not exist", "TASK WARNINGS: 1"} {
		if !strings.Contains(log, want) {
			t.Errorf("destroying a guest whose disks are gone ends with warnings, not a failure: no %q in\n%s", want, log)
		}
	}
	if status != "WARNINGS: 1" {
		t.Errorf("the exit status counts the log_warn lines only: %q", status)
	}
	if _, _, ok := srv.VMConfig(100); ok {
		t.Error("the guest is gone")
	}
}

func TestDestroyUnreferencedDisks(t *testing.T) {
	srv, root := start(t)
	node := root.NodeRef("pve")
	for _, id := range []int{100, 101} {
		must(t, wait(node.NewVirtualMachine(ctx, id, opt("scsi0", "local-lvm:1"))))
		_, err := srv.AddVolume(pvefake.VolumeSpec{Storage: "local-lvm", Content: "images", Name: fmt.Sprintf("vm-%d-disk-7", id), Size: 1 << 30})
		must(t, err)
	}
	must(t, wait(node.VirtualMachineRef(100).Delete(ctx, nil)))
	must(t, wait(node.VirtualMachineRef(101).Delete(ctx, &proxmox.VirtualMachineDeleteOptions{DestroyUnreferencedDisks: true})))
	var left []string
	for _, v := range srv.Volumes() {
		left = append(left, v.VolID)
	}
	if want := []string{"local-lvm:vm-100-disk-7"}; !cmp.Equal(left, want) {
		t.Errorf("destroy frees the disks the configuration names; destroy-unreferenced-disks=1 also the others: left %v, want %v", left, want)
	}
}
