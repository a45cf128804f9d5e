package tenantplan

import (
	"fmt"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// Simulate returns the configuration the Proxmox VE API would leave after the
// changes, in order, starting from cfg (which is not modified). It refuses
// what the API refuses, with the API's message: an unknown role, user,
// group or token in an ACL entry, a missing parent pool, a custom role in
// the reserved PVE namespace, a privilege the version lacks, a VM that
// belongs to another pool without AllowMove. A create step whose object
// already exists changes nothing, which is how an idempotent applier treats
// PVE's "already exists" answers.
func Simulate(cfg *pveacl.Config, changes []Change) (*pveacl.Config, error) {
	out := cfg.Clone()
	vmPool := map[int][]string{}
	for name, p := range out.Pools {
		for _, vm := range p.VMs {
			vmPool[vm] = append(vmPool[vm], name)
		}
	}
	for i, c := range changes {
		if err := applyOne(out, c, vmPool); err != nil {
			return nil, fmt.Errorf("cannot apply change %d of %d: %w", i+1, len(changes), err)
		}
	}
	return out, nil
}

// applyOne applies a change; vmPool (VM -> pools) is kept up to date.
func applyOne(c *pveacl.Config, ch Change, vmPool map[int][]string) error {
	refuse := func(format string, args ...any) error {
		return &refusedError{Change: ch, Msg: fmt.Sprintf(format, args...)}
	}
	switch ch.Op {
	case OpCreateRole, OpUpdateRole:
		return applyRole(c, ch, refuse)
	case OpCreatePool:
		if _, ok := c.Pools[ch.Pool]; ok {
			return nil
		}
		if err := pveacl.ValidNewPoolID(ch.Pool); err != nil {
			return refuse("%v", err)
		}
		if parent := pveacl.PoolParent(ch.Pool); parent != "" {
			if _, ok := c.Pools[parent]; !ok {
				return refuse("parent '%s' of pool '%s' does not exist", parent, ch.Pool)
			}
		}
		c.Pools[ch.Pool] = pveacl.Pool{Comment: ch.Comment}
	case OpCreateUser:
		if _, ok := c.Users[ch.User]; ok {
			return nil
		}
		if _, _, err := pveacl.ParseUserID(ch.User); err != nil {
			return refuse("%v", err)
		}
		c.Users[ch.User] = pveacl.User{Enable: true, Comment: ch.Comment, Tokens: map[string]pveacl.Token{}}
	case OpEnableUser:
		u, ok := c.Users[ch.User]
		if !ok {
			return refuse("user '%s' does not exist", ch.User)
		}
		u.Enable = true
		c.Users[ch.User] = u
	case OpCreateToken, OpUpdateToken:
		return applyToken(c, ch, refuse)
	case OpAddPoolMembers:
		return applyMembers(c, ch, vmPool, refuse)
	case OpSetACL, OpDeleteACL:
		return applyACL(c, ch, refuse)
	default:
		return applyPrune(c, ch, vmPool, refuse)
	}
	return nil
}

type refuser func(format string, args ...any) error

func applyRole(c *pveacl.Config, ch Change, refuse refuser) error {
	if pveacl.IsBuiltinRole(ch.Role) {
		if ch.Op == OpCreateRole {
			return refuse("role '%s' already exists", ch.Role)
		}
		return refuse("auto-generated role '%s' cannot be modified", ch.Role)
	}
	_, exists := c.Roles[ch.Role]
	if ch.Op == OpCreateRole {
		if exists {
			return nil
		}
		if err := pveacl.ValidNewRoleID(ch.Role); err != nil {
			return refuse("%v", err)
		}
	} else if !exists {
		return refuse("role '%s' does not exist", ch.Role)
	}
	privs, err := pveacl.ParsePrivileges(c.Version, strings.Join(ch.Privs, ","))
	if err != nil {
		return refuse("%v", err)
	}
	c.Roles[ch.Role] = pveacl.Role{Privs: privs}
	return nil
}

func applyToken(c *pveacl.Config, ch Change, refuse refuser) error {
	u, ok := c.Users[ch.User]
	if !ok {
		return refuse("user '%s' does not exist", ch.User)
	}
	t, exists := u.Tokens[ch.Token]
	if ch.Op == OpCreateToken {
		if exists {
			return nil
		}
		if err := pveacl.ValidTokenName(ch.Token); err != nil {
			return refuse("%v", err)
		}
		t = pveacl.Token{Comment: ch.Comment}
	} else if !exists {
		return refuse("no such token '%s' for user '%s'", ch.Token, ch.User)
	}
	t.Privsep = true
	if u.Tokens == nil {
		u.Tokens = map[string]pveacl.Token{}
	}
	u.Tokens[ch.Token] = t
	c.Users[ch.User] = u
	return nil
}

func applyMembers(c *pveacl.Config, ch Change, vmPool map[int][]string, refuse refuser) error {
	p, ok := c.Pools[ch.Pool]
	if !ok {
		return refuse("pool '%s' does not exist", ch.Pool)
	}
	for _, vm := range ch.VMs {
		for _, other := range vmPool[vm] {
			if other == ch.Pool {
				continue
			}
			if !ch.AllowMove {
				return refuse("VM %d belongs already to pool '%s' and 'allow-move' is not set", vm, other)
			}
			op := c.Pools[other]
			op.VMs = removeSorted(op.VMs, vm)
			c.Pools[other] = op
		}
		p.AddVM(vm)
		vmPool[vm] = []string{ch.Pool}
	}
	for _, s := range ch.Storages {
		if err := pveacl.ValidStorageID(s); err != nil {
			return refuse("%v", err)
		}
		p.AddStorage(s)
	}
	c.Pools[ch.Pool] = p
	return nil
}

func applyACL(c *pveacl.Config, ch Change, refuse refuser) error {
	path, err := pveacl.NormalizePath(ch.Path)
	if err != nil || (ch.Op == OpSetACL && !pveacl.CheckPath(path)) {
		return refuse("invalid ACL path '%s'", ch.Path)
	}
	for _, role := range ch.Roles {
		key := pveacl.ACLKey{Path: path, Kind: ch.Kind, Subject: ch.Subject, Role: role}
		if ch.Op == OpDeleteACL {
			delete(c.ACL, key)
			continue
		}
		if _, ok := c.Roles[role]; !ok && !pveacl.IsBuiltinRole(role) {
			return refuse("role '%s' does not exist", role)
		}
		if err := subjectExists(c, ch.Kind, ch.Subject); err != "" {
			return refuse("%s", err)
		}
		c.ACL[key] = ch.Propagate
	}
	return nil
}

func subjectExists(c *pveacl.Config, kind pveacl.SubjectKind, id string) string {
	switch kind {
	case pveacl.KindUser:
		if _, ok := c.Users[id]; !ok {
			return fmt.Sprintf("user '%s' does not exist", id)
		}
	case pveacl.KindGroup:
		if _, ok := c.Groups[id]; !ok {
			return fmt.Sprintf("group '%s' does not exist", id)
		}
	case pveacl.KindToken:
		uid, name, err := pveacl.ParseTokenID(id)
		if err != nil {
			return err.Error()
		}
		if _, ok := c.Users[uid].Tokens[name]; !ok {
			return fmt.Sprintf("no such token '%s' for user '%s'", name, uid)
		}
	default:
		return "either 'users', 'groups' or 'tokens' is required."
	}
	return ""
}

func removeSorted[T interface{ ~int | ~string }](s []T, v T) []T {
	out := s[:0:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
