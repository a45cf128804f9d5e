package pvefake

import (
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

func accessRoutes() []*route {
	roleID := param{name: "roleid", format: pveacl.ValidRoleID}
	privs := param{name: "privs", optional: true}
	sysModify := perm{path: "/access", privs: []string{"Sys.Modify"}}
	groupID := param{name: "groupid", format: pveacl.ValidGroupID}
	groupAlloc := perm{path: "/access/groups", privs: []string{"Group.Allocate"}}
	return []*route{
		{method: "GET", path: "/access/roles", handle: listRoles},
		{method: "POST", path: "/access/roles", schema: []param{roleID, privs}, check: sysModify, handle: createRole},
		{method: "GET", path: "/access/roles/{roleid}", schema: []param{roleID}, handle: readRole},
		{method: "PUT", path: "/access/roles/{roleid}", schema: []param{roleID, privs, {name: "append", typ: tBool, optional: true, requires: "privs"}},
			check: sysModify, handle: updateRole},
		{method: "DELETE", path: "/access/roles/{roleid}", schema: []param{roleID}, check: sysModify, handle: deleteRole},
		{method: "GET", path: "/access/groups", handle: listGroups},
		{method: "POST", path: "/access/groups", schema: []param{groupID, opt("comment", tString)}, check: groupAlloc, handle: createGroup},
		{method: "DELETE", path: "/access/groups/{groupid}", schema: []param{groupID}, check: groupAlloc, handle: deleteGroup},
		{method: "GET", path: "/access/permissions", schema: []param{{name: "userid", optional: true, format: fmtAuthID},
			{name: "path", optional: true}}, handle: readPermissions},
	}
}

func fmtAuthID(v string) error {
	if !pveacl.ValidAuthID(v) {
		return errString("value does not match the regex pattern")
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

func listRoles(c *call) (any, *apiError) {
	builtins := pveacl.BuiltinRoles(c.s.cfg.Version)
	out := []map[string]any{}
	names := sortedKeys(builtins)
	for _, n := range sortedKeys(c.s.cfg.Roles) {
		if _, ok := builtins[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		_, special := builtins[n]
		out = append(out, map[string]any{"roleid": n, "privs": strings.Join(c.s.rolePrivs(n), ","), "special": b2i(special)})
	}
	return out, nil
}

func readRole(c *call) (any, *apiError) {
	id := c.p["roleid"]
	if !c.s.roleExists(id) {
		return nil, die("role '%s' does not exist", id)
	}
	out := map[string]int{}
	for _, p := range c.s.rolePrivs(id) {
		out[p] = 1
	}
	return out, nil
}

func isSpecial(id string) bool { return pveacl.IsBuiltinRole(id) }

func createRole(c *call) (any, *apiError) {
	id := c.p["roleid"]
	if strings.HasPrefix(strings.ToLower(id), "pve") {
		return nil, paramErr("roleid", "cannot use role ID starting with the (case-insensitive) 'PVE' namespace")
	}
	if c.s.roleExists(id) {
		return nil, die("create role failed: role '%s' already exists", id)
	}
	list, err := privList(c.s.cfg.Version, c.p["privs"])
	if err != nil {
		return nil, wrapDie("create role failed", err)
	}
	c.s.cfg.Roles[id] = pveacl.Role{Privs: list}
	c.s.touch()
	return nil, nil
}

// privList validates a privilege list like add_role_privs: the first
// unknown privilege fails with "invalid privilege 'P'".
func privList(v pveacl.Version, list string) ([]string, *apiError) {
	var out []string
	for _, p := range pveacl.SplitList(list) {
		if !pveacl.ValidPrivilege(v, p) {
			return nil, die("invalid privilege '%s'", p)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

func updateRole(c *call) (any, *apiError) {
	id := c.p["roleid"]
	if isSpecial(id) {
		return nil, die("auto-generated role '%s' cannot be modified", id)
	}
	r, ok := c.s.cfg.Roles[id]
	if !ok {
		return nil, die("update role failed: role '%s' does not exist", id)
	}
	list, err := privList(c.s.cfg.Version, c.p["privs"])
	if err != nil {
		return nil, wrapDie("update role failed", err)
	}
	if c.p.flag("append", false) {
		list = append(list, r.Privs...)
		slices.Sort(list)
		list = slices.Compact(list)
	}
	c.s.cfg.Roles[id] = pveacl.Role{Privs: list}
	c.s.touch()
	return nil, nil
}

func deleteRole(c *call) (any, *apiError) {
	id := c.p["roleid"]
	if isSpecial(id) {
		return nil, die("auto-generated role '%s' cannot be deleted", id)
	}
	if _, ok := c.s.cfg.Roles[id]; !ok {
		return nil, die("delete role failed: role '%s' does not exist", id)
	}
	delete(c.s.cfg.Roles, id)
	for k := range c.s.cfg.ACL {
		if k.Role == id {
			delete(c.s.cfg.ACL, k) // the next parse of user.cfg drops them
		}
	}
	c.s.touch()
	return nil, nil
}

func listGroups(c *call) (any, *apiError) {
	out := []map[string]any{}
	for _, g := range sortedKeys(c.s.cfg.Groups) {
		if ok, _ := c.checkAny("/access/groups/"+g, []string{"User.Modify", "Sys.Audit", "Group.Allocate"}, true); !ok {
			continue
		}
		e := map[string]any{"groupid": g, "users": strings.Join(c.s.cfg.Groups[g].Members, ",")}
		if cm := c.s.cfg.Groups[g].Comment; cm != "" {
			e["comment"] = cm
		}
		out = append(out, e)
	}
	return out, nil
}

func createGroup(c *call) (any, *apiError) {
	id := c.p["groupid"]
	if _, ok := c.s.cfg.Groups[id]; ok {
		return nil, die("create group failed: group '%s' already exists", id)
	}
	c.s.cfg.Groups[id] = pveacl.Group{Comment: c.p["comment"]}
	c.s.touch()
	return nil, nil
}

func deleteGroup(c *call) (any, *apiError) {
	id := c.p["groupid"]
	if _, ok := c.s.cfg.Groups[id]; !ok {
		return nil, die("delete group failed: group '%s' does not exist", id)
	}
	delete(c.s.cfg.Groups, id)
	c.s.dropSubjectACL(pveacl.KindGroup, id)
	return nil, nil
}

// readPermissions is GET /access/permissions: the caller's own privileges
// or its tokens'; anyone else's need Sys.Audit on /access. With path, only
// that path comes back (not normalised), even when empty.
func readPermissions(c *call) (any, *apiError) {
	who := c.p["userid"]
	if who == "" {
		who = c.auth
	}
	owner, _, _ := pveacl.ParseTokenID(who)
	if who != c.auth && owner != c.auth {
		if err := c.require("/access", "Sys.Audit"); err != nil {
			return nil, err
		}
	}
	ev := c.s.eval()
	if path := c.p["path"]; path != "" {
		at := path
		if n, err := pveacl.NormalizePath(path); err == nil {
			at = n
		}
		return map[string]pveacl.PrivSet{path: ev.Permissions(who, at)}, nil
	}
	out := map[string]pveacl.PrivSet{}
	for _, path := range c.effectivePaths() {
		if ps := ev.Permissions(who, path); !ps.Empty() {
			out[path] = ps
		}
	}
	return out, nil
}

// effectivePaths are the paths get_effective_permissions evaluates.
func (c *call) effectivePaths() []string {
	seen := map[string]bool{}
	for _, p := range []string{"/", "/access", "/access/groups", "/nodes", "/pool", "/sdn", "/storage", "/vms"} {
		seen[p] = true
	}
	for k := range c.s.cfg.ACL {
		seen[k.Path] = true
	}
	for _, p := range c.s.cfg.Pools {
		for _, vm := range p.VMs {
			seen[vmPath(vm)] = true
		}
		for _, st := range p.Storages {
			seen["/storage/"+st] = true
		}
	}
	return sortedKeys(seen)
}
