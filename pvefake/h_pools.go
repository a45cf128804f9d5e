package pvefake

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

var vmidRe = regexp.MustCompile(`^[1-9][0-9]{2,8}$`)

func fmtVMID(v string) error {
	if !vmidRe.MatchString(v) {
		return errString("value does not look like a valid VM ID")
	}
	return nil
}

var storageIDRe = regexp.MustCompile(`(?i)^[a-z][a-z0-9\-_.]*[a-z0-9]$`)

func fmtStorageID(v string) error {
	if !storageIDRe.MatchString(v) {
		return fmt.Errorf("storage ID '%s' contains illegal characters", v)
	}
	return nil
}

func poolRoutes() []*route {
	poolID := param{name: "poolid", format: pveacl.ValidPoolID}
	alloc := perm{path: "/pool/{poolid}", privs: []string{"Pool.Allocate"}}
	update := []param{poolID, opt("comment", tString), {name: "vms", optional: true, format: fmtList(fmtVMID)},
		{name: "storage", optional: true, format: fmtList(fmtStorageID)}, opt("allow-move", tBool), opt("delete", tBool)}
	typ := param{name: "type", optional: true, enum: []string{"qemu", "lxc", "storage"}}
	return []*route{
		{method: "GET", path: "/pools", schema: []param{{name: "poolid", optional: true, format: pveacl.ValidPoolID},
			{name: "type", optional: true, enum: typ.enum, requires: "poolid"}}, handle: listPools},
		{method: "POST", path: "/pools", schema: []param{poolID, opt("comment", tString)}, check: alloc, handle: createPool},
		{method: "PUT", path: "/pools", schema: update, check: alloc, handle: updatePool},
		{method: "DELETE", path: "/pools", schema: []param{poolID}, check: alloc, handle: deletePool},
		{method: "GET", path: "/pools/{poolid}", schema: []param{poolID, typ},
			check: perm{path: "/pool/{poolid}", privs: []string{"Pool.Audit"}}, handle: readPool},
		{method: "PUT", path: "/pools/{poolid}", schema: update, check: alloc, handle: updatePool},
		{method: "DELETE", path: "/pools/{poolid}", schema: []param{poolID}, check: alloc, handle: deletePool},
	}
}

// listPools lists the pools with Pool.Audit, or with poolid one pool and
// its members. PVE runs the Pool.Audit check of the second form without
// acting on its result, so any user may read a pool's members.
func listPools(c *call) (any, *apiError) {
	if id := c.p["poolid"]; id != "" {
		info, err := c.poolInfo(id, c.p["type"])
		if err != nil {
			return nil, err
		}
		info["poolid"] = id
		return []map[string]any{info}, nil
	}
	out := []map[string]any{}
	for _, id := range sortedKeys(c.s.cfg.Pools) {
		if ok, _ := c.checkAll("/pool/"+id, []string{"Pool.Audit"}, true); !ok {
			continue
		}
		e := map[string]any{"poolid": id}
		if cm := c.s.cfg.Pools[id].Comment; cm != "" {
			e["comment"] = cm
		}
		out = append(out, e)
	}
	return out, nil
}

func readPool(c *call) (any, *apiError) { return c.poolInfo(c.p["poolid"], c.p["type"]) }

func (c *call) poolInfo(id, typ string) (map[string]any, *apiError) {
	p, ok := c.s.cfg.Pools[id]
	if !ok {
		return nil, die("pool '%s' does not exist", id)
	}
	members := []map[string]any{}
	for _, vmid := range p.VMs {
		if g, ok := c.s.vms[vmid]; ok && (typ == "" || typ == "qemu") {
			members = append(members, c.s.vmStats(g))
		}
	}
	if typ == "" || typ == "storage" {
		for _, sid := range p.Storages {
			if st, ok := c.s.stores[sid]; ok {
				members = append(members, c.s.storageStats(st, c.s.storageNode(st)))
			}
		}
	}
	info := map[string]any{"members": members}
	if p.Comment != "" {
		info["comment"] = p.Comment
	}
	return info, nil
}

func createPool(c *call) (any, *apiError) {
	id := c.p["poolid"]
	if _, ok := c.s.cfg.Pools[id]; ok {
		return nil, die("create pool failed: pool '%s' already exists", id)
	}
	leaf := id
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		parent := id[:i]
		if _, ok := c.s.cfg.Pools[parent]; !ok {
			return nil, die("create pool failed: parent '%s' of pool '%s' does not exist", parent, id)
		}
		leaf = id[i+1:]
	}
	if ch := leaf[0]; (ch < 'a' || ch > 'z') && (ch < 'A' || ch > 'Z') {
		return nil, die("create pool failed: pool name must start with a letter")
	}
	c.s.cfg.Pools[id] = pveacl.Pool{Comment: c.p["comment"]}
	c.s.touch()
	return nil, nil
}

// updatePool adds or removes members. Each member needs perm-modify on its
// path; a guest in another pool moves only with allow-move and
// Pool.Allocate on that pool. Nothing is written when one member fails.
func updatePool(c *call) (any, *apiError) {
	id := c.p["poolid"]
	pools := map[string]pveacl.Pool{}
	for k, v := range c.s.cfg.Pools {
		pools[k] = pveacl.Pool{Comment: v.Comment, VMs: slices.Clone(v.VMs), Storages: slices.Clone(v.Storages)}
	}
	p, ok := pools[id]
	if !ok {
		return nil, die("update pools failed: pool '%s' does not exist", id)
	}
	if c.p.has("comment") {
		p.Comment = c.p["comment"]
	}
	pools[id] = p
	if err := c.updateVMs(pools, id); err != nil {
		return nil, wrapDie("update pools failed", err)
	}
	if err := c.updateStorages(pools, id); err != nil {
		return nil, wrapDie("update pools failed", err)
	}
	c.s.cfg.Pools = pools
	c.s.touch()
	return nil, nil
}

func (c *call) updateVMs(pools map[string]pveacl.Pool, id string) *apiError {
	del := c.p.flag("delete", false)
	for _, v := range pveacl.SplitList(c.p["vms"]) {
		vmid, _ := strconv.Atoi(v)
		if _, err := c.checkPermModify(vmPath(vmid), false); err != nil {
			return err
		}
		p := pools[id]
		_, member := slices.BinarySearch(p.VMs, vmid)
		switch {
		case del && !member:
			return die("VM %d is not a pool member", vmid)
		case del:
			p.VMs = removeInt(p.VMs, vmid)
		case member:
			return die("VM %d is already a pool member", vmid)
		default:
			if other := poolListing(pools, vmid); other != "" {
				if !c.p.flag("allow-move", false) {
					return die("VM %d belongs already to pool '%s' and 'allow-move' is not set", vmid, other)
				}
				if err := c.require("/pool/"+other, "Pool.Allocate"); err != nil {
					return err
				}
				o := pools[other]
				o.VMs = removeInt(o.VMs, vmid)
				pools[other] = o
			}
			i, _ := slices.BinarySearch(p.VMs, vmid)
			p.VMs = slices.Insert(p.VMs, i, vmid)
		}
		pools[id] = p
	}
	return nil
}

func (c *call) updateStorages(pools map[string]pveacl.Pool, id string) *apiError {
	del := c.p.flag("delete", false)
	for _, sid := range pveacl.SplitList(c.p["storage"]) {
		if _, err := c.checkPermModify("/storage/"+sid, false); err != nil {
			return err
		}
		p := pools[id]
		i, member := slices.BinarySearch(p.Storages, sid)
		switch {
		case del && !member:
			return die("Storage '%s' is not a pool member", sid)
		case del:
			p.Storages = nilIfEmpty(slices.Delete(p.Storages, i, i+1))
		case member:
			return die("Storage '%s' is already a pool member", sid)
		default:
			p.Storages = slices.Insert(p.Storages, i, sid)
		}
		pools[id] = p
	}
	return nil
}

func poolListing(pools map[string]pveacl.Pool, vmid int) string {
	for _, name := range sortedKeys(pools) {
		if _, ok := slices.BinarySearch(pools[name].VMs, vmid); ok {
			return name
		}
	}
	return ""
}

func removeInt(s []int, v int) []int {
	if i, ok := slices.BinarySearch(s, v); ok {
		return nilIfEmpty(slices.Delete(s, i, i+1))
	}
	return s
}

// nilIfEmpty keeps empty member lists nil, as a parsed user.cfg has them.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// deletePool removes an empty pool and the ACL entries under /pool/<id>.
// Members that no longer exist do not count; PVE removes the ACL subtree
// of a top-level pool only.
func deletePool(c *call) (any, *apiError) {
	id := c.p["poolid"]
	p, ok := c.s.cfg.Pools[id]
	if !ok {
		return nil, die("delete pool failed: pool '%s' does not exist", id)
	}
	for _, other := range sortedKeys(c.s.cfg.Pools) {
		if rest, ok := strings.CutPrefix(other, id+"/"); ok && !strings.Contains(rest, "/") {
			return nil, die("delete pool failed: pool '%s' is not empty (contains pool '%s')", id, other)
		}
	}
	for _, vmid := range p.VMs {
		if _, ok := c.s.vms[vmid]; ok {
			return nil, die("delete pool failed: pool '%s' is not empty (contains VM %d)", id, vmid)
		}
	}
	for _, sid := range p.Storages {
		if _, ok := c.s.stores[sid]; ok {
			return nil, die("delete pool failed: pool '%s' is not empty (contains storage '%s')", id, sid)
		}
	}
	delete(c.s.cfg.Pools, id)
	if !strings.Contains(id, "/") {
		c.s.dropACLUnder("/pool/" + id)
	}
	c.s.touch()
	return nil, nil
}
