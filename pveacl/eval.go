package pveacl

import (
	"sort"
	"strings"
)

// Evaluator answers effective-permission questions about one Config exactly
// as Proxmox VE computes them (PVE::AccessControl::roles and
// PVE::RPCEnvironment::permissions). It indexes the config once: the ACL
// tree, group memberships, token flags and which pools list each VM and
// storage, so that one question costs a walk down a few tree levels. An
// Evaluator is immutable and safe for concurrent use; build a new one after
// the Config changes.
type Evaluator struct {
	root     *aclNode
	roleIdx  map[string]int32
	rolePriv []PrivSet // by role index; flags unused
	noAccess int32
	groupsOf map[string][]string  // user -> groups listing it
	tokens   map[string]tokenInfo // full token id -> token
	users    map[string]bool      // user ids of the config that are valid
	poolsOf  map[string][]string  // "/vms/<id>" or "/storage/<id>" -> paths of its pools
	admin    PrivSet
}

type tokenInfo struct {
	user    string
	privsep bool
}

type roleRef struct {
	role int32
	prop bool
}

type aclNode struct {
	children map[string]*aclNode
	users    map[string][]roleRef
	groups   map[string][]roleRef
	tokens   map[string][]roleRef
}

// NewEvaluator indexes cfg.
func NewEvaluator(cfg *Config) *Evaluator {
	e := &Evaluator{root: &aclNode{}, roleIdx: map[string]int32{},
		groupsOf: map[string][]string{}, tokens: map[string]tokenInfo{}, poolsOf: map[string][]string{},
		users: map[string]bool{}}
	t := table(cfg.Version)
	for _, name := range sortedKeys(t.builtins) {
		e.addRole(name, t.builtins[name])
	}
	for _, name := range sortedKeys(cfg.Roles) {
		if _, builtin := t.builtins[name]; !builtin {
			e.addRole(name, NewPrivSet(cfg.Roles[name].Privs...))
		}
	}
	e.noAccess = e.roleIdx[RoleNoAccess]
	for p := range allPrivilegesOf(t.builtins[roleAdministrator]) {
		e.admin = e.admin.with(p, true)
	}
	for _, g := range sortedKeys(cfg.Groups) {
		for _, m := range cfg.Groups[g].Members {
			e.groupsOf[m] = append(e.groupsOf[m], g)
		}
	}
	for uid, u := range cfg.Users {
		if ValidUserID(uid) {
			e.users[uid] = true
		}
		for name, tok := range u.Tokens {
			e.tokens[TokenID(uid, name)] = tokenInfo{user: uid, privsep: tok.Privsep}
		}
	}
	for _, name := range sortedKeys(cfg.Pools) {
		p := cfg.Pools[name]
		pp := PoolPath(name)
		for _, vm := range p.VMs {
			e.poolsOf[VMPath(vm)] = append(e.poolsOf[VMPath(vm)], pp)
		}
		for _, s := range p.Storages {
			e.poolsOf[StoragePath(s)] = append(e.poolsOf[StoragePath(s)], pp)
		}
	}
	for k, prop := range cfg.ACL {
		e.addEntry(k, prop)
	}
	return e
}

func allPrivilegesOf(s PrivSet) map[string]bool {
	m := map[string]bool{}
	for _, n := range s.Names() {
		m[n] = true
	}
	return m
}

func (e *Evaluator) addRole(name string, privs PrivSet) {
	e.roleIdx[name] = int32(len(e.rolePriv))
	e.rolePriv = append(e.rolePriv, privs)
}

// addEntry puts one ACL entry into the tree. A role the config does not
// define still takes part in the walk (it grants nothing), as PVE keeps such
// entries when they come from the API.
func (e *Evaluator) addEntry(k ACLKey, prop bool) {
	idx, ok := e.roleIdx[k.Role]
	if !ok {
		e.addRole(k.Role, PrivSet{})
		idx = e.roleIdx[k.Role]
	}
	n := e.root
	for _, part := range strings.Split(k.Path, "/") {
		if part == "" {
			continue
		}
		if n.children == nil {
			n.children = map[string]*aclNode{}
		}
		c := n.children[part]
		if c == nil {
			c = &aclNode{}
			n.children[part] = c
		}
		n = c
	}
	var m *map[string][]roleRef
	switch k.Kind {
	case KindUser:
		m = &n.users
	case KindGroup:
		m = &n.groups
	case KindToken:
		m = &n.tokens
	default:
		return
	}
	if *m == nil {
		*m = map[string][]roleRef{}
	}
	refs := (*m)[k.Subject]
	for i := range refs {
		if refs[i].role == idx {
			refs[i].prop = prop
			return
		}
	}
	(*m)[k.Subject] = append(refs, roleRef{role: idx, prop: prop})
}

// roleNames returns the roles an auth id (user or full token id) holds on path
// with their propagate flags, as PVE::AccessControl::roles computes them:
// without pool roles and, for a privilege-separated token, without its
// user's roles. root@pam always holds Administrator.
func (e *Evaluator) roleNames(authID, path string) map[string]bool {
	refs := e.roles(authID, path, nil)
	out := make(map[string]bool, len(refs))
	for _, r := range refs {
		out[e.roleName(r.role)] = out[e.roleName(r.role)] || r.prop
	}
	return out
}

func (e *Evaluator) roleName(idx int32) string {
	for name, i := range e.roleIdx {
		if i == idx {
			return name
		}
	}
	return ""
}

// roles is PVE::AccessControl::roles over the index; buf is reused.
func (e *Evaluator) roles(authID, path string, buf []roleRef) []roleRef {
	if authID == "root@pam" {
		return append(buf[:0], roleRef{role: e.roleIdx[roleAdministrator], prop: true})
	}
	ti, token, valid := e.authKind(authID)
	switch {
	case token && !valid:
		return buf[:0]
	case token && !ti.privsep:
		return e.roles(ti.user, path, buf)
	}
	return e.walk(authID, token, path, buf)
}

// authKind tells a token id from a user id the way PVE does (the token
// grammar first), using the index before the grammar: valid is false for
// an unknown token or a malformed user id.
func (e *Evaluator) authKind(authID string) (ti tokenInfo, token, valid bool) {
	if ti, ok := e.tokens[authID]; ok {
		return ti, true, true
	}
	if e.users[authID] {
		return tokenInfo{}, false, true
	}
	if IsTokenID(authID) {
		return tokenInfo{}, true, false
	}
	return tokenInfo{}, false, ValidUserID(authID)
}

// walk descends the ACL tree along path. At each level a role counts when
// the level is the last one or its entry propagates; the token's own
// entries, else the user's, else the union of the user's groups replace
// what was collected above. NoAccess among the result leaves only NoAccess.
func (e *Evaluator) walk(subject string, token bool, path string, buf []roleRef) []roleRef {
	out := buf[:0]
	// Perl's split drops trailing empty fields; "/" alone is the root.
	end := len(path)
	for end > 0 && path[end-1] == '/' {
		end--
	}
	if path == "/" {
		end = 1
	}
	n := e.root
	var lb [8]roleRef
	level := lb[:0]
	for start := 0; start < end; {
		seg, final := path[start:end], true
		if path == "/" {
			seg = ""
		} else if i := strings.IndexByte(seg, '/'); i >= 0 {
			seg, final = seg[:i], false
		}
		start += len(seg) + 1
		if seg != "" && n != nil {
			n = n.children[seg]
		}
		if n == nil {
			continue
		}
		level = level[:0]
		if token {
			level = qualifying(level, n.tokens[subject], final)
		} else {
			level = qualifying(level, n.users[subject], final)
			if len(level) == 0 && len(n.groups) > 0 {
				for _, g := range e.groupsOf[subject] {
					level = qualifying(level, n.groups[g], final)
				}
			}
		}
		if len(level) > 0 {
			out = append(out[:0], level...)
		}
	}
	for _, r := range out {
		if r.role == e.noAccess {
			return append(out[:0], r)
		}
	}
	return out
}

// qualifying appends the entries that count at this level, merging a role
// that is already present (its flag becomes the OR).
func qualifying(level, refs []roleRef, final bool) []roleRef {
	for _, r := range refs {
		if !final && !r.prop {
			continue
		}
		merged := false
		for i := range level {
			if level[i].role == r.role {
				level[i].prop = level[i].prop || r.prop
				merged = true
			}
		}
		if !merged {
			level = append(level, r)
		}
	}
	return level
}

// Permissions returns the privileges of an auth id on path, as
// GET /access/permissions?path=... reports them: the union of the
// privileges of the resolved roles plus pool roles for pool members, and
// for a privilege-separated token the intersection with its user.
func (e *Evaluator) Permissions(authID, path string) PrivSet {
	if authID == "root@pam" {
		return e.admin
	}
	ti, token, valid := e.authKind(authID)
	if !valid {
		return PrivSet{}
	}
	if token {
		userSide := e.Permissions(ti.user, path)
		if !ti.privsep {
			return userSide
		}
		own := e.compile(authID, true, path)
		if ti.user == "root@pam" {
			return own
		}
		return own.intersect(userSide)
	}
	return e.compile(authID, false, path)
}

func (e *Evaluator) compile(subject string, token bool, path string) PrivSet {
	var b1, b2 [8]roleRef
	regular := e.walk(subject, token, path, b1[:0])
	if pools := e.poolsOf[path]; len(pools) > 0 && !hasRole(regular, e.noAccess) {
		var poolRoles []roleRef
		for _, p := range pools {
			for _, r := range e.walk(subject, token, p, b2[:0]) {
				if !hasRole(poolRoles, r.role) {
					poolRoles = append(poolRoles, roleRef{role: r.role})
				}
			}
		}
		if hasRole(poolRoles, e.noAccess) {
			regular = append(regular[:0], roleRef{role: e.noAccess})
		} else {
			for _, r := range poolRoles {
				if !hasRole(regular, r.role) {
					regular = append(regular, r)
				}
			}
		}
	}
	var s PrivSet
	for _, r := range regular {
		p := e.rolePriv[r.role]
		s.has |= p.has
		if r.prop {
			s.prop |= p.has
		}
	}
	return s
}

func hasRole(refs []roleRef, role int32) bool {
	for _, r := range refs {
		if r.role == role {
			return true
		}
	}
	return false
}

// EffectivePermissions returns what GET /access/permissions answers without
// a path: the privileges on /, /access, /access/groups, /nodes, /pool, /sdn,
// /storage, /vms, on every path of the ACL tree (intermediate levels
// included) and on every pool member, leaving out the empty ones.
func (e *Evaluator) EffectivePermissions(authID string) map[string]PrivSet {
	paths := map[string]bool{}
	for _, p := range []string{"/", "/access", "/access/groups", "/nodes", "/pool", "/sdn", "/storage", "/vms"} {
		paths[p] = true
	}
	var visit func(n *aclNode, path string)
	visit = func(n *aclNode, path string) {
		paths[path] = true
		for name, c := range n.children {
			visit(c, strings.TrimSuffix(path, "/")+"/"+name)
		}
	}
	visit(e.root, "/")
	for p := range e.poolsOf {
		paths[p] = true
	}
	out := map[string]PrivSet{}
	for p := range paths {
		if s := e.Permissions(authID, p); !s.Empty() {
			out[p] = s
		}
	}
	return out
}

// EntryPaths returns the ACL paths that hold entries for a subject, sorted
// in tree order.
func (e *Evaluator) EntryPaths(kind SubjectKind, subject string) []string {
	var out []string
	var visit func(n *aclNode, path string)
	visit = func(n *aclNode, path string) {
		var m map[string][]roleRef
		switch kind {
		case KindUser:
			m = n.users
		case KindGroup:
			m = n.groups
		case KindToken:
			m = n.tokens
		}
		if len(m[subject]) > 0 {
			out = append(out, path)
		}
		for name, c := range n.children {
			visit(c, strings.TrimSuffix(path, "/")+"/"+name)
		}
	}
	visit(e.root, "/")
	sort.Slice(out, func(i, j int) bool { return pathLess(out[i], out[j]) })
	return out
}
