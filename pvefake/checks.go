package pvefake

import (
	"regexp"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// check is a declared permission test of an API method, evaluated like
// PVE::RPCEnvironment::exec_api2_perm_check. With noerr it reports false
// instead of failing.
type check interface {
	eval(c *call, noerr bool) (bool, *apiError)
}

// perm: the privileges on a path template ({param} replaced), all of them
// or, with any, one of them. requireParam fails the check when unset.
type perm struct {
	path         string
	privs        []string
	any          bool
	requireParam string
}

type and []check
type or []check

// useridGroup is 'userid-group': the privileges on /access/groups, or on a
// group of the user (and on every group named by the groups parameter when
// groupsParam is "create" or "update").
type useridGroup struct {
	privs       []string
	groupsParam string
}

// useridParam is 'userid-param': "self" (the caller is the user) or
// "Realm.AllocateUser" on the user's realm.
type useridParam string

// permModify is 'perm-modify': check_perm_modify on a path template.
type permModify string

func (k perm) eval(c *call, noerr bool) (bool, *apiError) {
	if k.requireParam != "" && !c.p.has(k.requireParam) {
		if noerr {
			return false, nil
		}
		return false, permError("")
	}
	path := c.fill(k.path)
	if k.any {
		return c.checkAny(path, k.privs, noerr)
	}
	return c.checkAll(path, k.privs, noerr)
}

func (k and) eval(c *call, noerr bool) (bool, *apiError) {
	for _, sub := range k {
		if ok, err := sub.eval(c, noerr); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

func (k or) eval(c *call, noerr bool) (bool, *apiError) {
	for _, sub := range k {
		if ok, _ := sub.eval(c, true); ok {
			return true, nil
		}
	}
	if noerr {
		return false, nil
	}
	return false, permError("")
}

func (k useridParam) eval(c *call, noerr bool) (bool, *apiError) {
	uid := c.p["userid"]
	_, realm, err := pveacl.ParseUserID(uid)
	if err != nil {
		return false, die("%v", err)
	}
	if k == "self" {
		if _, ok := c.s.cfg.Users[uid]; !ok {
			if noerr {
				return false, nil
			}
			return false, die("no such user ('%s')", uid)
		}
		if c.auth == uid {
			return true, nil
		}
		if noerr {
			return false, nil
		}
		return false, permError("")
	}
	return c.checkAll("/access/realm/"+realm, []string{"Realm.AllocateUser"}, noerr)
}

func (k useridGroup) eval(c *call, noerr bool) (bool, *apiError) {
	uid := c.p["userid"]
	existing := k.groupsParam != "create"
	if _, ok := c.s.cfg.Users[uid]; existing && !ok {
		if noerr {
			return false, nil
		}
		return false, die("no such user ('%s')", uid)
	}
	if ok, _ := c.checkAny("/access/groups", k.privs, true); ok {
		return true, nil
	}
	groups := c.filterGroups(k.privs)
	what := strings.Join(k.privs, "|")
	if k.groupsParam != "" {
		list := pveacl.SplitList(c.p["groups"])
		if len(list) == 0 {
			return false, permError("/access/groups, " + what)
		}
		for _, g := range list {
			if !groups[g] {
				return false, permError("/access/groups/" + g + ", " + what)
			}
		}
	}
	if existing && !c.groupMember(groups, uid) {
		if noerr {
			return false, nil
		}
		return false, permError("")
	}
	return true, nil
}

func (k permModify) eval(c *call, noerr bool) (bool, *apiError) {
	path, err := pveacl.NormalizePath(c.fill(string(k)))
	if err != nil {
		return false, nil
	}
	return c.checkPermModify(path, noerr)
}

var tmplRe = regexp.MustCompile(`\{([^}]+)\}`)

// fill replaces {param} in a path template with the parameter's value.
func (c *call) fill(tmpl string) string {
	return tmplRe.ReplaceAllStringFunc(tmpl, func(m string) string { return c.p[m[1:len(m)-1]] })
}

// perms returns the caller's privileges on a path.
func (c *call) perms(path string) pveacl.PrivSet {
	if n, err := pveacl.NormalizePath(path); err == nil {
		path = n
	}
	return c.s.perms(c.auth, path)
}

// checkAll is RPCEnvironment::check: every privilege; the error names the
// first one missing.
func (c *call) checkAll(path string, privs []string, noerr bool) (bool, *apiError) {
	have := c.perms(path)
	for _, p := range privs {
		if !have.Has(p) {
			if noerr {
				return false, nil
			}
			return false, permError(path + ", " + p)
		}
	}
	return true, nil
}

// checkAny is RPCEnvironment::check_any.
func (c *call) checkAny(path string, privs []string, noerr bool) (bool, *apiError) {
	have := c.perms(path)
	for _, p := range privs {
		if have.Has(p) {
			return true, nil
		}
	}
	if noerr {
		return false, nil
	}
	return false, permError(path + ", " + strings.Join(privs, "|"))
}

// require fails unless the caller holds every privilege on path.
func (c *call) require(path string, privs ...string) *apiError {
	_, err := c.checkAll(path, privs, false)
	return err
}

// checkPermModify is RPCEnvironment::check_perm_modify.
func (c *call) checkPermModify(path string, noerr bool) (bool, *apiError) {
	if path == "" {
		return c.checkAll("/access", []string{"Permissions.Modify"}, noerr)
	}
	privs := []string{"Permissions.Modify"}
	switch {
	case strings.HasPrefix(path, "/storage/") && len(path) > len("/storage/"):
		privs = append(privs, "Datastore.Allocate")
	case strings.HasPrefix(path, "/vms/") && len(path) > len("/vms/"):
		privs = append(privs, "VM.Allocate")
	case strings.HasPrefix(path, "/pool/") && len(path) > len("/pool/"):
		privs = append(privs, "Pool.Allocate")
	}
	return c.checkAny(path, privs, noerr)
}

// filterGroups returns the groups on which the caller holds one of privs.
func (c *call) filterGroups(privs []string) map[string]bool {
	out := map[string]bool{}
	for g := range c.s.cfg.Groups {
		if ok, _ := c.checkAny("/access/groups/"+g, privs, true); ok {
			out[g] = true
		}
	}
	return out
}

func (c *call) groupMember(groups map[string]bool, uid string) bool {
	for g := range groups {
		for _, m := range c.s.cfg.Groups[g].Members {
			if m == uid {
				return true
			}
		}
	}
	return false
}

// checkVMPerm is RPCEnvironment::check_vm_perm: the pool, then the VM.
func (c *call) checkVMPerm(vmid int, pool string, privs []string, anyOf bool) *apiError {
	if pool != "" {
		var ok bool
		if anyOf {
			ok, _ = c.checkAny("/pool/"+pool, privs, true)
		} else {
			ok, _ = c.checkAll("/pool/"+pool, privs, true)
		}
		if ok {
			return nil
		}
	}
	path := vmPath(vmid)
	if anyOf {
		_, err := c.checkAny(path, privs, false)
		return err
	}
	return c.require(path, privs...)
}

// isRoot reports whether the caller is root@pam itself (not a token).
func (c *call) isRoot() bool { return c.auth == "root@pam" }
