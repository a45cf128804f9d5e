package pveacl

import "strings"

// naiveEvaluator answers the same questions as Evaluator with no index: it
// scans the flat ACL list at every level and rebuilds the pool membership
// (and every pool's roles) on each question, the way PVE primes its cache.
// It is the reference model of the property tests and the baseline of the
// benchmarks.
type naiveEvaluator struct{ cfg *Config }

func (n naiveEvaluator) rolePrivs(role string) PrivSet {
	if s, ok := table(n.cfg.Version).builtins[role]; ok {
		return s
	}
	if r, ok := n.cfg.Roles[role]; ok {
		return NewPrivSet(r.Privs...)
	}
	return PrivSet{}
}

func (n naiveEvaluator) member(group, user string) bool {
	for _, m := range n.cfg.Groups[group].Members {
		if m == user {
			return true
		}
	}
	return false
}

// roles mirrors PVE::AccessControl::roles.
func (n naiveEvaluator) roles(authID, path string) map[string]bool {
	if authID == "root@pam" {
		return map[string]bool{RoleAdministrator: true}
	}
	kinds := []SubjectKind{KindUser}
	if IsTokenID(authID) {
		tok, ok := n.cfg.Token(authID)
		if !ok {
			return map[string]bool{}
		}
		if !tok.Privsep {
			uid, _, _ := ParseTokenID(authID)
			return n.roles(uid, path)
		}
		kinds = []SubjectKind{KindToken}
	}
	out := map[string]bool{}
	if path == "" {
		return out
	}
	parts := strings.Split(path, "/")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if path == "/" {
		parts = []string{""}
	}
	var node []string
	for i, p := range parts {
		final := i == len(parts)-1
		if p != "" {
			node = append(node, p)
		}
		nodePath := "/" + strings.Join(node, "/")
		level := map[string]bool{}
		collect := func(kind SubjectKind, subject string) {
			for k, prop := range n.cfg.ACL {
				if k.Path == nodePath && k.Kind == kind && k.Subject == subject && (final || prop) {
					level[k.Role] = level[k.Role] || prop
				}
			}
		}
		if kinds[0] == KindToken {
			collect(KindToken, authID)
		} else {
			collect(KindUser, authID)
			if len(level) == 0 {
				for g := range n.cfg.Groups {
					if n.member(g, authID) {
						collect(KindGroup, g)
					}
				}
			}
		}
		if len(level) > 0 {
			out = level
		}
	}
	if prop, ok := out[RoleNoAccess]; ok {
		return map[string]bool{RoleNoAccess: prop}
	}
	return out
}

// permissions mirrors RPCEnvironment::permissions.
func (n naiveEvaluator) permissions(authID, path string) PrivSet {
	if authID == "root@pam" {
		var s PrivSet
		for _, p := range table(n.cfg.Version).builtins[RoleAdministrator].Names() {
			s = s.with(p, true)
		}
		return s
	}
	if IsTokenID(authID) {
		tok, ok := n.cfg.Token(authID)
		if !ok {
			return PrivSet{}
		}
		uid, _, _ := ParseTokenID(authID)
		user := n.permissions(uid, path)
		if !tok.Privsep {
			return user
		}
		own := n.compile(authID, path)
		if uid == "root@pam" {
			return own
		}
		return own.Intersect(user)
	}
	if !ValidUserID(authID) {
		return PrivSet{}
	}
	return n.compile(authID, path)
}

func (n naiveEvaluator) compile(subject, path string) PrivSet {
	poolRoles := map[string]map[string]bool{}
	for name, p := range n.cfg.Pools {
		r := n.roles(subject, "/pool/"+name)
		if len(r) == 0 {
			continue
		}
		var members []string
		for _, vm := range p.VMs {
			members = append(members, VMPath(vm))
		}
		for _, s := range p.Storages {
			members = append(members, StoragePath(s))
		}
		for _, m := range members {
			if poolRoles[m] == nil {
				poolRoles[m] = map[string]bool{}
			}
			for role := range r {
				poolRoles[m][role] = true
			}
		}
	}
	roles := n.roles(subject, path)
	if pr := poolRoles[path]; pr != nil {
		if _, no := roles[RoleNoAccess]; !no {
			if pr[RoleNoAccess] {
				roles = map[string]bool{RoleNoAccess: false}
			} else {
				for role := range pr {
					if _, ok := roles[role]; !ok {
						roles[role] = false
					}
				}
			}
		}
	}
	var s PrivSet
	for role, prop := range roles {
		for _, p := range n.rolePrivs(role).Names() {
			s = s.Union(PrivSet{}.with(p, prop))
		}
	}
	return s
}
