package pvefake

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

func storageRoutes() []*route {
	st := param{name: "storage", format: fmtStorageID}
	anyAudit := perm{path: "/storage/{storage}", privs: []string{"Datastore.Audit", "Datastore.AllocateSpace"}, any: true}
	vol := req("volume", tString)
	return []*route{
		{method: "GET", path: "/nodes/{node}/storage", handle: listStorages, schema: []param{nodeParam,
			{name: "content", optional: true}, {name: "storage", optional: true, format: fmtStorageID},
			opt("enabled", tBool), {name: "target", optional: true, format: fmtNode}, opt("format", tBool)}},
		{method: "GET", path: "/nodes/{node}/storage/{storage}/status", schema: []param{nodeParam, st}, check: anyAudit, handle: storageStatus},
		{method: "GET", path: "/nodes/{node}/storage/{storage}/content", check: anyAudit, handle: listContent,
			schema: []param{nodeParam, st, {name: "content", optional: true}, {name: "vmid", optional: true, format: fmtVMID}}},
		allocRoute(),
		{method: "GET", path: "/nodes/{node}/storage/{storage}/content/{volume*}", schema: []param{nodeParam, st, vol}, handle: readContent},
		{method: "DELETE", path: "/nodes/{node}/storage/{storage}/content/{volume*}", handle: deleteContent,
			schema: []param{nodeParam, st, vol, {name: "delay", typ: tInt, optional: true}}},
		{method: "POST", path: "/nodes/{node}/storage/{storage}/upload", upload: true, handle: uploadFile,
			check: perm{path: "/storage/{storage}", privs: []string{"Datastore.AllocateTemplate"}},
			schema: []param{nodeParam, st, {name: "content", enum: []string{"iso", "vztmpl", "import"}}, {name: "filename", maxLen: 255},
				{name: "checksum", optional: true, requires: "checksum-algorithm"},
				{name: "checksum-algorithm", optional: true, requires: "checksum", enum: []string{"md5", "sha1", "sha224", "sha256", "sha384", "sha512"}},
				{name: "tmpfilename", optional: true, pattern: regexp.MustCompile(`^/var/tmp/pveupload-[0-9a-f]+$`)}}},
		{method: "POST", path: "/nodes/{node}/storage/{storage}/download-url", handle: downloadURL,
			check: and{perm{path: "/storage/{storage}", privs: []string{"Datastore.AllocateTemplate"}}, or{
				perm{path: "/", privs: []string{"Sys.Audit", "Sys.Modify"}},
				perm{path: "/nodes/{node}", privs: []string{"Sys.AccessNetwork"}}}},
			schema: []param{nodeParam, st, {name: "url", pattern: regexp.MustCompile(`^https?://.*`)},
				{name: "content", enum: []string{"iso", "vztmpl", "import"}}, {name: "filename", maxLen: 255},
				{name: "checksum", optional: true, requires: "checksum-algorithm"},
				{name: "checksum-algorithm", optional: true, requires: "checksum", enum: []string{"md5", "sha1", "sha224", "sha256", "sha384", "sha512"}},
				{name: "compression", optional: true, enum: []string{"gz", "lzo", "zst", "bz2"}}, opt("verify-certificates", tBool)}},
	}
}

// storageOnNode finds a storage enabled on the request's node.
func (c *call) storageOnNode() (*storage, *apiError) {
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	sid := c.p["storage"]
	st, ok := c.s.stores[sid]
	if !ok {
		return nil, die("storage '%s' does not exist", sid)
	}
	if !st.onNode(c.node) {
		return nil, die("storage '%s' is not available on node '%s'", sid, c.node)
	}
	return st, nil
}

func (c *call) storageEntry(st *storage) map[string]any {
	used := c.s.storageUsed(st, c.node)
	return map[string]any{"storage": st.id, "type": st.typ, "content": st.contentList(), "shared": b2i(st.shared),
		"active": 1, "enabled": 1, "total": st.total, "used": used, "avail": st.total - used,
		"used_fraction": float64(used) / float64(st.total)}
}

func listStorages(c *call) (any, *apiError) {
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, sid := range sortedKeys(c.s.stores) {
		st := c.s.stores[sid]
		ok, _ := c.checkAny("/storage/"+sid, []string{"Datastore.Audit", "Datastore.AllocateSpace"}, true)
		if !ok || (c.p["storage"] != "" && c.p["storage"] != sid) || !st.onNode(c.node) {
			continue
		}
		if want := c.p["content"]; want != "" && !anyContent(st, want) {
			continue
		}
		out = append(out, c.storageEntry(st))
	}
	return out, nil
}

func anyContent(st *storage, list string) bool {
	for _, ct := range strings.Split(list, ",") {
		if st.content[ct] {
			return true
		}
	}
	return false
}

func storageStatus(c *call) (any, *apiError) {
	st, err := c.storageOnNode()
	if err != nil {
		return nil, err
	}
	e := c.storageEntry(st)
	delete(e, "storage")
	return e, nil
}

func contentEntry(v *volume) map[string]any {
	e := map[string]any{"volid": v.volid, "content": v.vtype, "format": v.format, "size": v.size, "ctime": v.ctime}
	if v.owner != 0 {
		e["vmid"] = v.owner
	}
	if v.vtype == "images" {
		e["used"] = v.size
	}
	return e
}

// listContent lists the volumes the caller may access (check_volume_access).
func listContent(c *call) (any, *apiError) {
	st, err := c.storageOnNode()
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, k := range sortedVolumes(c.s, st, c.node) {
		v := c.s.volumes[k]
		if ct := c.p["content"]; ct != "" && v.vtype != ct {
			continue
		}
		if id := c.p["vmid"]; id != "" && strconv.Itoa(v.owner) != id {
			continue
		}
		if c.checkVolumeAccess(0, v.volid, "") != nil {
			continue
		}
		out = append(out, contentEntry(v))
	}
	return out, nil
}

func sortedVolumes(s *state, st *storage, node string) []volKey {
	var keys []volKey
	for k, v := range s.volumes {
		if v.storage == st.id && (st.shared || k.node == node) {
			keys = append(keys, k)
		}
	}
	sortVolKeys(keys)
	return keys
}

func sortVolKeys(keys []volKey) {
	sort.Slice(keys, func(i, j int) bool { return keys[i].volid < keys[j].volid })
}

// volumeParam turns the {volume} path parameter into a volid of the storage.
func (c *call) volumeParam(st *storage) string {
	v := c.p["volume"]
	if !strings.Contains(v, ":") {
		v = st.id + ":" + v
	}
	return v
}

func readContent(c *call) (any, *apiError) {
	st, err := c.storageOnNode()
	if err != nil {
		return nil, err
	}
	volid := c.volumeParam(st)
	if err := c.checkVolumeAccess(0, volid, ""); err != nil {
		return nil, err
	}
	v, ok := c.s.volume(c.node, volid)
	if !ok {
		return nil, die("volume_size_info on '%s' failed - no format", volid)
	}
	_, name, _ := parseVolid(volid)
	if !st.fileBased() {
		return map[string]any{"path": "/var/lib/vz/" + name, "size": v.size, "used": v.size, "format": v.format}, nil
	}
	if v.size == 0 {
		return nil, die("volume '%s' has size zero", volid)
	}
	// Content.pm info: path(), then volume_size_info, which asks qemu-img
	// with the format parse_volname gives: raw for anything but images.
	format, file := v.format, name
	if v.vtype != "images" {
		file = name[strings.IndexByte(name, '/')+1:]
		if v.vtype != "import" || format == "ova" || format == "ovf" {
			format = "raw"
		}
	}
	return map[string]any{"path": st.contentDir(v.vtype) + "/" + file, "size": v.size,
		"used": (v.size + 4095) / 4096 * 4096, "format": format}, nil
}

func deleteContent(c *call) (any, *apiError) {
	st, err := c.storageOnNode()
	if err != nil {
		return nil, err
	}
	volid := c.volumeParam(st)
	_, name, _ := parseVolid(volid)
	vtype, owner, perr := parseVolname(name)
	if perr != nil {
		return nil, die("%v", perr)
	}
	if vtype == "backup" && owner != 0 {
		if e := c.require("/storage/"+st.id, "Datastore.AllocateSpace"); e != nil {
			return nil, e
		}
		if e := c.require(vmPath(owner), "VM.Backup"); e != nil {
			return nil, e
		}
	} else if e := c.require("/storage/"+st.id, "Datastore.Allocate"); e != nil {
		return nil, e
	}
	id := ""
	if owner != 0 {
		id = strconv.Itoa(owner)
	}
	return c.startTask("imgdel", id, func(l *taskLog) error {
		if _, ok := c.s.volume(c.node, volid); !ok {
			if msg := freeMissing(st, name, l); msg != "" {
				return errors.New(msg)
			}
		}
		c.s.dropVolume(c.node, volid)
		l.printf("Removed volume '%s'", volid)
		return nil
	}), nil
}

// freeMissing is vdisk_free of a volume the storage does not hold, as the
// plugins' free_image meets it. LVM-thin checks first and does nothing; a
// file storage prints "disk image ... does not exist" (a plain warn, not
// counted) and goes on. Any other storage's tool fails: its message is
// returned.
func freeMissing(st *storage, name string, l *taskLog) string {
	switch {
	case st.typ == "lvmthin":
		return ""
	case st.fileBased():
		l.printf("disk image '%s/images/%s' does not exist", st.path(), name)
		return ""
	}
	return fmt.Sprintf("volume '%s:%s' does not exist", st.id, name)
}

// Downloader fetches a URL for download-url.
type Downloader interface {
	Download(ctx context.Context, url string, verifyTLS bool) (io.ReadCloser, error)
}

type httpDownloader struct{}

func (httpDownloader) Download(ctx context.Context, url string, verifyTLS bool) (io.ReadCloser, error) {
	client := &http.Client{Timeout: 5 * time.Minute}
	if !verifyTLS {
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // PVE's verify-certificates=0
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("download failed: %s", resp.Status)
	}
	return resp.Body, nil
}

var hashes = map[string]func() hash.Hash{"md5": md5.New, "sha1": sha1.New, "sha224": sha256.New224,
	"sha256": sha256.New, "sha384": sha512.New384, "sha512": sha512.New}

var (
	isoExtRe        = regexp.MustCompile(`(?i)[^/]+\.(?:iso|img)$`)
	vztmplExtRe     = regexp.MustCompile(`(?i)[^/]+\.(?:tar|tar\.(?:gz|xz|zst|bz2))$`)
	importExtRe     = regexp.MustCompile(`^[a-zA-Z0-9\-.+=_]+\.(ova|qcow2|raw|vmdk)$`)
	unsafeFileChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)
)

// normalizeFilename is normalize_content_filename.
func normalizeFilename(f string) string {
	f = strings.TrimSuffix(f, "\n")
	if i := strings.LastIndexAny(f, `/\`); i >= 0 {
		f = f[i+1:]
	}
	return unsafeFileChars.ReplaceAllString(f, "_")
}
