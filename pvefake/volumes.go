package pvefake

import (
	"fmt"
	"regexp"
	"strconv"
)

var (
	// images: [base-X-NAME/]vm-Y-NAME on block storages, or
	// X/base-X-NAME.fmt[/Y/vm-Y-NAME.fmt] on file storages, where NAME is
	// disk-N, cloudinit, or any other name (the CSI driver's pvc-<uuid>):
	// the plugins take the owner from vm-Y- and accept any rest.
	blockImageRe = regexp.MustCompile(`^(?:base-[1-9]\d*-[^\s/]+/)?(?:vm|base)-([1-9]\d*)-[^\s/]+$`)
	fileImageRe  = regexp.MustCompile(`^(?:[1-9]\d*/base-[1-9]\d*-[^\s/]+\.\w+/)?([1-9]\d*)/(?:vm|base)-[1-9]\d*-[^\s/]+\.\w+$`)
	backupRe     = regexp.MustCompile(`^backup/vzdump-(?:qemu|lxc)-([1-9]\d*)-`)
	contentDirRe = regexp.MustCompile(`^(iso|vztmpl|import|snippets)/[^/]+$`)
)

// parseVolname classifies a volume name as PVE's storage plugins do: its
// content type and, for images and backups, the owning VMID.
func parseVolname(name string) (vtype string, owner int, err error) {
	if m := contentDirRe.FindStringSubmatch(name); m != nil {
		return m[1], 0, nil
	}
	if m := backupRe.FindStringSubmatch(name); m != nil {
		id, _ := strconv.Atoi(m[1])
		return "backup", id, nil
	}
	for _, re := range []*regexp.Regexp{blockImageRe, fileImageRe} {
		if m := re.FindStringSubmatch(name); m != nil {
			id, _ := strconv.Atoi(m[1])
			return "images", id, nil
		}
	}
	return "", 0, fmt.Errorf("unable to parse volume name '%s'", name)
}

// checkVolumeAccess is PVE::Storage::check_volume_access: Datastore.Allocate
// on the storage opens every volume; otherwise ISOs, templates and imports
// need Datastore.AllocateSpace or Datastore.Audit, the owner's own images
// are free, backups need Datastore.AllocateSpace and VM.Backup, and other
// guests' images Datastore.Audit and VM.Config.Disk on the owner.
func (c *call) checkVolumeAccess(vmid int, volid, want string) *apiError {
	sid, name, ok := parseVolid(volid)
	if !ok {
		if c.isRoot() {
			return nil
		}
		return die("Only root can pass arbitrary filesystem paths.")
	}
	if _, ok := c.s.stores[sid]; !ok {
		return die("storage '%s' does not exist", sid)
	}
	vtype, owner, err := parseVolname(name)
	if err != nil {
		return die("%v", err)
	}
	if want != "" && vtype != want && (want != "rootdir" || vtype != "images") {
		return die("unable to use volume %s - content type needs to be '%s'", volid, want)
	}
	storage := "/storage/" + sid
	if ok, _ := c.checkAll(storage, []string{"Datastore.Allocate"}, true); ok {
		return nil
	}
	switch {
	case vtype == "iso" || vtype == "vztmpl" || vtype == "import":
		_, e := c.checkAny(storage, []string{"Datastore.AllocateSpace", "Datastore.Audit"}, false)
		return e
	case owner != 0 && owner == vmid:
		return nil
	case vtype == "backup" && owner != 0:
		if e := c.require(storage, "Datastore.AllocateSpace"); e != nil {
			return e
		}
		return c.require(vmPath(owner), "VM.Backup")
	case vtype == "images" && owner != 0:
		if e := c.require(storage, "Datastore.Audit"); e != nil {
			return e
		}
		return c.require(vmPath(owner), "VM.Config.Disk")
	}
	return die("missing privileges to access %s", volid)
}

// checkStorageAccess is qemu-server's check_storage_access for the drives
// of a create or config request.
func (c *call) checkStorageAccess(vmid int, conf map[string]string, defStorage string) *apiError {
	for _, k := range sortedKeys(conf) {
		if !isDriveKey(k) {
			continue
		}
		d, err := parseDrive(conf[k])
		if err != nil {
			return paramErr(k, "invalid format - %v", err)
		}
		if e := c.checkDriveAccess(vmid, k, d, defStorage); e != nil {
			return e
		}
		if src := d.opts["import-from"]; src != "" {
			if e := c.checkImportAccess(vmid, k, src); e != nil {
				return e
			}
		}
	}
	return nil
}

func (c *call) checkDriveAccess(vmid int, key string, d drive, defStorage string) *apiError {
	switch m := newDiskRe.FindStringSubmatch(d.file); {
	case d.file == "none" || d.cloudinit():
		return nil
	case d.cdrom() && d.file == "cdrom":
		return c.require("/", "Sys.Console")
	case !d.cdrom() && m != nil:
		sid := m[2]
		if sid == "" {
			sid = defStorage
		}
		if sid == "" {
			return die("no storage ID specified (and no default storage)")
		}
		if e := c.require("/storage/"+sid, "Datastore.AllocateSpace"); e != nil {
			return e
		}
		st, ok := c.s.stores[sid]
		if !ok {
			return die("storage '%s' does not exist", sid)
		}
		if !st.content["images"] {
			return paramErr("storage", "storage '%s' does not support vm images", sid)
		}
		return nil
	}
	if e := c.checkVolumeAccess(vmid, d.file, ""); e != nil {
		return e
	}
	_, name, _ := parseVolid(d.file)
	if vtype, _, _ := parseVolname(name); vtype != "images" && vtype != "iso" {
		return paramErr(key, "content type needs to be 'images' or 'iso'")
	}
	return nil
}

func (c *call) checkImportAccess(vmid int, key, src string) *apiError {
	sid, name, ok := parseVolid(src)
	if !ok {
		return c.checkVolumeAccess(vmid, src, "")
	}
	if _, ok := c.s.stores[sid]; !ok {
		return die("storage '%s' does not exist", sid)
	}
	vtype, owner, err := parseVolname(name)
	if err != nil {
		return die("%v", err)
	}
	if vtype != "images" && vtype != "import" {
		return paramErr(key, "%s has wrong type '%s' - needs to be 'images' or 'import'", src, vtype)
	}
	if owner != 0 {
		return c.require(vmPath(owner), "VM.Clone")
	}
	return c.checkVolumeAccess(vmid, src, "")
}
