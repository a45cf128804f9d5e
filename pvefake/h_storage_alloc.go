package pvefake

import (
	"regexp"
	"strconv"
	"strings"
)

// allocRoute is POST /nodes/{node}/storage/{storage}/content, pvesm
// alloc's API method (PVE/API2/Storage/Content.pm, create): it allocates
// an image volume owned by vmid, named filename, of size KiB (or NM,
// NG), and returns its volid. The CSI driver creates every volume with
// it. Datastore.AllocateSpace on the storage is the method's only check;
// the owner's VM need not exist.
func allocRoute() *route {
	return &route{method: "POST", path: "/nodes/{node}/storage/{storage}/content", handle: allocVolume,
		check: perm{path: "/storage/{storage}", privs: []string{"Datastore.AllocateSpace"}},
		schema: []param{nodeParam, {name: "storage", format: fmtStorageID}, req("filename", tString),
			{name: "size", pattern: allocSizePattern}, {name: "vmid", format: fmtVMID},
			{name: "format", optional: true, requires: "size", enum: []string{"raw", "qcow2", "subvol", "vmdk"}}}}
}

var (
	allocSizePattern = regexp.MustCompile(`^\d+[MG]?$`)
	allocFormatRe    = regexp.MustCompile(`\.(raw|qcow2|vmdk)$`)
	dirImageNameRe   = regexp.MustCompile(`^((base-(\d+)-\S+)|(vm-(\d+)-\S+))\.(raw|qcow2|vmdk|subvol)$`)
)

func allocVolume(c *call) (any, *apiError) {
	name, sizeStr, format := c.p["filename"], c.p["size"], c.p["format"]
	kib, err := strconv.ParseUint(strings.TrimRight(sizeStr, "MG"), 10, 64)
	if err != nil {
		return nil, paramErr("size", "unable to parse size '%s'", sizeStr)
	}
	switch {
	case strings.HasSuffix(sizeStr, "M"):
		kib *= 1024
	case strings.HasSuffix(sizeStr, "G"):
		kib *= 1024 * 1024
	}
	if m := allocFormatRe.FindStringSubmatch(name); m != nil {
		if format != "" && format != m[1] {
			return nil, paramErr("format", "different storage formats (%s != %s)", format, m[1])
		}
		format = m[1]
	}
	st, ok := c.s.stores[c.p["storage"]]
	if !ok {
		return nil, die("storage '%s' does not exist", c.p["storage"])
	}
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	if !st.onNode(c.node) {
		return nil, die("storage '%s' is not available on node '%s'", st.id, c.node)
	}
	vmid := c.p.int("vmid")
	if format == "" {
		format = defaultFormat(st)
	}
	volname, aerr := allocName(st, vmid, name, format)
	if aerr != nil {
		return nil, aerr
	}
	volid := st.id + ":" + volname
	if _, taken := c.s.volume(c.node, volid); taken {
		return nil, allocExists(st, volname)
	}
	c.s.putVolume(c.node, &volume{volid: volid, storage: st.id, vtype: "images", format: format, owner: vmid,
		size: st.allocated(kib * 1024), ctime: c.s.now().Unix()})
	return volid, nil
}

// allocName is the plugin's alloc_image naming: a block storage takes the
// name as it is (LVM-thin and LVM refuse a format other than raw and a
// name that is not vm-<vmid>-*), a file storage puts <vmid>/ before a name
// that must end in the format's extension.
func allocName(st *storage, vmid int, name, format string) (string, *apiError) {
	if st.fileBased() {
		m := dirImageNameRe.FindStringSubmatch(name)
		if m == nil {
			return "", die("unable to parse volume filename '%s'", name)
		}
		if m[6] != format {
			return "", die("illegal name '%s' - wrong extension for format ('%s != '%s')", name, m[6], format)
		}
		return strconv.Itoa(vmid) + "/" + name, nil
	}
	if (st.typ == "lvmthin" || st.typ == "lvm") && format != "raw" {
		return "", die("unsupported format '%s'", format)
	}
	if !strings.HasPrefix(name, "vm-"+strconv.Itoa(vmid)+"-") {
		return "", die("illegal name '%s' - should be 'vm-%d-*'", name, vmid)
	}
	return name, nil
}

// allocExists is the failure of allocating a volume the storage holds:
// lvcreate's on LVM, the plugin's own check on a file storage.
func allocExists(st *storage, volname string) *apiError {
	switch {
	case st.fileBased():
		return die("disk image '%s/images/%s' already exists", st.path(), volname)
	case st.typ == "lvmthin" || st.typ == "lvm":
		vg := st.opts["vgname"]
		return die("lvcreate '%s/%s' error:   Logical Volume \"%s\" already exists in volume group \"%s\"", vg, volname, volname, vg)
	}
	return die("volume '%s:%s' already exists", st.id, volname)
}

// unlinkRoute is PUT /nodes/{node}/qemu/{vmid}/unlink (qm disk unlink):
// the synchronous config update with delete=idlist. A removed disk the VM
// owns is kept as unusedN, and with force its volume is freed; a disk of
// another owner (a CSI volume) is only taken out of the configuration.
func unlinkRoute() *route {
	return &route{method: "PUT", path: "/nodes/{node}/qemu/{vmid}/unlink", handle: unlinkDisks,
		check:  perm{path: "/vms/{vmid}", privs: []string{"VM.Config.Disk"}},
		schema: []param{nodeParam, vmidParam, req("idlist", tString), opt("force", tBool)}}
}

func unlinkDisks(c *call) (any, *apiError) {
	c.p["delete"] = c.p["idlist"]
	delete(c.p, "idlist")
	return updateConfig(c, true)
}
