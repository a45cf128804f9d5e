package pveapitest

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
	if err := c.configChecks(g.vmid, "", conf, ""); err != nil {
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

// applyConfig writes the options: new disks are allocated, a deleted disk
// becomes unusedN, a deleted unusedN frees its volume.
func (c *call) applyConfig(g *guest, conf map[string]string, deletes []string, l *taskLog) error {
	if _, set := conf["tags"]; set || slices.Contains(deletes, "tags") {
		if err := c.assertTagPermissions(g.vmid); err != nil {
			return err
		}
	}
	built, _, err := c.buildConfig(g.vmid, conf, "", l)
	if err != nil {
		return err
	}
	for _, k := range deletes {
		c.deleteOption(g, k)
	}
	for k, v := range built {
		if isDriveKey(k) {
			if old, ok := g.conf[k]; ok && old != v {
				c.detach(g, old)
			}
		}
		g.conf[k] = v
	}
	l.printf("update VM %d: %s", g.vmid, strings.Join(sortedKeys(built), ","))
	return nil
}

func (c *call) deleteOption(g *guest, k string) {
	v, ok := g.conf[k]
	if !ok {
		return
	}
	delete(g.conf, k)
	if unusedRe.MatchString(k) {
		if d, err := parseDrive(v); err == nil {
			if vol, ok := c.s.volume(g.node, d.file); ok && vol.owner == g.vmid {
				c.s.dropVolume(g.node, d.file)
			}
		}
		return
	}
	if isDriveKey(k) {
		c.detach(g, v)
	}
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
// and pool membership.
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
