package pvefake

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

func qemuOpRoutes() []*route {
	return []*route{
		{method: "POST", path: "/nodes/{node}/qemu/{vmid}/clone", handle: cloneVM,
			check: and{perm{path: "/vms/{vmid}", privs: []string{"VM.Clone"}}, or{
				perm{path: "/vms/{newid}", privs: []string{"VM.Allocate"}},
				perm{path: "/pool/{pool}", privs: []string{"VM.Allocate"}, requireParam: "pool"}}},
			schema: []param{nodeParam, vmidParam, {name: "newid", format: fmtVMID}, opt("name", tString),
				opt("description", tString), {name: "pool", optional: true, format: pveacl.ValidPoolID}, opt("snapname", tString),
				{name: "storage", optional: true, format: fmtStorageID}, {name: "format", optional: true, enum: []string{"raw", "qcow2", "vmdk"}},
				opt("full", tBool), {name: "target", optional: true, format: fmtNode}, {name: "bwlimit", typ: tInt, optional: true, min: &zero}}},
		{method: "POST", path: "/nodes/{node}/qemu/{vmid}/template", handle: convertTemplate,
			check:  perm{path: "/vms/{vmid}", privs: []string{"VM.Allocate"}},
			schema: []param{nodeParam, vmidParam, {name: "disk", optional: true, format: fmtDriveKey}}},
		{method: "PUT", path: "/nodes/{node}/qemu/{vmid}/resize", handle: resizeDisk,
			check: perm{path: "/vms/{vmid}", privs: []string{"VM.Config.Disk"}},
			schema: []param{nodeParam, vmidParam, {name: "disk", format: fmtDriveKey}, {name: "size", pattern: sizePattern},
				opt("digest", tString), opt("skiplock", tBool)}},
		unlinkRoute(),
	}
}

var sizePattern = regexp.MustCompile(`^\+?\d+(\.\d+)?[KMGT]?$`)

func fmtDriveKey(v string) error {
	if !isDriveKey(v) {
		return errString("value '" + v + "' is not a valid drive name")
	}
	return nil
}

// cloneVM is POST .../clone: a linked clone of a template by default, a
// full copy otherwise or with full=1; the clone gets a new SMBIOS UUID,
// new MAC addresses and, with pool, a pool membership.
func cloneVM(c *call) (any, *apiError) {
	vmid, newid, pool := c.p.int("vmid"), c.p.int("newid"), c.p["pool"]
	target := c.p["target"]
	if target == c.node || target == "localhost" {
		target = ""
	}
	if err := c.cloneTargetChecks(pool, target); err != nil {
		return nil, err
	}
	g, err := c.loadGuest()
	if err != nil {
		return nil, err
	}
	if l := g.conf["lock"]; l != "" {
		return nil, die("VM is locked (%s)", l)
	}
	if sn := c.p["snapname"]; sn != "" {
		return nil, die("snapshot '%s' does not exist", sn)
	}
	full := c.p.flag("full", g.conf["template"] != "1")
	if err := c.cloneChecks(g, full, target, newid); err != nil {
		return nil, err
	}
	node := c.node
	if target != "" {
		node = target
	}
	return c.startTask("qmclone", strconv.Itoa(vmid), func(l *taskLog) error {
		return c.cloneGuest(g, newid, node, full, pool, l)
	}), nil
}

func (c *call) cloneTargetChecks(pool, target string) *apiError {
	if _, ok := c.s.cfg.Pools[pool]; pool != "" && !ok {
		return permError("pool '" + pool + "' does not exist")
	}
	if target != "" {
		if err := c.nodeExists(target); err != nil {
			return err
		}
	}
	sid := c.p["storage"]
	if sid == "" {
		return nil
	}
	st, ok := c.s.stores[sid]
	if !ok {
		return die("storage '%s' does not exist", sid)
	}
	if !st.onNode(c.node) {
		return die("storage '%s' is not available on node '%s'", sid, c.node)
	}
	if !st.content["images"] {
		return paramErr("storage", "storage '%s' does not support vm images", sid)
	}
	if target != "" && !st.shared {
		return die("can't clone to non-shared storage '%s'", sid)
	}
	return nil
}

func (c *call) cloneChecks(g *guest, full bool, target string, newid int) *apiError {
	if !full && c.p.has("storage") {
		return die("parameter 'storage' not allowed for linked clones")
	}
	if !full && c.p.has("format") {
		return die("parameter 'format' not allowed for linked clones")
	}
	shared, err := c.checkStorageAccessClone(g.conf, c.p["storage"])
	if err != nil {
		return err
	}
	if err := c.checkMappingAccess(g.conf); err != nil {
		return err
	}
	if err := c.checkBridgeAccess(g.conf); err != nil {
		return err
	}
	if target != "" && !shared {
		return die("can't clone VM to node '%s' (VM uses local storage)", target)
	}
	if _, ok := c.s.vms[newid]; ok {
		return die("unable to create VM %d: config file already exists", newid)
	}
	for _, k := range sortedKeys(g.conf) {
		if d, err := parseDrive(g.conf[k]); isDriveKey(k) && err == nil && !d.cdrom() && !d.cloudinit() && !full {
			if !c.s.linkedCloneable(g, d.file) {
				return die("Linked clone feature is not supported for '%s' (%s)", d.file, k)
			}
		}
	}
	return nil
}

// checkStorageAccessClone is qemu-server's check: Datastore.AllocateSpace on
// each disk's target storage; it reports whether every disk is shared.
func (c *call) checkStorageAccessClone(conf map[string]string, storage string) (bool, *apiError) {
	shared := true
	for _, k := range sortedKeys(conf) {
		d, err := parseDrive(conf[k])
		if !isDriveKey(k) || err != nil || d.file == "none" {
			continue
		}
		if d.cdrom() && d.file == "cdrom" {
			if e := c.require("/", "Sys.Console"); e != nil {
				return false, e
			}
			continue
		}
		sid, _, _ := parseVolid(d.file)
		if st, ok := c.s.stores[sid]; !ok || !st.shared {
			shared = false
		}
		if d.cdrom() {
			continue
		}
		if storage != "" {
			sid = storage
		}
		if e := c.require("/storage/"+sid, "Datastore.AllocateSpace"); e != nil {
			return false, e
		}
	}
	return shared, nil
}

// linkedCloneable reports whether a disk of a template can back a linked
// clone: a base volume on a storage with the clone feature (thin pools,
// RBD, ZFS, or qcow2 on a file storage).
func (s *state) linkedCloneable(g *guest, volid string) bool {
	sid, name, ok := parseVolid(volid)
	st, known := s.stores[sid]
	if !ok || !known || g.conf["template"] != "1" {
		return false
	}
	_, own := splitBase(st, name)
	base := strings.HasPrefix(ownFile(own), "base-")
	switch st.typ {
	case "lvmthin", "rbd", "zfspool":
		return base
	}
	return base && st.fileBased() && strings.HasSuffix(own, ".qcow2")
}

func (c *call) cloneGuest(g *guest, newid int, node string, full bool, pool string, l *taskLog) error {
	if _, ok := c.s.vms[newid]; ok {
		return fmt.Errorf("clone failed: unable to create VM %d: config file already exists", newid)
	}
	l.printf("creating a clone of VM %d with ID %d", g.vmid, newid)
	conf := map[string]string{}
	var made []string
	for _, k := range sortedKeys(g.conf) {
		v := g.conf[k]
		switch {
		case unusedRe.MatchString(k), k == "lock", k == "template":
			continue
		case strings.HasPrefix(k, "net") && indexedRe.MatchString(k):
			v = c.s.withMAC(stripMAC(v))
		case isDriveKey(k):
			nv, volid, err := c.cloneDrive(g, newid, node, k, v, full, l)
			if err != nil {
				for _, id := range made {
					c.s.dropVolume(node, id)
				}
				return fmt.Errorf("clone failed: %w", err)
			}
			if volid != "" {
				made = append(made, volid)
			}
			v = nv
		}
		conf[k] = v
	}
	conf["smbios1"] = newSMBIOS(conf["smbios1"], c.s.newUUID())
	if _, ok := conf["vmgenid"]; ok {
		conf["vmgenid"] = c.s.newUUID()
	}
	conf["name"] = c.p["name"]
	if conf["name"] == "" {
		conf["name"] = "Copy-of-VM-" + orDefault(g.conf["name"], strconv.Itoa(g.vmid))
	}
	if d := c.p["description"]; d != "" {
		conf["description"] = d
	}
	c.s.vms[newid] = &guest{vmid: newid, node: node, conf: conf}
	if pool != "" {
		c.s.addToPool(pool, newid)
	}
	return nil
}

// cloneDrive copies a disk: a linked clone names the base volume, a full
// clone allocates a new volume of the same size on the target storage.
func (c *call) cloneDrive(g *guest, newid int, node, key, value string, full bool, l *taskLog) (string, string, error) {
	d, err := parseDrive(value)
	if err != nil || d.cdrom() || d.file == "none" {
		return value, "", nil
	}
	sid, name, _ := parseVolid(d.file)
	if d.cloudinit() {
		volid := fmt.Sprintf("%s:vm-%d-cloudinit", sid, newid)
		c.s.putVolume(node, &volume{volid: volid, storage: sid, vtype: "images", format: "raw", owner: newid, size: 4 << 20})
		d.file = volid
		return d.String(), volid, nil
	}
	src, ok := c.s.volume(g.node, d.file)
	if !ok {
		return "", "", fmt.Errorf("volume '%s' does not exist", d.file)
	}
	var volid string
	if full {
		target := sid
		if s := c.p["storage"]; s != "" {
			target = s
		}
		l.printf("create full clone of drive %s (%s)", key, d.file)
		volid = c.s.allocDisk(node, c.s.stores[target], newid, src.size, c.p["format"])
	} else {
		l.printf("create linked clone of drive %s (%s)", key, d.file)
		volid = c.s.linkedVolume(node, c.s.stores[sid], name, newid, src)
	}
	d.file, d.opts["size"] = volid, formatSize(src.size)
	return d.String(), volid, nil
}

// linkedVolume names a linked clone of srcName for newid as the storage's
// plugin does and records it.
func (s *state) linkedVolume(node string, st *storage, srcName string, newid int, src *volume) string {
	_, own := splitBase(st, srcName)
	for n := 0; ; n++ {
		if s.volNameUsed(st, newid, n) {
			continue
		}
		var name string
		switch {
		case st.fileBased():
			name = fmt.Sprintf("%s/%d/vm-%d-disk-%d.qcow2", own, newid, newid, n)
		case st.typ == "lvmthin":
			name = fmt.Sprintf("vm-%d-disk-%d", newid, n)
		default:
			name = fmt.Sprintf("%s/vm-%d-disk-%d", own, newid, n)
		}
		volid := st.id + ":" + name
		s.putVolume(node, &volume{volid: volid, storage: st.id, vtype: "images", format: src.format, owner: newid,
			size: src.size, ctime: s.now().Unix()})
		return volid
	}
}

func stripMAC(v string) string {
	parts := strings.Split(v, ",")
	if k, _, ok := strings.Cut(parts[0], "="); ok && netModels[k] {
		parts[0] = k
	}
	return strings.Join(parts, ",")
}

// smbios1Keys are the keys of qemu-server's $smbios1_fmt.
var smbios1Keys = set("base64", "family", "manufacturer", "product", "serial", "sku", "uuid", "version")

// newSMBIOS is clone_vm's "auto generate a new uuid" (src/PVE/API2/Qemu.pm):
// parse_smbios1, a new uuid, print_smbios1. print_property_string writes
// the keys sorted (none of $smbios1_fmt's keys is required or the default
// key), so uuid comes after family, manufacturer, product, serial and sku;
// a value that does not parse is dropped with a warning, leaving the uuid.
func newSMBIOS(old, uuid string) string {
	fields := map[string]string{}
	for _, f := range strings.Split(old, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok || v == "" || fields[k] != "" || !smbios1Keys[k] {
			fields = map[string]string{}
			break
		}
		fields[k] = v
	}
	fields["uuid"] = uuid
	parts := make([]string, 0, len(fields))
	for _, k := range sortedKeys(fields) {
		parts = append(parts, k+"="+fields[k])
	}
	return strings.Join(parts, ",")
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// convertTemplate is POST .../template: a qmtemplate worker renames the
// disks to base volumes and sets template: 1.
func convertTemplate(c *call) (any, *apiError) {
	g, err := c.loadGuest()
	if err != nil {
		return nil, err
	}
	if g.conf["template"] == "1" {
		return nil, die("you can't convert a template to a template")
	}
	if g.running {
		return nil, die("you can't convert a VM to template if VM is running")
	}
	if l := g.conf["lock"]; l != "" {
		return nil, die("VM is locked (%s)", l)
	}
	return c.startTask("qmtemplate", strconv.Itoa(g.vmid), func(l *taskLog) error {
		for _, k := range sortedKeys(g.conf) {
			if only := c.p["disk"]; isDriveKey(k) && (only == "" || only == k) {
				c.makeBase(g, k)
			}
		}
		g.conf["template"] = "1"
		return nil
	}), nil
}

// makeBase renames a disk to a base volume (its own part: vm-N- becomes
// base-N-), as the plugins' create_base does.
func (c *call) makeBase(g *guest, key string) {
	d, err := parseDrive(g.conf[key])
	if err != nil || d.cdrom() || d.cloudinit() {
		return
	}
	vol, ok := c.s.volume(g.node, d.file)
	sid, name, _ := parseVolid(d.file)
	st := c.s.stores[sid]
	if !ok || st == nil {
		return
	}
	base, own := splitBase(st, name)
	file := ownFile(own)
	prefix := fmt.Sprintf("vm-%d-", g.vmid)
	if !strings.HasPrefix(file, prefix) {
		return
	}
	own = own[:len(own)-len(file)] + fmt.Sprintf("base-%d-", g.vmid) + file[len(prefix):]
	if base != "" {
		own = base + "/" + own
	}
	c.s.dropVolume(g.node, d.file)
	vol.volid, vol.base = sid+":"+own, true
	c.s.putVolume(g.node, vol)
	d.file = vol.volid
	g.conf[key] = d.String()
}

// resizeDisk is PUT .../resize, as qemu-server's resize_vm
// (src/PVE/API2/Qemu.pm): only skiplock is judged before the worker; the
// worker checks the digest ("checksum mismatch (file change by other
// user?)"), the lock, the disk, Datastore.AllocateSpace on the disk's
// storage, and refuses to shrink; an unchanged size writes nothing.
func resizeDisk(c *call) (any, *apiError) {
	g, err := c.loadGuest()
	if err != nil {
		return nil, err
	}
	skiplock := c.p.flag("skiplock", false)
	if skiplock && !c.isRoot() {
		return nil, paramErr("skiplock", "Only root may use this option.")
	}
	digest, key, sizeStr := c.p["digest"], c.p["disk"], c.p["size"]
	return c.startTask("resize", strconv.Itoa(g.vmid), func(l *taskLog) error {
		if digest != "" && digest != g.digest() {
			return errors.New("checksum mismatch (file change by other user?)")
		}
		if lock := g.conf["lock"]; lock != "" && !skiplock {
			return fmt.Errorf("VM is locked (%s)", lock)
		}
		d, vol, err := c.resizeTarget(g, key)
		if err != nil {
			return err
		}
		n, rel, err := parseSize(sizeStr)
		if err != nil {
			return err
		}
		if rel {
			n += vol.size
		}
		if n < vol.size {
			return errors.New("shrinking disks is not supported")
		}
		if n == vol.size {
			return nil
		}
		l.printf("update VM %d: resize --disk %s --size %s", g.vmid, key, sizeStr)
		vol.size, d.opts["size"] = n, formatSize(n)
		g.conf[key] = d.String()
		return nil
	}), nil
}

// resizeTarget finds the drive and volume a resize grows, after the
// Datastore.AllocateSpace check on the volume's storage.
func (c *call) resizeTarget(g *guest, key string) (*drive, *volume, error) {
	v, ok := g.conf[key]
	if !ok {
		return nil, nil, fmt.Errorf("disk '%s' does not exist", key)
	}
	d, err := parseDrive(v)
	if err != nil {
		return nil, nil, err
	}
	if d.cdrom() {
		return nil, nil, errors.New("you can't resize a cdrom")
	}
	storeID, _, _ := strings.Cut(d.file, ":")
	if _, perr := c.checkAll("/storage/"+storeID, []string{"Datastore.AllocateSpace"}, false); perr != nil {
		return nil, nil, perr
	}
	vol, ok := c.s.volume(g.node, d.file)
	if !ok {
		return nil, nil, fmt.Errorf("Could not determine current size of volume '%s'", d.file)
	}
	return &d, vol, nil
}
