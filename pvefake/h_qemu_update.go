package pvefake

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// updateConfig is PUT (sync) and POST (async, a qmconfig task) of
// /nodes/{node}/qemu/{vmid}/config.
func updateConfig(c *call, sync bool) (any, *apiError) {
	g, err := c.loadGuest()
	if err != nil {
		return nil, err
	}
	if c.p.flag("skiplock", false) && !c.isRoot() {
		return nil, paramErr("skiplock", "Only root may use this option.")
	}
	conf := configParams(c.p)
	deletes, err := deleteList(c.p["delete"], conf)
	if err != nil {
		return nil, err
	}
	if len(conf) == 0 && len(deletes) == 0 && c.p["revert"] == "" {
		return nil, die("no options specified")
	}
	if err := c.checkModifyConfigPerm(g.vmid, "", deletes); err != nil {
		return nil, err
	}
	if err := c.configChecks(g.vmid, "", conf, "", false); err != nil {
		return nil, err
	}
	if d := c.p["digest"]; d != "" && d != g.digest() {
		return nil, die("detected modified configuration - file changed by other user? Try again.")
	}
	if l := g.conf["lock"]; l != "" {
		return nil, die("VM is locked (%s)", l)
	}
	work := func(l *taskLog) error { return c.applyConfig(g, conf, deletes, l) }
	if sync {
		if err := work(&taskLog{}); err != nil {
			var ae *apiError
			if errors.As(err, &ae) {
				return nil, ae
			}
			return nil, die("%v", err)
		}
		return nil, nil
	}
	return c.startTask("qmconfig", strconv.Itoa(g.vmid), work), nil
}

func deleteList(list string, conf map[string]string) ([]string, *apiError) {
	var out []string
	for _, k := range pveacl.SplitList(list) {
		if k == "cdrom" {
			k = "ide2"
		}
		if _, both := conf[k]; both {
			return nil, paramErr("delete", "you can't use '-%s' and -delete %s' at the same time", k, k)
		}
		if !isConfigKey(k) {
			return nil, paramErr("delete", "unknown option '%s'", k)
		}
		out = append(out, k)
	}
	return out, nil
}

// applyConfig is the worker of update_vm_api (src/PVE/API2/Qemu.pm,
// $updatefn): it logs the request, then deletes and sets one option after
// the other, each written as it is done, so a failing check leaves the
// options before it changed, as PVE's pending section keeps them. PVE
// walks the options to set in Perl's hash order, which varies from run to
// run; the server takes them sorted. Each drive, the one replaced and the
// new one, needs the privilege $check_drive_perms asks: VM.Config.CDROM for
// a CD-ROM, VM.Config.Cloudinit and VM.Config.CDROM for a cloud-init drive,
// VM.Config.Disk for a disk. A CD-ROM added to a guest whose boot has an
// order joins the order; a deleted device leaves it; a new boot order must
// name devices the guest has.
func (c *call) applyConfig(g *guest, conf map[string]string, deletes []string, l *taskLog) error {
	l.printf("update VM %d: %s", g.vmid, c.updateParamText())
	order := bootOrderOf(g.conf["boot"])
	for _, k := range deletes {
		if err := c.deleteOption(g, k, &order, l); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(conf) {
		if err := c.setOption(g, k, conf, deletes, &order, l); err != nil {
			return err
		}
	}
	return nil
}

// updateParamText is update_vm_api's @paramarr: the request's parameters
// but node, vmid, digest and background_delay, sorted, as "-key value".
func (c *call) updateParamText() string {
	var parts []string
	for _, k := range sortedKeys(c.p) {
		switch k {
		case "node", "vmid", "digest", "background_delay", "skip_cloud_init", "import-working-storage":
			continue
		}
		v := c.p[k]
		if k == "cipassword" {
			v = "<hidden>"
		}
		parts = append(parts, "-"+k, v)
	}
	return strings.Join(parts, " ")
}

// bootOrderOf is the device list of a boot value's order, if it has one.
func bootOrderOf(boot string) []string {
	b, err := parseBoot(boot, "")
	if err != nil {
		return nil
	}
	return b.order
}

// setBootOrder writes a changed boot order as print_bootorder does; the
// empty order is the blank value PVE reads back.
func setBootOrder(g *guest, order []string) {
	g.conf["boot"] = printBootOrder(order)
	if g.conf["boot"] == "" {
		g.conf["boot"] = " "
	}
}

// checkDrivePerms is update_vm_api's $check_drive_perms.
func (c *call) checkDrivePerms(vmid int, value string) *apiError {
	d, err := parseDrive(value)
	switch {
	case err == nil && d.cloudinit() && d.cdrom():
		return c.checkVMPerm(vmid, "", []string{"VM.Config.Cloudinit", "VM.Config.CDROM"}, false)
	case err == nil && d.cdrom():
		return c.checkVMPerm(vmid, "", []string{"VM.Config.CDROM"}, false)
	}
	return c.checkVMPerm(vmid, "", []string{"VM.Config.Disk"}, false)
}

// setOption is one step of $updatefn's add/change loop.
func (c *call) setOption(g *guest, k string, conf map[string]string, deletes []string, order *[]string, l *taskLog) error {
	v := conf[k]
	switch {
	case isDriveKey(k):
		return c.setDrive(g, k, v, order, l)
	case k == "tags":
		if err := c.assertTagPermissions(g.vmid); err != nil {
			return err
		}
		v = normalizeTags(v)
	case hostPCIKeyRe.MatchString(k):
		if old := g.conf[k]; old != "" {
			if err := c.checkHostPCIPerm(g.vmid, "", k, old); err != nil {
				return err.inWorker()
			}
		}
		if err := c.checkHostPCIPerm(g.vmid, "", k, v); err != nil {
			return err.inWorker()
		}
	case strings.HasPrefix(k, "net") && indexedRe.MatchString(k):
		v = c.s.withMAC(v)
	case k == "boot":
		b, err := parseBoot(v, "")
		if err != nil {
			return err
		}
		if b.hasOrder {
			for _, dev := range b.order {
				_, inConf := g.conf[dev]
				_, inParam := conf[dev]
				if (!inConf && !inParam) || slices.Contains(deletes, dev) {
					return fmt.Errorf("invalid bootorder: device '%s' does not exist'", dev)
				}
			}
			*order = slices.Clone(b.order)
			setBootOrder(g, b.order)
			delete(g.conf, "bootdisk") // "remove legacy boot order settings if new one set"
			return nil
		}
	}
	g.conf[k] = v
	return nil
}

// setDrive sets a drive after $check_drive_perms on the old and the new
// value; a new CD-ROM joins a boot order that does not name it yet.
func (c *call) setDrive(g *guest, k, v string, order *[]string, l *taskLog) error {
	old, had := g.conf[k]
	if had {
		if err := c.checkDrivePerms(g.vmid, old); err != nil {
			return err
		}
	}
	if err := c.checkDrivePerms(g.vmid, v); err != nil {
		return err
	}
	nv, _, err := c.createDrive(g.vmid, k, v, "", l)
	if err != nil {
		return err
	}
	if had && old != nv {
		c.detach(g, old)
	}
	g.conf[k] = nv
	if d, err := parseDrive(nv); err == nil && len(*order) > 0 && d.cdrom() && !d.cloudinit() && !slices.Contains(*order, k) {
		*order = append(*order, k)
		setBootOrder(g, *order)
	}
	return nil
}

// deleteOption is one step of $updatefn's delete loop: a missing option
// is a warning, a deleted device leaves the boot order, an unused disk is
// freed (VM.Config.Disk), a drive needs $check_drive_perms and may not go
// from a protected guest, tags need their permission.
func (c *call) deleteOption(g *guest, k string, order *[]string, l *taskLog) error {
	v, ok := g.conf[k]
	if !ok {
		l.printf("cannot delete '%s' - not set in current configuration!", k)
		return nil
	}
	if i := slices.Index(*order, k); i >= 0 {
		*order = slices.Delete(*order, i, i+1)
		setBootOrder(g, *order)
	}
	switch {
	case unusedRe.MatchString(k):
		d, perr := parseDrive(v)
		if perr == nil && g.conf["protection"] == "1" {
			return fmt.Errorf("can't remove unused disk '%s' - protection mode enabled", d.file)
		}
		if err := c.checkVMPerm(g.vmid, "", []string{"VM.Config.Disk"}, false); err != nil {
			return err
		}
		delete(g.conf, k)
		if perr == nil {
			if vol, ok := c.s.volume(g.node, d.file); ok && vol.owner == g.vmid {
				c.s.dropVolume(g.node, d.file)
			}
		}
		return nil
	case isDriveKey(k):
		if g.conf["protection"] == "1" {
			return fmt.Errorf("can't remove drive '%s' - protection mode enabled", k)
		}
		if err := c.checkDrivePerms(g.vmid, v); err != nil {
			return err
		}
		delete(g.conf, k)
		c.detach(g, v)
		return nil
	case k == "tags":
		if err := c.assertTagPermissions(g.vmid); err != nil {
			return err
		}
	case hostPCIKeyRe.MatchString(k):
		if err := c.checkHostPCIPerm(g.vmid, "", k, v); err != nil {
			return err.inWorker()
		}
	}
	delete(g.conf, k)
	return nil
}

// detach keeps a replaced or removed disk of the guest as unusedN.
func (c *call) detach(g *guest, value string) {
	d, err := parseDrive(value)
	if err != nil || d.cdrom() || d.cloudinit() {
		return
	}
	if vol, ok := c.s.volume(g.node, d.file); ok && vol.owner == g.vmid {
		for n := 0; ; n++ {
			k := fmt.Sprintf("unused%d", n)
			if _, taken := g.conf[k]; !taken {
				g.conf[k] = d.file
				return
			}
		}
	}
}

// destroyVM is DELETE /nodes/{node}/qemu/{vmid}: a qmdestroy worker frees
// the guest's volumes (those its configuration names, and with
// destroy-unreferenced-disks every image it owns), removes its ACL entries
// and pool membership. As destroy_vm's early checks in qemu-server's
// src/PVE/API2/Qemu.pm: protection first, then an HA resource of the guest
// (service_is_configured, so an 'ignored' one as well) refuses the destroy
// unless purge is set, then a running guest. With purge the worker removes
// the HA resource too (delete_service_from_config, which on PVE 9 also
// takes it out of the rules).
func destroyVM(c *call) (any, *apiError) {
	g, err := c.loadGuest()
	if err != nil {
		return nil, err
	}
	if c.p.flag("skiplock", false) && !c.isRoot() {
		return nil, paramErr("skiplock", "Only root may use this option.")
	}
	if g.conf["protection"] == "1" {
		return nil, die("can't remove VM %d - protection mode enabled", g.vmid)
	}
	purge := c.p.flag("purge", false)
	sid := "vm:" + strconv.Itoa(g.vmid)
	if c.s.ha().resources[sid] != nil && !purge {
		return nil, die("unable to remove VM %d - used in HA resources and purge parameter not set.", g.vmid)
	}
	if g.running {
		return nil, die("VM %d is running - destroy failed", g.vmid)
	}
	return c.startTask("qmdestroy", strconv.Itoa(g.vmid), func(l *taskLog) error {
		if g.conf["lock"] != "" && !c.p.flag("skiplock", false) {
			return fmt.Errorf("VM is locked (%s)", g.conf["lock"])
		}
		if user := c.s.linkedCloneOf(g); user != "" {
			return fmt.Errorf("base volume '%s' is still in use by linked clones", user)
		}
		c.destroyDisks(g, c.p.flag("destroy-unreferenced-disks", false), l)
		delete(c.s.vms, g.vmid)
		c.s.dropACLUnder(vmPath(g.vmid))
		c.s.removeFromPools(g.vmid)
		if purge {
			l.printf("purging VM %d from related configurations..", g.vmid)
			if c.s.ha().resources[sid] != nil {
				c.s.ha().deleteService(sid, c.groupsMigrated())
				l.printf("NOTE: removed VM %d from HA resource configuration.", g.vmid)
			}
		}
		return nil
	}), nil
}

// linkedCloneOf returns a base volume of g that a linked clone stands on,
// or "" (volume_is_base_and_used). LVM-thin names carry no base, so there
// PVE, and this server, let a template go while clones use it.
func (s *state) linkedCloneOf(g *guest) string {
	for _, v := range s.volumes {
		st := s.stores[v.storage]
		_, name, _ := parseVolid(v.volid)
		if st == nil || v.owner == g.vmid {
			continue
		}
		base, _ := splitBase(st, name)
		if base == "" {
			continue
		}
		file := ownFile(base)
		if strings.HasPrefix(file, "base-"+strconv.Itoa(g.vmid)+"-") {
			return base
		}
	}
	return ""
}

// destroyDisks is destroy_vm's removal of owned drives: every volume the
// configuration names (unused ones and vmstate included, CD-ROMs but not
// cloud-init drives left out) that belongs to the guest is freed; one that
// cannot be freed is a warning, never a failure.
func (c *call) destroyDisks(g *guest, unreferenced bool, l *taskLog) {
	seen := map[string]bool{}
	for _, k := range sortedKeys(g.conf) {
		if !isDriveKey(k) && !unusedRe.MatchString(k) && k != "vmstate" {
			continue
		}
		d, err := parseDrive(g.conf[k])
		if err != nil || (d.cdrom() && !d.cloudinit()) || seen[d.file] {
			continue
		}
		sid, name, ok := parseVolid(d.file)
		if !ok || strings.HasPrefix(d.file, "/") {
			continue
		}
		seen[d.file] = true
		st := c.s.stores[sid]
		if st == nil {
			l.warn("failed to get path and owner of volume '%s': storage '%s' does not exist", d.file, sid)
			continue
		}
		if _, owner, err := parseVolname(name); err != nil || owner != g.vmid {
			continue
		}
		if _, ok := c.s.volume(g.node, d.file); ok {
			c.s.dropVolume(g.node, d.file)
			l.printf("Removing image: 100%% complete...done.")
			continue
		}
		if msg := freeMissing(st, name, l); msg != "" {
			l.warn("Could not remove disk '%s', check manually: %s", d.file, msg)
		}
	}
	if !unreferenced {
		return
	}
	for k, v := range c.s.volumes {
		if v.owner == g.vmid && v.vtype == "images" && (k.node == "" || k.node == g.node) {
			delete(c.s.volumes, k)
			l.printf("Removing image: 100%% complete...done.")
		}
	}
}
