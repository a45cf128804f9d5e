package pvefake

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
)

// POST /nodes/{node}/storage/{storage}/upload, as pveproxy and pve-storage
// serve it:
//
//   - pve-manager's PVE/HTTPServer.pm auth_handler (commit 14a22df35955)
//     checks Datastore.AllocateTemplate on /storage/<storage> before the
//     body is read; a failure is a 403 without a body.
//   - pve-http-server's src/PVE/APIServer/AnyEvent.pm (commit 5c9e4ea773364)
//     streams the multipart/form-data body into /var/tmp/pveupload-<hex>
//     (file_upload_multipart): no size limit applies, unlike other POST
//     bodies ($limit_max_post).
//   - pve-storage's src/PVE/API2/Storage/Status.pm upload (commit
//     0c56bad8b2a7) checks the request and starts an imgcopy worker that
//     checks the image and copies it into the storage, overwriting.

// maxUpload is the largest upload the server accepts. pveproxy streams an
// upload to disk without a limit; the server holds the bytes in memory.
const maxUpload = 256 << 20

// uploadSource is where pve-http-server's file_upload_multipart dies: the
// locations Perl appends to a message without a final newline are those
// of that file at the commit cited above.
const uploadSource = "/usr/share/perl5/PVE/APIServer/AnyEvent.pm"

// upload is a parsed multipart upload.
type upload struct {
	fields  map[string]string // content, checksum-algorithm, checksum, filename
	data    []byte
	tmpname string
}

// errUploadFailed is file_upload_multipart's end without a complete file
// part.
var errUploadFailed = errors.New("upload failed at " + uploadSource + " line 1370.")

// parseMultipartUpload reads a body the way file_upload_multipart's
// regular expressions do, not as a MIME parser would: text before the
// first delimiter is skipped; the fields content, checksum-algorithm and
// checksum are taken in that order, each from the front of what is left
// (a field before them is swallowed with the one found); then the file
// part must follow at once, named "filename"; its data runs to the closing
// delimiter, whatever parts come between. Other fields are never read.
func parseMultipartUpload(body []byte, boundary string) (*upload, error) {
	nl := `\r?\n`
	delim := `--` + regexp.QuoteMeta(boundary) + nl
	closeDelim := `--` + regexp.QuoteMeta(boundary) + `--`
	buf := body
	up := &upload{fields: map[string]string{}}

	// Phase 0: keep the first delimiter, drop what is before it.
	m := regexp.MustCompile(`(?s)^.*?(` + delim + `)`).FindSubmatchIndex(buf)
	if m == nil {
		return nil, errUploadFailed
	}
	buf = buf[m[2]:]

	untilData := regexp.MustCompile(`(?s)^.*?(?:` + nl + `){2}`)
	removeUntilData := func() {
		if m := untilData.FindIndex(buf); m != nil {
			buf = buf[m[1]:]
		}
	}
	value := regexp.MustCompile(`(?s)^(.*?)(` + delim + `)`)
	// Phase 1: the fields, then the file part's headers.
	for _, name := range []string{"content", "checksum-algorithm", "checksum"} {
		re := regexp.MustCompile(`(?s)^` + delim + `.*?Content-Disposition: (.*?); name="` + regexp.QuoteMeta(name) + `"(.*?` + delim + `)`)
		m := re.FindSubmatchIndex(buf)
		if m == nil {
			continue
		}
		disposition := string(buf[m[2]:m[3]])
		if disposition != "form-data" {
			return nil, fmt.Errorf("wrong Content-Disposition '%s' in multipart, expected 'form-data'", disposition)
		}
		buf = append(append([]byte(nil), buf[m[4]:m[5]]...), buf[m[1]:]...)
		removeUntilData()
		v := disposition // Perl's $1 when the value's match fails: the last successful one
		if m := value.FindSubmatchIndex(buf); m != nil {
			v = string(buf[m[2]:m[3]])
			buf = buf[m[4]:]
		}
		up.fields[name] = perlTrim(v)
	}
	file := regexp.MustCompile(`(?s)^` + delim + `Content-Disposition: (.*?); name="(.*?)"; filename="([^"]+)"`)
	m = file.FindSubmatchIndex(buf)
	if m == nil {
		return nil, errUploadFailed
	}
	if d := string(buf[m[2]:m[3]]); d != "form-data" {
		return nil, fmt.Errorf("wrong Content-Disposition '%s' in multipart, expected 'form-data'", d)
	}
	if name := string(buf[m[4]:m[5]]); name != "filename" {
		return nil, fmt.Errorf("wrong field name '%s' for file upload, expected 'filename' at %s line 1325.", name, uploadSource)
	}
	up.fields["filename"] = perlTrim(string(buf[m[6]:m[7]]))
	buf = buf[m[1]:]
	removeUntilData()
	// Phase 2: the data, up to the closing delimiter.
	m = regexp.MustCompile(`(?s)^(.*?)(?:` + nl + `)?` + closeDelim).FindSubmatchIndex(buf)
	if m == nil {
		return nil, errUploadFailed
	}
	up.data = bytes.Clone(buf[m[2]:m[3]])
	return up, nil
}

// perlTrim is PVE::Tools::trim: leading and trailing \s removed.
func perlTrim(s string) string { return strings.Trim(s, " \t\n\v\f\r") }

// readUpload reads an upload request's body (with the state locked), after
// the permission check,
// as pveproxy's authenticate_and_handle_request does. Its failures are
// pveproxy's own answers: plain 500s from file_upload_multipart, or none at
// all where pveproxy's die is only warned about (the connection is then
// dropped without an answer).
func (srv *Server) readUpload(r *http.Request, p params) (*upload, *apiError) {
	if r.ContentLength == 0 {
		return nil, nil // no body: pveproxy handles the request as any other
	}
	if r.ContentLength < 0 {
		return nil, &apiError{Status: http.StatusNotImplemented, Msg: "chunked transfer encoding not supported", Plain: true}
	}
	ct, ps, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "multipart/form-data" || ps["boundary"] == "" {
		return nil, &apiError{Hangup: true} // "upload 'Content-Type '...' not implemented", warned
	}
	if p.has("tmpfilename") {
		return nil, &apiError{Hangup: true} // "'tmpfilename' query parameter is not allowed for file uploads", warned
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxUpload+1))
	if err != nil {
		return nil, &apiError{Status: http.StatusBadRequest, Msg: "cannot read the request body", Plain: true}
	}
	if len(body) > maxUpload {
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("upload larger than the test server's limit of %d MiB", maxUpload>>20), Plain: true}
	}
	up, perr := parseMultipartUpload(body, ps["boundary"])
	if perr != nil {
		return nil, &apiError{Status: http.StatusInternalServerError, Msg: perr.Error() + "\n", Plain: true}
	}
	srv.st.uploads++
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], uint64(srv.st.uploads))
	sum := md5.Sum(seed[:])
	up.tmpname = "/var/tmp/pveupload-" + hex.EncodeToString(sum[:])
	for k, v := range up.fields {
		p[k] = v
	}
	p["tmpfilename"] = up.tmpname
	return up, nil
}

// uploadFile is pve-storage's upload method: the checks before the
// worker, then an imgcopy worker (no worker id) that verifies a checksum,
// checks an ISO as assert_iso_content does (qemu-img's auto-detection
// refuses an image with a backing file) and copies the file into the
// storage's directory for the content, overwriting a file of that name.
func uploadFile(c *call) (any, *apiError) {
	st, err := c.storageOnNode()
	if err != nil {
		return nil, err
	}
	if !st.fileBased() {
		return nil, die("can't upload to storage type '%s'", st.typ)
	}
	content := c.p["content"]
	tmp := c.p["tmpfilename"]
	if tmp == "" {
		return nil, die("missing temporary file name")
	}
	if c.upload == nil { // a request without a body naming a file itself
		return nil, die("temporary file '%s' does not exist", tmp)
	}
	data := c.upload.data
	filename := normalizeFilename(c.p["filename"])
	format, perr := downloadFormat(content, filename)
	if perr != nil {
		return nil, perr
	}
	if !st.content[content] {
		return nil, die("storage '%s' does not support '%s' content", st.id, content)
	}
	if c.s.sdn().unreachable[c.node] {
		// the ssh options of pve-cluster's ssh_info_to_ssh_opts; run_command's
		// message ends in a newline, and the die adds one
		return nil, die("can't activate storage '%s' on node '%s': command '/usr/bin/ssh -o BatchMode=yes -o HostKeyAlias=%s"+
			" -o UserKnownHostsFile=/etc/pve/nodes/%s/ssh_known_hosts -o GlobalKnownHostsFile=none %s -- /usr/sbin/pvesm status"+
			" --storage %s' failed: exit code 255\n", st.id, c.node, c.node, c.node, c.s.nodes[c.node].ip, st.id)
	}
	dest := st.contentDir(content) + "/" + filename
	algo, want := c.p["checksum-algorithm"], c.p["checksum"]
	volid := st.id + ":" + content + "/" + filename
	return c.startTask("imgcopy", "", func(l *taskLog) error {
		l.printf("starting file import from: %s", tmp)
		if algo != "" {
			h := hashes[algo]()
			h.Write(data)
			got := hex.EncodeToString(h.Sum(nil))
			if !strings.EqualFold(got, want) {
				l.printf("calculating checksum...")
				return fmt.Errorf("checksum mismatch: got '%s' != expect '%s'", got, want)
			}
			l.printf("calculating checksum...OK, checksum verified")
		}
		if err := checkUploadedImage(content, format, tmp, data); err != nil {
			return err
		}
		l.printf("target node: %s", c.node)
		l.printf("target file: %s", dest)
		l.printf("file size is: %d", len(data))
		l.printf("command: cp -- %s %s", tmp, dest)
		c.s.putVolume(c.node, &volume{volid: volid, storage: st.id, vtype: content, format: format,
			size: uint64(len(data)), ctime: c.s.now().Unix(), data: data})
		l.printf("finished file import successfully")
		return nil
	}), nil
}

// qcow2Magic starts a qcow2 image; its header holds the backing file's
// offset at byte 8.
var qcow2Magic = []byte{'Q', 'F', 'I', 0xfb}

// checkUploadedImage is the worker's look at an untrusted file before it is
// copied: file_size_info's refusal of a backing file (src/PVE/Storage/
// Plugin.pm), through assert_iso_content for an ISO, and its query with
// the format the name gives for an image to import. The server reads
// qcow2 headers only; other formats pass.
func checkUploadedImage(content, format, tmp string, data []byte) error {
	isQcow2 := bytes.HasPrefix(data, qcow2Magic)
	switch {
	case content == "import" && format == "qcow2" && !isQcow2:
		return errors.New("failed to query file information with qemu-img")
	case content == "vztmpl" || !isQcow2:
		return nil
	case len(data) >= 16 && binary.BigEndian.Uint64(data[8:16]) != 0:
		return fmt.Errorf("backing file not allowed for untrusted image '%s'!", tmp)
	}
	return nil
}

// contentDir is get_subdir: where a file storage keeps a content type.
func (s *storage) contentDir(content string) string {
	sub := map[string]string{"images": "images", "rootdir": "private", "iso": "template/iso", "vztmpl": "template/cache",
		"backup": "dump", "snippets": "snippets", "import": "import"}[content]
	return s.path() + "/" + sub
}
