package audit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// Finding codes of the platform's pool HA user and token (platform.ha).
const (
	// CodeHAIncomplete: the pool HA user or token is missing, or the token
	// lacks a privilege of CozyHA on /, so the controller's pool HA fails.
	CodeHAIncomplete Code = "HAIncomplete"
	// CodeHAReach: the pool HA user or a token of it holds a privilege on
	// a path below / (a node, VM, storage, pool, SDN path, mapping or the
	// access tree), which its work never needs.
	CodeHAReach Code = "HAReach"
	// CodeHABroaderThanRole: the pool HA user or a token of it holds
	// privileges on / beyond CozyHA's (Sys.Audit, Sys.Console).
	CodeHABroaderThanRole Code = "HABroaderThanRole"
	// CodeHAUserInGroup: the pool HA user is in a group that holds ACL
	// entries.
	CodeHAUserInGroup Code = "HAUserInGroup"
)

// haTopPaths are the trees below / the pool HA subjects must hold nothing
// on; each tree's root is checked with a never-used child.
var haTopPaths = []string{"/access", "/mapping", "/nodes", "/pool", "/sdn", "/storage", "/vms"}

// platformHA audits platform.ha as strictly as a tenant: the user and
// token exist, every token of the user is privilege-separated, none of
// them holds anything below / or on / beyond CozyHA, no entry of theirs
// propagates from a top-level path, and the user is in no group with
// entries.
func (a *auditor) platformHA() {
	c := a.spec.Platform.HA
	if c == nil {
		return
	}
	u, ok := a.cfg.Users[c.User]
	if !ok {
		a.haIncomplete(c, "user "+c.User)
		return
	}
	if _, ok := u.Tokens[c.Token]; !ok {
		a.haIncomplete(c, "token "+c.TokenID())
	} else if missing := tenantplan.HAPrivileges(a.cfg.Version).Minus(a.perm.Permissions(c.TokenID(), "/")); !missing.Empty() {
		a.haIncomplete(c, fmt.Sprintf("%s on / for token %s", missing, c.TokenID()))
	}
	for _, g := range a.groupsOf[c.User] {
		if paths := a.ev.EntryPaths(pveacl.KindGroup, g); len(paths) > 0 {
			a.add(Finding{Severity: SeverityWarning, Code: CodeHAUserInGroup, Subject: c.User, Path: paths[0],
				Message: fmt.Sprintf("the pool HA user %s is a member of group %s, which holds ACL entries on %s", c.User, g, strings.Join(paths, ", ")),
				Remedy:  fmt.Sprintf("remove %s from group %s: the pool HA user needs only CozyHA on /", c.User, g)})
		}
	}
	subjects := []string{c.User}
	for _, name := range slices.Sorted(maps.Keys(u.Tokens)) {
		id := pveacl.TokenID(c.User, name)
		subjects = append(subjects, id)
		if !u.Tokens[name].Privsep {
			a.add(Finding{Severity: SeverityError, Code: CodeTokenWithoutPrivsep, Subject: id,
				Message: fmt.Sprintf("token %s of the pool HA user is not privilege-separated, so it holds every privilege of %s", id, c.User),
				Remedy:  fmt.Sprintf("pveum user token modify %s %s --privsep 1, then grant the token CozyHA on / (plan and apply)", c.User, name)})
		}
	}
	for _, s := range subjects {
		a.subjects++
		a.topLevel("", s, "the pool HA user and token hold CozyHA on / with propagate 0")
		a.haReach(s)
		a.haBroader(s)
	}
}

func (a *auditor) haIncomplete(c *tenantplan.Credential, missing string) {
	a.add(Finding{Severity: SeverityWarning, Code: CodeHAIncomplete, Subject: c.TokenID(),
		Message: "the pool HA credentials (platform.ha) are incomplete: missing " + missing,
		Remedy:  "run pxsubstrate acl plan for these tenants and apply it"})
}

// haReach reports every path below / where subject holds a privilege:
// the roots of the trees, a never-used child of each (which stands for
// every child no entry names), every tenant's pool and storages, and
// every path the subject's entries (or its user's or groups') name.
func (a *auditor) haReach(subject string) {
	paths := slices.Clone(haTopPaths)
	paths = append(paths, pveacl.VMPath(a.vmProbe), pveacl.StoragePath(a.stProbe), pveacl.PoolPath(a.poolProbe),
		"/nodes/"+a.stProbe, "/sdn/zones/"+a.stProbe, "/mapping/pci/"+a.stProbe, "/access/users")
	for _, tn := range a.tenants {
		paths = append(paths, pveacl.PoolPath(tn.Pool))
		for _, s := range tn.AllStorages() {
			paths = append(paths, pveacl.StoragePath(s))
		}
	}
	// A pool's members hold what the pool path and their own path give:
	// one VM and one storage of each pool stand for the others.
	for _, name := range a.poolNames {
		p := a.cfg.Pools[name]
		if len(p.VMs) > 0 {
			paths = append(paths, pveacl.VMPath(p.VMs[0]))
		}
		if len(p.Storages) > 0 {
			paths = append(paths, pveacl.StoragePath(p.Storages[0]))
		}
	}
	r := a.relevance(subject)
	for p := range r.exact {
		if p != "/" {
			paths = append(paths, p)
		}
		if r.prop[p] && p != "/" { // a child no entry names, which may appear later
			child := p + "/" + a.stProbe
			if p == "/vms" {
				child = pveacl.VMPath(a.vmProbe)
			}
			paths = append(paths, child)
		}
	}
	pools := a.specificPools(r)
	for _, vm := range a.specificVMs(r, pools) {
		paths = append(paths, pveacl.VMPath(vm))
	}
	for _, s := range a.specificStorages(r, pools) {
		paths = append(paths, pveacl.StoragePath(s))
	}
	slices.SortFunc(paths, pveacl.ComparePaths)
	for _, p := range slices.Compact(paths) {
		privs := a.perm.Permissions(subject, p)
		if privs.Empty() {
			continue
		}
		a.add(Finding{Severity: SeverityError, Code: CodeHAReach, Subject: subject, Path: p, Privileges: privs.Names(),
			Message: fmt.Sprintf("the pool HA subject %s holds %s on %s: its work needs CozyHA on / alone, nothing on a node, VM, storage, pool or SDN path", subject, privs, p),
			Remedy: fmt.Sprintf("remove the entries that grant this (pxsubstrate acl perms --user-cfg /etc/pve/user.cfg --authid %s --path %s shows the result; look at /, %s and its parents)",
				quote(subject), p, p)})
	}
}

// haBroader reports privileges on / beyond CozyHA's.
func (a *auditor) haBroader(subject string) {
	extra := a.perm.Permissions(subject, "/").Minus(tenantplan.HAPrivileges(a.cfg.Version))
	if extra.Empty() {
		return
	}
	a.add(Finding{Severity: SeverityError, Code: CodeHABroaderThanRole, Subject: subject, Path: "/", Privileges: extra.Names(),
		Message: fmt.Sprintf("the pool HA subject %s holds %s on / beyond CozyHA (%s)", subject, extra, tenantplan.HAPrivileges(a.cfg.Version)),
		Remedy:  "remove the other roles of the subject (and its user and groups) on /, and keep role CozyHA as the plan defines it (plan and apply)"})
}
