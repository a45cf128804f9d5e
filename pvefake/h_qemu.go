package pvefake

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

var (
	nodeParam = param{name: "node", format: fmtNode}
	vmidParam = param{name: "vmid", format: fmtVMID}
)

func qemuRoutes() []*route {
	audit := perm{path: "/vms/{vmid}", privs: []string{"VM.Audit"}}
	cfgAny := perm{path: "/vms/{vmid}", privs: vmConfigPerms, any: true}
	update := []param{nodeParam, vmidParam, opt("digest", tString), opt("delete", tString), opt("revert", tString),
		opt("skiplock", tBool), opt("force", tBool), {name: "background_delay", typ: tInt, optional: true}}
	return []*route{
		{method: "GET", path: "/nodes/{node}/qemu", schema: []param{nodeParam, opt("full", tBool)}, handle: listVMs},
		{method: "POST", path: "/nodes/{node}/qemu", extra: isConfigKey, handle: createVM, schema: withConfigValues([]param{nodeParam, vmidParam,
			{name: "pool", optional: true, format: pveacl.ValidPoolID}, {name: "storage", optional: true, format: fmtStorageID},
			opt("start", tBool), opt("force", tBool), opt("unique", tBool)})},
		{method: "GET", path: "/nodes/{node}/qemu/{vmid}/config", check: audit, handle: readConfig,
			schema: []param{nodeParam, vmidParam, opt("current", tBool), opt("snapshot", tString)}},
		{method: "POST", path: "/nodes/{node}/qemu/{vmid}/config", check: cfgAny, schema: withConfigValues(update), extra: isConfigKey,
			handle: func(c *call) (any, *apiError) { return updateConfig(c, false) }},
		{method: "PUT", path: "/nodes/{node}/qemu/{vmid}/config", check: cfgAny, schema: withConfigValues(update), extra: isConfigKey,
			handle: func(c *call) (any, *apiError) { return updateConfig(c, true) }},
		{method: "GET", path: "/nodes/{node}/qemu/{vmid}/status/current", check: audit, handle: vmStatus,
			schema: []param{nodeParam, vmidParam}},
		{method: "DELETE", path: "/nodes/{node}/qemu/{vmid}", check: perm{path: "/vms/{vmid}", privs: []string{"VM.Allocate"}},
			handle: destroyVM, schema: []param{nodeParam, vmidParam, opt("purge", tBool), opt("skiplock", tBool),
				opt("destroy-unreferenced-disks", tBool)}},
	}
}

func (g *guest) memBytes() uint64 {
	v := strings.TrimPrefix(strings.SplitN(g.conf["memory"], ",", 2)[0], "current=")
	if m, err := strconv.Atoi(v); err == nil {
		return uint64(m) << 20
	}
	return 512 << 20
}

func (g *guest) cpus() int {
	cores, sockets := 1, 1
	if n, err := strconv.Atoi(g.conf["cores"]); err == nil {
		cores = n
	}
	if n, err := strconv.Atoi(g.conf["sockets"]); err == nil {
		sockets = n
	}
	return cores * sockets
}

// bootDiskSize is the size of the first disk (scsi0, virtio0, sata0, ide0).
func (s *state) bootDiskSize(g *guest) uint64 {
	for _, k := range []string{"scsi0", "virtio0", "sata0", "ide0"} {
		if d, err := parseDrive(g.conf[k]); err == nil && !d.cdrom() {
			if v, ok := s.volume(g.node, d.file); ok {
				return v.size
			}
		}
	}
	return 0
}

// loadGuest finds the guest of the request on the request's node.
func (c *call) loadGuest() (*guest, *apiError) {
	vmid := c.p.int("vmid")
	g, ok := c.s.vms[vmid]
	if !ok || g.node != c.node {
		return nil, die("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", c.node, vmid)
	}
	return g, nil
}

func listVMs(c *call) (any, *apiError) {
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, id := range c.s.vmIDs() {
		g := c.s.vms[id]
		if g.node != c.node {
			continue
		}
		if ok, _ := c.checkAll(vmPath(id), []string{"VM.Audit"}, true); ok {
			out = append(out, c.s.statusEntry(g))
		}
	}
	return out, nil
}

// statusEntry is GET status/current: template only when set, and an
// unnamed guest called "VM <vmid>", as qemu-server's vmstatus does.
func (s *state) statusEntry(g *guest) map[string]any {
	status := "stopped"
	if g.running {
		status = "running"
	}
	name := g.conf["name"]
	if name == "" {
		name = fmt.Sprintf("VM %d", g.vmid)
	}
	e := map[string]any{"vmid": g.vmid, "name": name, "status": status, "qmpstatus": status,
		"cpus": g.cpus(), "maxmem": g.memBytes(), "maxdisk": s.bootDiskSize(g), "mem": 0, "disk": 0, "cpu": 0,
		"uptime": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0, "ha": s.haStatus(g.vmid)}
	if g.conf["template"] == "1" {
		e["template"] = 1
	}
	if t := g.conf["tags"]; t != "" {
		e["tags"] = t
	}
	if l := g.conf["lock"]; l != "" {
		e["lock"] = l
	}
	if strings.HasPrefix(g.conf["agent"], "1") || strings.Contains(g.conf["agent"], "enabled=1") {
		e["agent"] = 1
	}
	return e
}

func vmStatus(c *call) (any, *apiError) {
	g, err := c.loadGuest()
	if err != nil {
		return nil, err
	}
	return c.s.statusEntry(g), nil
}

func readConfig(c *call) (any, *apiError) {
	g, err := c.loadGuest()
	if err != nil {
		return nil, err
	}
	out := map[string]any{"digest": g.digest()}
	for k, v := range g.conf {
		out[k] = configValue(k, v)
	}
	return out, nil
}

// digest is the SHA-1 of the configuration as qemu-server writes it.
func (g *guest) digest() string {
	h := sha1.New()
	for _, k := range sortedKeys(g.conf) {
		fmt.Fprintf(h, "%s: %s\n", k, g.conf[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// configParams returns the guest options of a request.
func configParams(p params) map[string]string {
	out := map[string]string{}
	for k, v := range p {
		if isConfigKey(k) {
			out[k] = v
		}
	}
	if v, ok := out["cdrom"]; ok {
		delete(out, "cdrom")
		out["ide2"] = v + ",media=cdrom"
	}
	return out
}

// createVM is POST /nodes/{node}/qemu: VM.Allocate on /vms/{vmid} or on
// /pool/{pool}, Datastore.AllocateSpace on new disks' storages, SDN.Use on
// bridges, then a qmcreate worker that allocates the disks (import-from
// copies an import or image volume), adds boot (the default order),
// smbios1, vmgenid and meta, and puts the guest into the pool.
func createVM(c *call) (any, *apiError) {
	vmid, pool := c.p.int("vmid"), c.p["pool"]
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	if err := c.createChecks(vmid, pool); err != nil {
		return nil, err
	}
	conf := configParams(c.p)
	if err := c.configChecks(vmid, pool, conf, c.p["storage"], true); err != nil {
		return nil, err
	}
	if g, ok := c.s.vms[vmid]; ok {
		return nil, die("unable to create VM %d - VM %d already exists on node '%s'", vmid, vmid, g.node)
	}
	return c.startTask("qmcreate", strconv.Itoa(vmid), func(l *taskLog) error {
		return c.createGuest(vmid, conf, pool, c.p["storage"], l)
	}), nil
}

func (c *call) createChecks(vmid int, pool string) *apiError {
	if _, ok := c.s.cfg.Pools[pool]; pool != "" && !ok {
		return permError("pool '" + pool + "' does not exist")
	}
	if st := c.p["storage"]; st != "" {
		if err := c.require("/storage/"+st, "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	if c.p.flag("start", false) {
		if err := c.checkVMPerm(vmid, pool, []string{"VM.PowerMgmt"}, false); err != nil {
			return err
		}
	}
	if ok, _ := c.checkAll(vmPath(vmid), []string{"VM.Allocate"}, true); ok {
		return nil
	}
	if ok, _ := c.checkAll("/pool/"+pool, []string{"VM.Allocate"}, true); pool != "" && ok {
		return nil
	}
	return permError("")
}

// configChecks runs the per-option checks of a create or update; a
// create checks its hostpciN options here, an update as it sets them.
func (c *call) configChecks(vmid int, pool string, conf map[string]string, defStorage string, create bool) *apiError {
	if err := c.checkStorageAccess(vmid, conf, defStorage); err != nil {
		return err
	}
	if err := c.checkModifyConfigPerm(vmid, pool, sortedKeys(conf)); err != nil {
		return err
	}
	if create {
		if err := c.checkCreateHostPCIPerm(vmid, pool, conf); err != nil {
			return err
		}
	}
	if err := c.checkBridgeAccess(conf); err != nil {
		return err
	}
	if t, ok := conf["tags"]; ok {
		return checkTags(t)
	}
	return nil
}

// createGuest is the qmcreate worker: the disks are allocated first, then
// the tags' permission is asserted while the guest is in no pool yet (on
// failure the disks are freed again), and the guest joins its pool last.
func (c *call) createGuest(vmid int, conf map[string]string, pool, defStorage string, l *taskLog) error {
	final, made, err := c.buildConfig(vmid, conf, defStorage, l)
	if err == nil && final["tags"] != "" {
		if perr := c.assertTagPermissions(vmid); perr != nil {
			c.freeVolumes(made)
			err = perr
		}
	}
	if err != nil {
		return fmt.Errorf("unable to create VM %d - %w", vmid, err)
	}
	if final["boot"] == "" {
		final["boot"] = newGuestBoot(final)
	}
	if final["smbios1"] == "" {
		final["smbios1"] = "uuid=" + c.s.newUUID()
	}
	if v, ok := final["vmgenid"]; !ok || v == "1" {
		final["vmgenid"] = c.s.newUUID()
	}
	final["meta"] = fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", c.s.now().Unix())
	c.s.vms[vmid] = &guest{vmid: vmid, node: c.node, conf: final}
	if pool != "" {
		c.s.addToPool(pool, vmid)
	}
	return nil
}

// attachVolume is create_disks for a drive naming an existing volume: the
// volume is activated (a file storage's plugin fails on a missing file
// with "volume '<volid>' does not exist") and its size joins the drive's
// options, as print_drive writes them (size=57354 for an ISO of that many
// bytes). Paths outside a storage are kept as they are.
func (c *call) attachVolume(d drive, value string) (string, string, error) {
	sid, _, ok := parseVolid(d.file)
	st, known := c.s.stores[sid]
	if !ok || !known || strings.HasPrefix(d.file, "/") {
		return value, "", nil
	}
	vol, found := c.s.volume(c.node, d.file)
	switch {
	case !found && st.fileBased():
		return "", "", fmt.Errorf("volume '%s' does not exist", d.file)
	case !found || vol.size == 0:
		return "", "", fmt.Errorf("volume %s does not exist", d.file)
	}
	d.opts["size"] = formatSize(vol.size)
	return d.String(), "", nil
}

// freeVolumes frees the volumes a failed worker allocated.
func (c *call) freeVolumes(volids []string) {
	for _, id := range volids {
		c.s.dropVolume(c.node, id)
	}
}

// buildConfig turns request options into stored ones: disks allocated,
// MAC addresses added, tags normalised. It returns the volumes it
// allocated; on failure they are freed again.
func (c *call) buildConfig(vmid int, conf map[string]string, defStorage string, l *taskLog) (map[string]string, []string, error) {
	out := map[string]string{}
	var made []string
	for _, k := range sortedKeys(conf) {
		v := conf[k]
		switch {
		case isDriveKey(k):
			nv, volid, err := c.createDrive(vmid, k, v, defStorage, l)
			if err != nil {
				c.freeVolumes(made)
				return nil, nil, err
			}
			if volid != "" {
				made = append(made, volid)
			}
			v = nv
		case strings.HasPrefix(k, "net") && indexedRe.MatchString(k):
			v = c.s.withMAC(v)
		case k == "tags":
			v = normalizeTags(v)
		}
		out[k] = v
	}
	return out, made, nil
}

// createDrive allocates a new disk (STORAGE:SIZE_GiB, or STORAGE:0 with
// import-from) or a cloud-init disk; other values are kept as they are.
func (c *call) createDrive(vmid int, key, value, defStorage string, l *taskLog) (string, string, error) {
	d, err := parseDrive(value)
	if err != nil {
		return "", "", err
	}
	if d.cloudinit() && strings.HasSuffix(d.file, ":cloudinit") {
		sid := strings.TrimSuffix(d.file, ":cloudinit")
		volid := fmt.Sprintf("%s:vm-%d-cloudinit", sid, vmid)
		c.s.putVolume(c.node, &volume{volid: volid, storage: sid, vtype: "images", format: "raw", owner: vmid, size: 4 << 20})
		d.file, d.opts["media"] = volid, "cdrom"
		return d.String(), volid, nil
	}
	m := newDiskRe.FindStringSubmatch(d.file)
	if d.file == "none" || d.file == "cdrom" {
		return value, "", nil
	}
	if d.cdrom() || m == nil {
		return c.attachVolume(d, value)
	}
	sid := m[2]
	if sid == "" {
		sid = defStorage
	}
	st := c.s.stores[sid]
	gib, _ := strconv.ParseFloat(m[3], 64)
	size := uint64(gib * (1 << 30))
	if src := d.opts["import-from"]; src != "" {
		vol, ok := c.s.volume(c.node, src)
		if !ok {
			return "", "", fmt.Errorf("unable to import '%s': volume does not exist on node '%s'", src, c.node)
		}
		size = vol.size
		delete(d.opts, "import-from")
		l.printf("importing disk '%s' to VM %d ...", src, vmid)
	} else if fixed, ok := fixedDiskSize(key, d.opts); ok {
		size = st.allocated(fixed)
	}
	volid := c.s.allocDisk(c.node, st, vmid, size, d.opts["format"])
	delete(d.opts, "format") // create_disks: "no longer needed", the volume name carries it
	l.printf("%s: successfully created disk '%s,size=%s'", key, volid, formatSize(size))
	d.file, d.opts["size"] = volid, formatSize(size)
	return d.String(), volid, nil
}

// haStatus is PVE::HA::Config::get_service_status, status/current's ha:
// managed 1 and the service's state for a resource that is not 'ignored'.
func (s *state) haStatus(vmid int) map[string]any {
	if !s.vmIsHAManaged(vmid) {
		return map[string]any{"managed": 0}
	}
	return map[string]any{"managed": 1, "state": s.haServiceState(s.haResourceOf(vmid))}
}
