package pveacl_test

import (
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// naiveEvaluator answers the same questions as Evaluator with no index: it
// scans the flat ACL list at every level and rebuilds the pool membership
// (and every pool's roles) on each question, the way PVE primes its cache.
// It is the reference model of the property tests and the baseline of the
// benchmarks.
type naiveEvaluator struct{ cfg *pveacl.Config }

func (n naiveEvaluator) rolePrivs(role string) pveacl.PrivSet {
	if s, ok := pveacl.BuiltinPrivs(n.cfg.Version, role); ok {
		return s
	}
	if r, ok := n.cfg.Roles[role]; ok {
		return pveacl.NewPrivSet(r.Privs...)
	}
	return pveacl.PrivSet{}
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
		return map[string]bool{"Administrator": true}
	}
	kinds := []pveacl.SubjectKind{pveacl.KindUser}
	if pveacl.IsTokenID(authID) {
		tok, ok := n.cfg.Token(authID)
		if !ok {
			return map[string]bool{}
		}
		if !tok.Privsep {
			uid, _, _ := pveacl.ParseTokenID(authID)
			return n.roles(uid, path)
		}
		kinds = []pveacl.SubjectKind{pveacl.KindToken}
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
		collect := func(kind pveacl.SubjectKind, subject string) {
			for k, prop := range n.cfg.ACL {
				if k.Path == nodePath && k.Kind == kind && k.Subject == subject && (final || prop) {
					level[k.Role] = level[k.Role] || prop
				}
			}
		}
		if kinds[0] == pveacl.KindToken {
			collect(pveacl.KindToken, authID)
		} else {
			collect(pveacl.KindUser, authID)
			if len(level) == 0 {
				for g := range n.cfg.Groups {
					if n.member(g, authID) {
						collect(pveacl.KindGroup, g)
					}
				}
			}
		}
		if len(level) > 0 {
			out = level
		}
	}
	if prop, ok := out[pveacl.RoleNoAccess]; ok {
		return map[string]bool{pveacl.RoleNoAccess: prop}
	}
	return out
}

// permissions mirrors RPCEnvironment::permissions.
func (n naiveEvaluator) permissions(authID, path string) pveacl.PrivSet {
	if authID == "root@pam" {
		var s pveacl.PrivSet
		admin, _ := pveacl.BuiltinPrivs(n.cfg.Version, "Administrator")
		for _, p := range admin.Names() {
			s = s.With(p, true)
		}
		return s
	}
	if pveacl.IsTokenID(authID) {
		tok, ok := n.cfg.Token(authID)
		if !ok {
			return pveacl.PrivSet{}
		}
		uid, _, _ := pveacl.ParseTokenID(authID)
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
	if !pveacl.ValidUserID(authID) {
		return pveacl.PrivSet{}
	}
	return n.compile(authID, path)
}

func (n naiveEvaluator) compile(subject, path string) pveacl.PrivSet {
	poolRoles := map[string]map[string]bool{}
	for name, p := range n.cfg.Pools {
		r := n.roles(subject, "/pool/"+name)
		if len(r) == 0 {
			continue
		}
		var members []string
		for _, vm := range p.VMs {
			members = append(members, pveacl.VMPath(vm))
		}
		for _, s := range p.Storages {
			members = append(members, pveacl.StoragePath(s))
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
		if _, no := roles[pveacl.RoleNoAccess]; !no {
			if pr[pveacl.RoleNoAccess] {
				roles = map[string]bool{pveacl.RoleNoAccess: false}
			} else {
				for role := range pr {
					if _, ok := roles[role]; !ok {
						roles[role] = false
					}
				}
			}
		}
	}
	var s pveacl.PrivSet
	for role, prop := range roles {
		for _, p := range n.rolePrivs(role).Names() {
			s = s.Union(pveacl.PrivSet{}.With(p, prop))
		}
	}
	return s
}
