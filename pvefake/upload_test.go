package pvefake_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// multipartBody encodes an upload as go-proxmox v0.6.0 and v0.2.1 do
// (proxmox.go UploadReader and Upload): each field with WriteField, in the
// order given, then the file part "filename" with CreateFormFile, the
// data, and the closing delimiter.
func multipartBody(t *testing.T, fields [][2]string, part, filename string, data []byte) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		must(t, w.WriteField(f[0], f[1]))
	}
	fw, err := w.CreateFormFile(part, filename)
	must(t, err)
	_, err = fw.Write(data)
	must(t, err)
	must(t, w.Close())
	return b.Bytes(), w.FormDataContentType()
}

// postUpload sends an upload body and returns the status line, the body
// and the header, or the transport's error.
func postUpload(t *testing.T, srv *pvefake.Server, auth, path, ctype string, body []byte) (string, string, http.Header, error) {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+path, bytes.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", auth)
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		return "", "", nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.Status, string(got), resp.Header, nil
}

// isoBytes is a bootstrap ISO's size as capmox builds it with a 20 kB
// user-data: above the 64 KiB pveproxy once allowed for a POST body.
func isoBytes() []byte { return bytes.Repeat([]byte("cidata\x00"), 75786/7+1)[:75786] }

// TestUploadCapmoxISO: capmox's cloud-init ISO, uploaded as go-proxmox
// sends it, becomes <storage>:iso/<filename> through an imgcopy worker (no
// worker id), with its size and its bytes, and is then listed, read
// (GET .../content/{volid}, as PVE's info answers for an ISO: format raw,
// the path in template/iso) and deleted like any other volume.
func TestUploadCapmoxISO(t *testing.T) {
	srv, root := start(t)
	iso := isoBytes()
	body, ctype := multipartBody(t, [][2]string{{"content", "iso"}}, "filename", "user-data-101.iso", iso)
	status, resp, _, err := postUpload(t, srv, rootAuth(srv), "/nodes/pve/storage/local/upload", ctype, body)
	must(t, err)
	var env struct{ Data string }
	if status != "200 OK" || json.Unmarshal([]byte(resp), &env) != nil || !strings.Contains(env.Data, ":imgcopy::root@pam!pxfake:") {
		t.Fatalf("the upload answers an imgcopy UPID: %s %s", status, resp)
	}
	exit, log := taskEnd(t, root, env.Data)
	if exit != "OK" {
		t.Fatalf("the worker ends OK: %s\n%s", exit, log)
	}
	for _, line := range []string{"starting file import from: /var/tmp/pveupload-", "target node: pve",
		"target file: /var/lib/vz/template/iso/user-data-101.iso", "file size is: 75786", "finished file import successfully"} {
		if !strings.Contains(log, line) {
			t.Errorf("the worker's log has %q:\n%s", line, log)
		}
	}
	const volid = "local:iso/user-data-101.iso"
	got, ok := srv.VolumeData("", volid)
	if !ok || !bytes.Equal(got, iso) {
		t.Fatalf("the server keeps the uploaded bytes: %d bytes, %v", len(got), ok)
	}
	content, err := root.NodeRef("pve").StorageRef("local").GetContent(ctx)
	must(t, err)
	var listed []string
	for _, c := range content {
		if c.Volid == volid && c.Size == uint64(len(iso)) && c.Format == "iso" {
			listed = append(listed, c.Volid)
		}
	}
	if len(listed) != 1 {
		t.Errorf("the content list shows the ISO with its size: %+v", content)
	}
	var info map[string]any
	must(t, root.Get(ctx, "/nodes/pve/storage/local/content/"+volid, &info))
	want := map[string]any{"path": "/var/lib/vz/template/iso/user-data-101.iso", "format": "raw", "size": float64(75786), "used": float64(77824)}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("GET .../content/{volid} (capmox's ISO lookup): -want +got:\n%s", diff)
	}
	var upid string
	must(t, root.Delete(ctx, "/nodes/pve/storage/local/content/"+volid, &upid))
	if exit, log := taskEnd(t, root, upid); exit != "OK" {
		t.Fatalf("deleting the ISO: %s\n%s", exit, log)
	}
	if _, ok := srv.VolumeData("", volid); ok {
		t.Error("a deleted ISO's bytes are gone")
	}
	wantMessage(t, "the deleted ISO is no longer found", root.Get(ctx, "/nodes/pve/storage/local/content/"+volid, &info), "volume_size_info on '"+volid+"' failed - no format")
}

// qcow2WithBacking is the start of a qcow2 header naming a backing file.
func qcow2WithBacking() []byte {
	b := make([]byte, 512)
	copy(b, []byte{'Q', 'F', 'I', 0xfb})
	binary.BigEndian.PutUint32(b[4:], 3)
	binary.BigEndian.PutUint64(b[8:], 0x200)
	return b
}

// TestUploadChecks: the checks pveproxy and pve-storage's upload make, in
// their order, with their answers: the upload privilege before the body
// is read (a 403 without a body), the multipart parse (plain 500s), the
// parameters (400), the method's checks (500), then the worker's.
func TestUploadChecks(t *testing.T) {
	iso := []byte("an ISO image")
	sum := sha256.Sum256(iso)
	type want struct {
		status string // the answer's status line
		body   string // a part of the answer's body ("" for none)
		exit   string // the worker's exit status when the request is answered 200
		volid  string // the volume made
	}
	plain := func(fields [][2]string, part, filename string, data []byte) func(t *testing.T) ([]byte, string) {
		return func(t *testing.T) ([]byte, string) { return multipartBody(t, fields, part, filename, data) }
	}
	isoField := [][2]string{{"content", "iso"}}
	cases := map[string]struct {
		reason  string
		storage string
		grants  map[string][]string
		body    func(t *testing.T) ([]byte, string)
		want    want
	}{
		"TemplateRight": {reason: "Datastore.AllocateTemplate on the storage, before the body", storage: "local",
			grants: map[string][]string{"/storage/local": {"PVEDatastoreUser"}}, body: plain(isoField, "filename", "a.iso", iso),
			want: want{status: "403 Permission check failed (/storage/local, Datastore.AllocateTemplate)"}},
		"WithTheRight": {reason: "PVEDatastoreAdmin holds it", storage: "local",
			grants: map[string][]string{"/storage/local": {"PVEDatastoreAdmin"}}, body: plain(isoField, "filename", "a.iso", iso),
			want: want{status: "200 OK", exit: "OK", volid: "local:iso/a.iso"}},
		"Extension": {reason: "an ISO's name ends in .iso or .img", storage: "local", grants: admin,
			body: plain(isoField, "filename", "user-data.txt", iso),
			want: want{status: "400 Parameter verification failed.", body: `"filename":"wrong file extension"`}},
		"IMG": {reason: ".img is an ISO's extension too, in any case", storage: "local", grants: admin,
			body: plain(isoField, "filename", "Boot.IMG", iso), want: want{status: "200 OK", exit: "OK", volid: "local:iso/Boot.IMG"}},
		"Normalized": {reason: "the name is normalised (path dropped, unsafe characters replaced)", storage: "local", grants: admin,
			body: plain(isoField, "filename", `C:\isos\my boot.iso`, iso), want: want{status: "200 OK", exit: "OK", volid: "local:iso/my_boot.iso"}},
		"NotAFileStorage": {reason: "an LVM-thin pool has no directory", storage: "local-lvm", grants: admin,
			body: plain(isoField, "filename", "a.iso", iso), want: want{status: "500 can't upload to storage type 'lvmthin'"}},
		"NoISOContent": {reason: "the storage must allow iso", storage: "files", grants: admin,
			body: plain(isoField, "filename", "a.iso", iso), want: want{status: "500 storage 'files' does not support 'iso' content"}},
		"NoContent": {reason: "content is required", storage: "local", grants: admin,
			body: plain(nil, "filename", "a.iso", iso),
			want: want{status: "400 Parameter verification failed.", body: `"content":"property is missing and it is not optional"`}},
		"NoFile": {reason: "no file part: file_upload_multipart's 'upload failed', a plain 500", storage: "local", grants: admin,
			body: plain(isoField, "other", "", nil),
			want: want{status: "500 upload failed at /usr/share/perl5/PVE/APIServer/AnyEvent.pm line 1370.", body: "upload failed at"}},
		"WrongPart": {reason: "the file part must be named filename", storage: "local", grants: admin,
			body: plain(isoField, "file", "a.iso", iso),
			want: want{status: "500 wrong field name 'file' for file upload, expected 'filename' at /usr/share/perl5/PVE/APIServer/AnyEvent.pm line 1325."}},
		"ChecksumFirst": {reason: "a field before content is swallowed with it: go-proxmox's UploadWithHash sends its fields in map order",
			storage: "local", grants: admin,
			body: plain([][2]string{{"checksum", "00"}, {"content", "iso"}, {"checksum-algorithm", "sha256"}}, "filename", "a.iso", iso),
			want: want{status: "500 wrong Content-Disposition 'form-data; name=\"checksum\""}},
		"Checksum": {reason: "a matching checksum is verified in the worker", storage: "local", grants: admin,
			body: plain([][2]string{{"content", "iso"}, {"checksum-algorithm", "sha256"}, {"checksum", strings.ToUpper(hex.EncodeToString(sum[:]))}},
				"filename", "a.iso", iso),
			want: want{status: "200 OK", exit: "OK", volid: "local:iso/a.iso"}},
		"ChecksumMismatch": {reason: "a wrong one fails it", storage: "local", grants: admin,
			body: plain([][2]string{{"content", "iso"}, {"checksum-algorithm", "sha256"}, {"checksum", "00"}}, "filename", "a.iso", iso),
			want: want{status: "200 OK", exit: "checksum mismatch: got '" + hex.EncodeToString(sum[:]) + "' != expect '00'"}},
		"BackingFile": {reason: "assert_iso_content refuses an image with a backing file", storage: "local", grants: admin,
			body: plain(isoField, "filename", "a.iso", qcow2WithBacking()),
			want: want{status: "200 OK", exit: "backing file not allowed for untrusted image '/var/tmp/pveupload-"}},
		"Empty": {reason: "an empty file is copied", storage: "local", grants: admin,
			body: plain(isoField, "filename", "empty.iso", nil), want: want{status: "200 OK", exit: "OK", volid: "local:iso/empty.iso"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, root := start(t)
			must(t, srv.AddStorage(pvefake.StorageSpec{ID: "files", Type: "dir", Content: []string{"vztmpl"}}))
			grantee(t, srv, "u@pve", tc.grants)
			secret, _ := srv.TokenSecret("u@pve!tk")
			body, ctype := tc.body(t)
			status, resp, hdr, err := postUpload(t, srv, "PVEAPIToken=u@pve!tk="+secret, "/nodes/pve/storage/"+tc.storage+"/upload", ctype, body)
			must(t, err)
			if !strings.HasPrefix(status, tc.want.status) || !strings.Contains(resp, tc.want.body) || (tc.want.body == "" && status != "200 OK" && resp != "" && !strings.HasPrefix(status, "500")) {
				t.Fatalf("%s: %s %q, want %s with %q", tc.reason, status, resp, tc.want.status, tc.want.body)
			}
			if strings.HasPrefix(status, "500") && hdr.Get("Content-Type") == "" && !strings.HasPrefix(resp, strings.TrimPrefix(status, "500 ")) {
				t.Errorf("%s: pveproxy's own 500 carries its message as the body: %q", tc.reason, resp)
			}
			if tc.want.exit != "" {
				var env struct{ Data string }
				must(t, json.Unmarshal([]byte(resp), &env))
				if exit, log := taskEnd(t, root, env.Data); !strings.HasPrefix(exit, tc.want.exit) {
					t.Errorf("%s: the worker ends %q, want %q\n%s", tc.reason, exit, tc.want.exit, log)
				}
			}
			var made []string
			for _, v := range srv.Volumes() {
				if v.Content == "iso" {
					made = append(made, v.VolID)
				}
			}
			var wantVols []string
			if tc.want.volid != "" {
				wantVols = []string{tc.want.volid}
			}
			if diff := cmp.Diff(wantVols, made); diff != "" {
				t.Errorf("%s: volumes made: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestUploadOverwrites: a second upload of the same name replaces the
// file, as the worker's cp does ("we simply overwrite the destination
// file if it already exists").
func TestUploadOverwrites(t *testing.T) {
	srv, root := start(t)
	for _, data := range [][]byte{[]byte("first"), []byte("the second one")} {
		body, ctype := multipartBody(t, [][2]string{{"content", "iso"}}, "filename", "a.iso", data)
		_, resp, _, err := postUpload(t, srv, rootAuth(srv), "/nodes/pve/storage/local/upload", ctype, body)
		must(t, err)
		var env struct{ Data string }
		must(t, json.Unmarshal([]byte(resp), &env))
		if exit, log := taskEnd(t, root, env.Data); exit != "OK" {
			t.Fatalf("upload: %s\n%s", exit, log)
		}
	}
	if got, _ := srv.VolumeData("pve", "local:iso/a.iso"); string(got) != "the second one" {
		t.Errorf("the second upload replaces the first: %q", got)
	}
}

// TestUploadWithGoProxmox: go-proxmox v0.10's Storage.Upload reaches the
// same method, and the ISO is on the node the request named.
func TestUploadWithGoProxmox(t *testing.T) {
	srv, root := start(t, pvefake.WithNodes("pve", "pve2"))
	path := filepath.Join(t.TempDir(), "user-data-7.iso")
	must(t, os.WriteFile(path, isoBytes(), 0o600))
	task, err := root.NodeRef("pve2").StorageRef("local").Upload("iso", path)
	must(t, wait(task, err))
	if _, ok := srv.VolumeData("pve2", "local:iso/user-data-7.iso"); !ok {
		t.Error("the ISO is on pve2")
	}
	if _, ok := srv.VolumeData("pve", "local:iso/user-data-7.iso"); ok {
		t.Error("local is not shared: pve has no copy")
	}
}

// TestUploadTransport: what pveproxy does with bodies before any method
// runs: an upload that is not multipart/form-data gets no answer (its die
// is only warned about), an upload to an unreachable node fails when the
// method activates the storage there over SSH, and any other POST body
// above 512 KiB is refused with "for data too large".
func TestUploadTransport(t *testing.T) {
	srv, _ := start(t, pvefake.WithNodes("pve", "pve2"))
	if _, _, _, err := postUpload(t, srv, rootAuth(srv), "/nodes/pve/storage/local/upload", "application/json", []byte(`{"content":"iso"}`)); err == nil {
		t.Error("a JSON upload is left without an answer")
	}
	srv.SetNodeUnreachable("pve2", true)
	body, ctype := multipartBody(t, [][2]string{{"content", "iso"}}, "filename", "a.iso", []byte("x"))
	status, _, _, err := postUpload(t, srv, rootAuth(srv), "/nodes/pve2/storage/local/upload", ctype, body)
	must(t, err)
	if want := "500 can't activate storage 'local' on node 'pve2': command '/usr/bin/ssh -o BatchMode=yes -o HostKeyAlias=pve2" +
		" -o UserKnownHostsFile=/etc/pve/nodes/pve2/ssh_known_hosts -o GlobalKnownHostsFile=none 192.0.2.2 -- /usr/sbin/pvesm status" +
		" --storage local' failed: exit code 255"; status != want {
		t.Errorf("an upload is not proxied; the method's SSH to the node fails:\n got %s\nwant %s", status, want)
	}
	status, _ = raw(t, srv, "POST", "/nodes/pve/storage/local/upload?content=iso&filename=a.iso&tmpfilename=/var/tmp/pveupload-0a", rootAuth(srv), nil)
	if status != "500 temporary file '/var/tmp/pveupload-0a' does not exist" {
		t.Errorf("an upload request without a body naming a file of its own: %s", status)
	}
	big := strings.Repeat("x", 512*1024)
	status, resp := raw(t, srv, "POST", "/pools", rootAuth(srv), strings.NewReader("poolid=a&comment="+big))
	if status != "501 for data too large" || resp != "for data too large" {
		t.Errorf("a POST body above 512 KiB: %s %q", status, resp)
	}
	small := strings.Repeat("x", 300*1024)
	status, _ = raw(t, srv, "POST", "/pools", rootAuth(srv), strings.NewReader("poolid=a&comment="+small))
	if status != "200 OK" {
		t.Errorf("a 300 KiB body is within pveproxy's limit: %s", status)
	}
}
