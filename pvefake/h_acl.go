package pvefake

import (
	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

func aclRoutes() []*route {
	return []*route{
		{method: "GET", path: "/access/acl", handle: readACL},
		{method: "PUT", path: "/access/acl", check: permModify("{path}"), handle: updateACL, schema: []param{
			req("path", tString), {name: "roles", format: fmtList(pveacl.ValidRoleID)},
			{name: "users", optional: true, format: fmtList(fmtUserID)},
			{name: "groups", optional: true, format: fmtList(pveacl.ValidGroupID)},
			{name: "tokens", optional: true, format: fmtList(fmtTokenID)},
			opt("propagate", tBool), opt("delete", tBool),
		}},
	}
}

// readACL lists the entries on paths where the caller has Sys.Audit on
// /access or may modify permissions.
func readACL(c *call) (any, *apiError) {
	audit, _ := c.checkAll("/access", []string{"Sys.Audit"}, true)
	out := []map[string]any{}
	allowed := map[string]bool{}
	for _, e := range c.s.cfg.ACEs() {
		ok, seen := allowed[e.Path]
		if !seen {
			ok = audit
			if !ok {
				ok, _ = c.checkPermModify(e.Path, true)
			}
			allowed[e.Path] = ok
		}
		if !ok {
			continue
		}
		out = append(out, map[string]any{"path": e.Path, "type": string(e.Kind), "ugid": e.Subject,
			"roleid": e.Role, "propagate": b2i(e.Propagate)})
	}
	return out, nil
}

type aclEdit struct {
	key    pveacl.ACLKey
	remove bool
	prop   bool
}

// updateACL is PUT /access/acl with the delegation rules: without
// Permissions.Modify on the path a caller may only hand out (or take back)
// roles whose privileges it holds there, propagated ones only when its own
// privileges propagate, and never NoAccess. Nothing is written when any
// role or subject fails.
func updateACL(c *call) (any, *apiError) {
	if !c.p.has("users") && !c.p.has("groups") && !c.p.has("tokens") {
		msg := "either 'users', 'groups' or 'tokens' is required."
		return nil, paramError(map[string]string{"users": msg, "groups": msg, "tokens": msg})
	}
	path, err := pveacl.NormalizePath(c.p["path"])
	del := c.p.flag("delete", false)
	if err != nil || (!del && !pveacl.CheckPath(path)) {
		return nil, paramErr("path", "invalid ACL path '%s'", c.p["path"])
	}
	edits, e := c.aclEdits(path, del)
	if e != nil {
		return nil, wrapDie("ACL update failed", e)
	}
	for _, ed := range edits {
		if ed.remove {
			delete(c.s.cfg.ACL, ed.key)
		} else {
			c.s.cfg.ACL[ed.key] = ed.prop
		}
	}
	c.s.touch()
	return nil, nil
}

func (c *call) aclEdits(path string, del bool) ([]aclEdit, *apiError) {
	prop := c.p.flag("propagate", true)
	own := c.perms(path)
	var out []aclEdit
	for _, role := range pveacl.SplitList(c.p["roles"]) {
		if !c.s.roleExists(role) {
			return nil, die("role '%s' does not exist", role)
		}
		if err := delegationCheck(c.s, own, role, prop, del); err != nil {
			return nil, err
		}
		subjects, err := c.aclSubjects()
		if err != nil {
			return nil, err
		}
		for _, s := range subjects {
			out = append(out, aclEdit{key: pveacl.ACLKey{Path: path, Kind: s.kind, Subject: s.id, Role: role}, remove: del, prop: prop})
		}
	}
	return out, nil
}

func delegationCheck(s *state, own pveacl.PrivSet, role string, prop, del bool) *apiError {
	if own.Has("Permissions.Modify") {
		return nil
	}
	verb := "add"
	if del {
		verb = "remove"
	}
	for _, p := range s.rolePrivs(role) {
		if !own.Has(p) {
			return paramErr("role", "Cannot %s role '%s' - requires 'Permissions.Modify' or superset of privileges.", verb, role)
		}
		if prop && !own.Propagates(p) && !del {
			return paramErr("role", "Cannot %s role '%s' with propagation - requires 'Permissions.Modify' or propagated superset of privileges.", verb, role)
		}
	}
	if role == pveacl.RoleNoAccess {
		return paramErr("role", "Cannot %s role '%s' - requires 'Permissions.Modify'", verb, role)
	}
	return nil
}

type subjectRef struct {
	kind pveacl.SubjectKind
	id   string
}

// aclSubjects checks the groups, users and tokens of the request, in
// PVE's order, and returns them.
func (c *call) aclSubjects() ([]subjectRef, *apiError) {
	var out []subjectRef
	for _, g := range pveacl.SplitList(c.p["groups"]) {
		if _, ok := c.s.cfg.Groups[g]; !ok {
			return nil, die("group '%s' does not exist", g)
		}
		out = append(out, subjectRef{pveacl.KindGroup, g})
	}
	for _, u := range pveacl.SplitList(c.p["users"]) {
		if _, ok := c.s.cfg.Users[u]; !ok {
			return nil, die("user '%s' does not exist", u)
		}
		out = append(out, subjectRef{pveacl.KindUser, u})
	}
	for _, t := range pveacl.SplitList(c.p["tokens"]) {
		uid, name, err := pveacl.ParseTokenID(t)
		if err != nil {
			return nil, die("%v", err)
		}
		u, ok := c.s.cfg.Users[uid]
		if !ok {
			return nil, die("no such user ('%s')", uid)
		}
		if _, ok := u.Tokens[name]; !ok {
			return nil, die("no such token '%s' for user '%s'", name, uid)
		}
		out = append(out, subjectRef{pveacl.KindToken, t})
	}
	return out, nil
}
